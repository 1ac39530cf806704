// Llama-family loading of broken checkpoints: each defect is one wick::Error of the right
// kind with a one-line message naming what is wrong (the key, the tensor, the shard).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "models/llama_weights.h"
#include "support/llama_oracle.h"
#include "wick/gguf.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
using models::LlamaConfig;
using models::LlamaLoadOptions;
using models::LlamaModel;
using test::llama_dir;
using test::TempDir;

// Runs f; expects a wick::Error of kind whose message is exactly `message` (one line).
void expect_error(const std::function<void()>& f, ErrorKind kind, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}
void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(); }

// A copy of fixture `name` whose config.json went through edit.
fs::path with_config(const TempDir& dir, const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  for (const auto& e : fs::directory_iterator(llama_dir(name)))
    if (e.path().extension() != ".gguf") fs::copy(e.path(), dir.path / e.path().filename());
  nlohmann::json j = read_json(dir.path / "config.json");
  edit(j);
  write_json(dir.path / "config.json", j);
  return dir.path;
}

// The llama3 GGUF rewritten: metadata through edit (return false to drop a key), tensors
// through retensor.
fs::path rewritten_gguf(const TempDir& dir, const std::function<bool(const std::string&, gguf::Value&)>& edit,
                        const std::function<void(QuantTensor&)>& retensor = {}) {
  const gguf::File f = gguf::File::open(llama_dir("llama3") / "model.gguf");
  gguf::Writer w;
  for (auto [key, value] : f.metadata())
    if (edit(key, value)) w.set(key, value);
  for (QuantTensor t : f.tensors()) {
    if (retensor) retensor(t);
    w.add_tensor(t);
  }
  const fs::path out = dir.path / "model.gguf";
  w.write(out);
  return out;
}

LlamaModel load(const fs::path& p) { return LlamaModel::load(p); }

const std::string kSupported =
    "(supported: llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3, mixtral, qwen2moe, qwen3moe, olmoe, gpt-oss, "
    "deepseek2, deepseek3, gpt2)";

TEST(LlamaBadInput, HfConfigs) {
  TempDir d("cfg");
  const fs::path cfg = d.path / "config.json";
  const nlohmann::json good = read_json(llama_dir("llama3") / "config.json");
  auto parse = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    write_json(cfg, j);
    return [&] { (void)LlamaConfig::from_hf_json_file(cfg); };
  };
  expect_error(parse([](auto& j) { j["architectures"] = {"MambaForCausalLM"}; }), ErrorKind::Unsupported,
               "llama: unknown architecture 'MambaForCausalLM' in '" + cfg.string() + "' " + kSupported);
  expect_error(parse([](auto& j) { j["num_key_value_heads"] = 3; }), ErrorKind::Format,
               "llama: num_attention_heads 4 is not a multiple of num_key_value_heads 3");
  expect_error(parse([](auto& j) { j.erase("hidden_size"); }), ErrorKind::Format,
               "llama: config.json has no 'hidden_size'");
  expect_error(parse([](auto& j) { j["num_hidden_layers"] = -2; }), ErrorKind::Format,
               "llama: config key 'num_hidden_layers' must be a positive integer, got -2 (at most 2147483647)");
  expect_error(parse([](auto& j) { j["rope_parameters"]["rope_type"] = "proportional"; }), ErrorKind::Unsupported,
               "llama: rope type 'proportional' is not supported (default, linear, dynamic, llama3, yarn, longrope)");
  expect_error(parse([](auto& j) { j["rope_parameters"]["rope_type"] = "longrope"; }), ErrorKind::Format,
               "llama: longrope needs a list 'short_factor'");
  expect_error(parse([](auto& j) {
                 j["rope_parameters"] = {{"rope_type", "longrope"}, {"short_factor", {1, 2}}, {"long_factor", {1, 2}}};
               }),
               ErrorKind::Format, "llama: a rope factor list holds 2 factors, the 16 rotary dims need 8");
  expect_error(parse([](auto& j) { j["hidden_act"] = "relu2"; }), ErrorKind::Unsupported,
               "llama: config key 'hidden_act' names activation 'relu2' (supported: silu, swish, gelu_pytorch_tanh, "
               "gelu_new, gelu_fast, gelu, relu)");
  expect_error(parse([](auto& j) { j["head_dim"] = 15; }), ErrorKind::Format,
               "llama: head_dim 15 must be positive and even (rotary pairs)");
  expect_error(parse([](auto& j) {
                 j["num_attention_heads"] = 1 << 30;
                 j["num_key_value_heads"] = 1 << 30;
                 j["head_dim"] = 1 << 30;
               }),
               ErrorKind::Format,
               "llama: num_attention_heads 1073741824, num_key_value_heads 1073741824 and head_dim 1073741824 give "
               "projections wider than 2147483647");
}

// Fixture `name`'s config.json through edit, written to path and read back.
LlamaConfig edited_config(const fs::path& path, const std::string& name,
                          const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = read_json(llama_dir(name) / "config.json");
  edit(j);
  write_json(path, j);
  return LlamaConfig::from_hf_json_file(path);
}

TEST(LlamaBadInput, MixtureOfExpertsConfigs) {
  // What the MoE keys decide, read back, and their errors.
  TempDir d("moe_cfg");
  const fs::path cfg = d.path / "config.json";
  const auto config = [&](const std::function<void(nlohmann::json&)>& edit) {
    return edited_config(cfg, "qwen3moe", edit);
  };
  const LlamaConfig base = config([](auto&) {});
  EXPECT_EQ(base.n_expert, 8);
  EXPECT_EQ(base.n_expert_used, 3);
  EXPECT_EQ(base.expert_ffn, 32);
  EXPECT_TRUE(base.norm_topk_prob);
  EXPECT_EQ(base.moe_layers, std::vector<bool>({true, true}));
  // Dense layers: every decoder_sparse_step-th layer routes, mlp_only_layers never do.
  EXPECT_EQ(config([](auto& j) { j["decoder_sparse_step"] = 2; }).moe_layers, std::vector<bool>({false, true}));
  EXPECT_EQ(config([](auto& j) { j["mlp_only_layers"] = {1}; }).moe_layers, std::vector<bool>({true, false}));
  EXPECT_FALSE(config([](auto& j) { j["norm_topk_prob"] = false; }).norm_topk_prob);
  auto parse = [&](const std::function<void(nlohmann::json&)>& edit) { return [=] { (void)config(edit); }; };
  expect_error(parse([](auto& j) { j["num_experts_per_tok"] = 9; }), ErrorKind::Format,
               "llama: 9 experts per token, but the model has 8");
  expect_error(parse([](auto& j) { j.erase("num_experts_per_tok"); }), ErrorKind::Format,
               "llama: config.json has no 'num_experts_per_tok'");
  expect_error(parse([](auto& j) { j["mlp_only_layers"] = {2}; }), ErrorKind::Format,
               "llama: config key 'mlp_only_layers' must hold layer numbers below 2, got 2");
  expect_error(parse([](auto& j) { j["mlp_only_layers"] = "1"; }), ErrorKind::Format,
               "llama: config key 'mlp_only_layers' must be a list, got \"1\"");
  {  // a ninth expert the checkpoint does not hold, and experts narrower than the config says
    TempDir w("moe_weights");
    const auto p = with_config(w, "qwen3moe", [](auto& j) { j["num_local_experts"] = 9; });
    expect_error([&] { load(p); }, ErrorKind::ShapeMismatch,
                 "llama: tensor 'model.layers.0.mlp.gate.weight' has shape [8, 64], config implies [9, 64]");
    TempDir w2("moe_weights2");
    const auto p2 = with_config(w2, "qwen3moe", [](auto& j) { j["moe_intermediate_size"] = 16; });
    expect_error([&] { load(p2); }, ErrorKind::ShapeMismatch,
                 "llama: tensor 'model.layers.0.mlp.experts.0.gate_proj.weight' has shape [32, 64], config implies "
                 "[16, 64]");
  }
  // OLMoE's clamped q/k/v is refused, not ignored.
  expect_error([&] { (void)edited_config(cfg, "olmoe", [](auto& j) { j["clip_qkv"] = 8.0; }); }, ErrorKind::Unsupported,
               "llama: config key 'clip_qkv' (clamped q/k/v) is not supported");
}

TEST(LlamaBadInput, Gemma3Configs) {
  // Which layers slide and which base they rotate with: transformers 5's layer_types and
  // per-type rope_parameters, and transformers 4's sliding_window_pattern and
  // rope_local_base_freq.
  TempDir d("gemma3_cfg");
  const auto config = [&](const std::function<void(nlohmann::json&)>& edit) {
    return edited_config(d.path / "config.json", "gemma3", edit);
  };
  const LlamaConfig v5 = config([](auto&) {});
  EXPECT_EQ(v5.sliding_layers, std::vector<bool>({true, true, true, true, true, false}));
  EXPECT_EQ(v5.rope_local_theta, 10000.0);
  EXPECT_EQ(v5.rope.theta, 1e6);
  EXPECT_EQ(v5.rope.scaling, models::RopeScaling::Linear);
  EXPECT_EQ(v5.attention_scale, 0.25);
  const LlamaConfig v4 = config([](auto& j) {
    j.erase("layer_types");
    j["sliding_window_pattern"] = 3;
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 2e6}};
    j["rope_local_base_freq"] = 5000.0;
  });
  EXPECT_EQ(v4.sliding_layers, std::vector<bool>({true, true, false, true, true, false}));
  EXPECT_EQ(v4.rope_local_theta, 5000.0);
  EXPECT_EQ(v4.rope.theta, 2e6);
  expect_error([&] { (void)config([](auto& j) { j["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; }); },
               ErrorKind::Unsupported, "llama: rope type 'yarn' of the sliding layers is not supported (default)");
}

TEST(LlamaBadInput, HfWeights) {
  {  // the config's sizes against the tensors
    TempDir d("shape");
    const auto p = with_config(d, "llama3", [](auto& j) { j["intermediate_size"] = 32; });
    expect_error([&] { load(p); }, ErrorKind::ShapeMismatch,
                 "llama: tensor 'model.layers.0.mlp.gate_proj.weight' has shape [64, 64], config implies [32, 64]");
  }
  {
    TempDir d("layers");
    const auto p = with_config(d, "llama3", [](auto& j) { j["num_hidden_layers"] = 1; });
    expect_error([&] { load(p); }, ErrorKind::Format, "llama: the config has 1 layers but the checkpoint holds 2");
  }
  {  // an integer tensor where a weight belongs
    TempDir d("dtype");
    const auto p = with_config(d, "llama3", [](auto&) {});
    auto tensors = safetensors::load(p / "model.safetensors");
    std::vector<std::pair<std::string, Tensor>> out(tensors.begin(), tensors.end());
    for (auto& [name, t] : out)
      if (name == "model.norm.weight") t = zeros(t.shape(), DType::I64);
    safetensors::save(p / "model.safetensors", out);
    expect_error([&] { load(p); }, ErrorKind::DTypeMismatch,
                 "llama: tensor 'model.norm.weight' has dtype I64, expected F32, F16 or BF16");
  }
  {  // shards: missing, misplaced, outside the folder
    const std::string shard = "model-00002-of-00004.safetensors";
    TempDir d("shards");
    const auto p = with_config(d, "mistral", [](auto&) {});
    fs::remove(p / shard);
    expect_error(
        [&] { load(p); }, ErrorKind::Io,
        "llama: shard '" + shard + "' named by model.safetensors.index.json is missing from '" + p.string() + "'");
    fs::copy(llama_dir("mistral") / shard, p / shard);
    nlohmann::json index = read_json(p / "model.safetensors.index.json");
    auto& map = index["weight_map"];
    const std::string moved = map.begin().key(), home = map.begin().value();
    map[moved] = home == shard ? "model-00001-of-00004.safetensors" : shard;
    write_json(p / "model.safetensors.index.json", index);
    expect_error([&] { load(p); }, ErrorKind::Format,
                 "llama: model.safetensors.index.json puts tensor '" + moved + "' in shard '" +
                     map[moved].get<std::string>() + "', which does not hold it");
    map[moved] = "../model.safetensors";
    write_json(p / "model.safetensors.index.json", index);
    expect_error([&] { load(p); }, ErrorKind::Format,
                 "llama: model.safetensors.index.json names shard '../model.safetensors' (a file name in the "
                 "folder)");
  }
}

TEST(LlamaBadInput, GgufFiles) {
  TempDir d("gguf");
  auto drop = [](const char* k) { return [k](const std::string& key, gguf::Value&) { return key != k; }; };
  auto set = [](const char* k, gguf::Value v) {
    return [k, v](const std::string& key, gguf::Value& value) {
      if (key == k) value = v;
      return true;
    };
  };
  expect_error([&] { load(rewritten_gguf(d, drop("llama.block_count"))); }, ErrorKind::Format,
               "llama: GGUF file has no key 'llama.block_count'");
  expect_error([&] { load(rewritten_gguf(d, set("llama.attention.head_count_kv", gguf::Value(uint32_t(3))))); },
               ErrorKind::Format,
               "llama: llama.attention.head_count 4 is not a multiple of llama.attention.head_count_kv 3");
  expect_error([&] { load(rewritten_gguf(d, set("general.architecture", gguf::Value(std::string("mamba"))))); },
               ErrorKind::Unsupported, "llama: unknown GGUF architecture 'mamba' " + kSupported);
  expect_error([&] { load(rewritten_gguf(d, set("llama.block_count", gguf::Value(std::string("two"))))); },
               ErrorKind::Format, "llama: GGUF key 'llama.block_count' must be one integer, got string \"two\"");
  expect_error([&] { load(rewritten_gguf(d, set("llama.block_count", gguf::Value(uint64_t(1) << 40)))); },
               ErrorKind::Format, "llama: GGUF key 'llama.block_count' is 1099511627776, outside [1, 2147483647]");
  expect_error([&] { load(rewritten_gguf(d, set("llama.context_length", gguf::Value(1.5f)))); }, ErrorKind::Format,
               "llama: GGUF key 'llama.context_length' must be one integer, got f32 1.5");
  // Tensors: an integer type, then a wrong shape (the bytes of another tensor).
  const auto keep = [](const std::string&, gguf::Value&) { return true; };
  expect_error(
      [&] {
        load(rewritten_gguf(d, keep, [](QuantTensor& t) {
          if (t.name == "blk.0.attn_q.weight") t.type = GgmlType::I32;
        }));
      },
      ErrorKind::DTypeMismatch,
      "llama: tensor 'blk.0.attn_q.weight' has type i32, which is not a float or block-quantized type");
  expect_error(
      [&] {
        load(rewritten_gguf(d, keep, [](QuantTensor& t) {
          if (t.name == "blk.1.attn_q.weight") t.shape = Shape{32, 128};
        }));
      },
      ErrorKind::ShapeMismatch, "llama: tensor 'blk.1.attn_q.weight' has shape [32, 128], config implies [64, 64]");
  expect_error(
      [&] {
        load(rewritten_gguf(d, keep, [](QuantTensor& t) {
          if (t.name == "blk.1.ffn_down.weight") t.name = "blk.1.ffn_dawn.weight";
        }));
      },
      ErrorKind::Format, "llama: the GGUF file has no tensor 'blk.1.ffn_down.weight'");
}

TEST(LlamaBadInput, AHugeClaimedContextCostsOnlyWhatIsUsed) {
  // max_position_embeddings 2^31 - 1: the rope tables start at 4096 rows and grow on demand
  // (a full table would be 2^31 x 8 x 2 floats), and the logits are the oracle's. A
  // 4100-position sequence grows them; its first rows still match, and its last row equals
  // the same positions fed through a cache in two calls.
  TempDir d("context");
  const auto p = with_config(d, "llama3", [](auto& j) { j["max_position_embeddings"] = 2147483647; });
  const LlamaModel m = load(p);
  EXPECT_EQ(m.context_length(), 2147483647);
  const auto& o = test::llama_oracle("llama3");
  std::vector<int32_t> ids = o.prompts[0];
  for (int i = 0; ids.size() < 4100; ++i) ids.push_back((i * 7 + 3) % 256);
  const Tensor all = m.forward(test::llama_ids(ids));
  EXPECT_LE(test::llama_rel_error(all, o.logits[0], 0, 24), 1e-4);
  models::KvCache cache(4100);  // the default, the whole context, would be 2^31 positions
  (void)m.forward(test::llama_ids(std::vector<int32_t>(ids.begin(), ids.begin() + 4000)), &cache);
  const Tensor tail = m.forward(test::llama_ids(std::vector<int32_t>(ids.begin() + 4000, ids.end())), &cache, true);
  EXPECT_LE(test::llama_rel_error(tail, all.select(0, 0), 4099, 1), 1e-4);
}

TEST(LlamaBadInput, EosTokensFromGenerationConfig) {
  TempDir d("gencfg");
  const auto p = with_config(d, "llama3", [](auto&) {});
  EXPECT_EQ(load(p).config().eos_token_ids, std::vector<int32_t>({2}));
  write_json(p / "generation_config.json", {{"eos_token_id", {7, 2, 9}}});
  EXPECT_EQ(load(p).config().eos_token_ids, std::vector<int32_t>({2, 7, 9}));
  write_json(p / "generation_config.json", {{"eos_token_id", "x"}});
  expect_error([&] { load(p); }, ErrorKind::Format, "llama: config key 'eos_token_id' must hold token ids, got \"x\"");
}

TEST(LlamaBadInput, OptionsAndInputs) {
  LlamaLoadOptions o;
  o.quantize = GgmlType::Q5_K;
  expect_error([&] { LlamaModel::load(llama_dir("llama3"), o); }, ErrorKind::InvalidArgument,
               "llama: cannot quantize to q5_K (q8_0, q4_0, q4_K, q6_K)");
  o.quantize.reset();
  o.dtype = DType::I64;
  expect_error([&] { LlamaModel::load(llama_dir("llama3"), o); }, ErrorKind::DTypeMismatch,
               "llama: compute dtype must be f32, f16 or bf16, got i64");
  expect_error([&] { load(llama_dir("llama3") / "missing.gguf"); }, ErrorKind::Io,
               "llama: '" + (llama_dir("llama3") / "missing.gguf").string() + "' does not exist");
  expect_error([] { models::check_fits(2000, 1000, Device::parse("cuda:0")); }, ErrorKind::OutOfMemory,
               "llama: the weights need 2000 bytes on cuda:0, which has 1000 free");
  models::check_fits(1000, 1000, Device::parse("cuda:0"));  // fits exactly
  const LlamaModel m = load(llama_dir("llama3"));
  expect_error(
      [&] {
        m.forward(zeros(Shape{1, 129}, DType::I64));
      },
      ErrorKind::InvalidArgument, "llama: 0 cached + 129 new positions exceed the context length 128");
  expect_error([&] { m.forward(zeros(Shape{3}, DType::I64)); }, ErrorKind::ShapeMismatch,
               "llama: ids must have shape (batch, seq), got [3]");
  expect_error([&] { m.begin_batch_decode(models::KvCache(4), 1); }, ErrorKind::InvalidArgument,
               "batched decode: the cache is not a slot of a pool (KvCache::pooled or paged)");
}

}  // namespace
}  // namespace wick
