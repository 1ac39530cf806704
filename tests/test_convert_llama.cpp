// models::convert_to_gguf on the Llama-family fixtures (tests/data/llama/<arch>: the HF
// folders, their transformers logits, and model.gguf: convert_hf_to_gguf.py's output of the
// same folder, tokenizer.json included). The converted file must load with wick and give the
// folder's logits, carry the same metadata keys and tensors as llama.cpp's converter wrote,
// open in PyPI gguf's reader and, when a llama.cpp build is given, in llama.cpp.
//
// Known differences from the committed model.gguf files (checked below, not ignored):
// - tokenizer.ggml.merges: wick writes tokenizer.json's one merge; the fixtures' GGUFs were
//   written before gen_llama.py's tokenizer had it, so they have no merges key and keep
//   byte 0xff ("ÿ") at id 255, where the committed tokenizer.json has the merge's "Ġt".
// - general.name: the folder's name; llama.cpp's converter used its temporary folder's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "models/llama_convert.h"
#include "support/llama_oracle.h"
#include "wick/error.h"
#include "wick/gguf.h"
#include "wick/models/convert.h"
#include "wick/models/llama.h"
#include "wick/ops.h"
#include "wick/quant.h"
#include "wick/text/tokenizer.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
using models::convert_to_gguf;
using models::ConvertOptions;
using models::LlamaModel;
using test::llama_dense_fixtures;
using test::llama_dir;
using test::llama_ids;
using test::llama_oracle;
using test::llama_rel_error;
using test::TempDir;

// llama.cpp's llama graph has no sliding window: a Mistral GGUF (written as "llama")
// matches transformers only while no query sees more keys than the window (8).
int64_t rows_for(const std::string& name, int64_t rows) {
  return name == "mistral" ? std::min<int64_t>(rows, 8) : rows;
}

fs::path convert(const std::string& name, const TempDir& tmp, GgmlType type = GgmlType::F32) {
  const fs::path out = tmp.path / (name + "-" + std::string(ggml_type_name(type)) + ".gguf");
  ConvertOptions opt;
  opt.outtype = type;
  const models::ConvertResult r = convert_to_gguf(llama_dir(name), out, opt);
  // What the result says was written is what the file holds (rope factor tensors too).
  const gguf::File written = gguf::File::open(out);
  EXPECT_EQ(r.tensors, written.tensors().size()) << name;
  size_t by_type = 0;
  for (const auto& [t, n] : r.tensors_by_type) by_type += n;
  EXPECT_EQ(by_type, r.tensors) << name;
  return out;
}

double max_rel(const LlamaModel& m, const std::string& name) {
  const auto& o = llama_oracle(name);
  double worst = 0;
  for (size_t p = 0; p < o.prompts.size(); ++p) {
    const int64_t T = int64_t(o.prompts[p].size());
    worst = std::max(worst, llama_rel_error(m.forward(llama_ids(o.prompts[p])), o.logits[p], 0, rows_for(name, T)));
  }
  return worst;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConvertLlama, F32GgufGivesTheFolderLogits) {
  TempDir tmp("convert_f32");
  for (const auto& name : llama_dense_fixtures()) {
    const LlamaModel m = LlamaModel::load(convert(name, tmp));
    EXPECT_LE(max_rel(m, name), 1e-5) << name;
  }
}

TEST(ConvertLlama, MixtureOfExpertsFoldersAreAClearError) {
  // Not written yet (the loader reads the folder itself): Unsupported naming the arch, no file.
  TempDir tmp("convert_moe");
  for (const char* name : {"mixtral", "qwen2moe", "qwen3moe", "olmoe"}) {
    const fs::path out = tmp.path / (std::string(name) + ".gguf");
    try {
      convert_to_gguf(llama_dir(name), out, {});
      ADD_FAILURE() << name << " converted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << name;
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(out)) << name;
  }
}

TEST(ConvertLlama, QuantizedGgufStaysCloseToTheFolderLogits) {
  // q8_0 everywhere; q4_K needs rows of 256, so these 64-wide matrices fall back to q8_0
  // and give the same tensors. Measured: 3.4e-2 (llama3) to 6.3e-2 (gemma2) over both
  // prompts; 8e-2 as test_llama allows for q8_0 with rounded activations.
  TempDir tmp("convert_q");
  for (const auto& name : llama_dense_fixtures()) {
    const fs::path q8 = convert(name, tmp, GgmlType::Q8_0);
    const LlamaModel m = LlamaModel::load(q8);
    EXPECT_LE(max_rel(m, name), 8e-2) << name;
    const gguf::File f = gguf::File::open(q8);
    EXPECT_EQ(f.tensor("blk.0.ffn_down.weight").type, GgmlType::Q8_0) << name;
    EXPECT_EQ(f.tensor("output_norm.weight").type, GgmlType::F32) << name;
    EXPECT_EQ(f.get("general.file_type").get<uint32_t>(), 7u) << name;
  }
  // The q8_0 blocks are llama.cpp's own: its converter's q8_0 file of llama3, byte for byte.
  const gguf::File got = gguf::File::open(tmp.path / "llama3-q8_0.gguf");
  const gguf::File ref = gguf::File::open(llama_dir("llama3") / "model-q8_0.gguf");
  for (const QuantTensor& r : ref.tensors()) {
    const QuantTensor& g = got.tensor(r.name);
    ASSERT_EQ(g.type, r.type) << r.name;
    ASSERT_EQ(g.bytes.nbytes(), r.bytes.nbytes()) << r.name;
    EXPECT_EQ(std::memcmp(g.bytes.data(), r.bytes.data(), r.bytes.nbytes()), 0) << r.name;
  }
  const fs::path q4k = convert("llama3", tmp, GgmlType::Q4_K);
  EXPECT_EQ(gguf::File::open(q4k).tensor("blk.0.ffn_up.weight").type, GgmlType::Q8_0);
}

// Metadata and tensors against convert_hf_to_gguf.py's output of the same folder.
TEST(ConvertLlama, MatchesConvertHfToGguf) {
  TempDir tmp("convert_ref");
  for (const auto& name : llama_dense_fixtures()) {
    // llama2 is stored in bf16, and its reference was written as bf16.
    const GgmlType type = name == "llama2" ? GgmlType::BF16 : GgmlType::F32;
    const gguf::File got = gguf::File::open(convert(name, tmp, type));
    const gguf::File ref = gguf::File::open(llama_dir(name) / "model.gguf");
    std::set<std::string> got_keys, ref_keys;
    for (const auto& [k, v] : got.metadata()) got_keys.insert(k);
    for (const auto& [k, v] : ref.metadata()) ref_keys.insert(k);
    ref_keys.insert("tokenizer.ggml.merges");  // see the top of the file
    EXPECT_EQ(got_keys, ref_keys) << name;
    for (const auto& [k, v] : ref.metadata()) {
      if (k == "general.name" || k == "tokenizer.ggml.tokens" || !got.has(k)) continue;
      EXPECT_EQ(got.get(k).to_string(), v.to_string()) << name << " " << k;
    }
    const auto& gt = got.get("tokenizer.ggml.tokens").get<gguf::Array>();
    const auto& rt = ref.get("tokenizer.ggml.tokens").get<gguf::Array>();
    ASSERT_EQ(gt.size(), rt.size()) << name;
    for (size_t i = 0; i < gt.size(); ++i)
      if (i != 255) EXPECT_EQ(gt.string_at(i), rt.string_at(i)) << name << " token " << i;
    EXPECT_EQ(got.get("general.name").get<std::string>(), name);
    // The same tensors, bit for bit (q/k permuted, Gemma's 1 + w, rope factor tensors).
    ASSERT_EQ(got.tensors().size(), ref.tensors().size()) << name;
    for (const QuantTensor& r : ref.tensors()) {
      ASSERT_TRUE(got.contains(r.name)) << name << " " << r.name;
      const QuantTensor& g = got.tensor(r.name);
      EXPECT_EQ(g.type, r.type) << name << " " << r.name;
      EXPECT_EQ(g.shape, r.shape) << name << " " << r.name;
      const Tensor a = dequantize(g), b = dequantize(r);
      EXPECT_EQ(max(abs(a - b)).item<float>(), 0.0f) << name << " " << r.name;
    }
  }
}

TEST(ConvertLlama, VocabularyLoadsAsATokenizer) {
  TempDir tmp("convert_vocab");
  const gguf::File f = gguf::File::open(convert("qwen2", tmp));
  EXPECT_EQ(f.get("tokenizer.ggml.model").get<std::string>(), "gpt2");
  EXPECT_EQ(f.get("tokenizer.ggml.pre").get<std::string>(), "gpt-2");
  const auto merges = f.get("tokenizer.ggml.merges").get<gguf::Array>().to_vector<std::string>();
  EXPECT_EQ(merges, std::vector<std::string>{"\xc4\xa0 t"});
  // The merge applies: " t" is one token (id 255), "t " two bytes (ids are byte values).
  const text::Tokenizer tok = text::Tokenizer::from_gguf(f);
  EXPECT_EQ(tok.encode(" t", {.add_special = false}), std::vector<int32_t>{255});
  EXPECT_EQ(tok.encode("t ", {.add_special = false}), (std::vector<int32_t>{116, 32}));
  EXPECT_EQ(tok.bos_id(), 1);
}

// Real tokenizer layouts (tests/data/tokenizers: Llama 3's and Qwen2's split regexes, added
// special tokens, a TemplateProcessing BOS) against the GGUF vocabularies gen_tokenizers.py
// wrote of the same tokenizer.json in _set_vocab_gpt2's layout, and the tokenizer wick
// reads back from the result encodes the corpus as the tokenizer.json does (Qwen2's NFC
// normalizer has no GGUF key and llama.cpp does not apply it: there, as the reference GGUF).
TEST(ConvertLlama, VocabularyOfRealTokenizerLayouts) {
  TempDir tmp("convert_tok");
  const auto corpus = nlohmann::json::parse(std::ifstream(test::data_path("tokenizers/corpus.json")));
  for (const auto& [name, pre] : {std::pair{"llama3", "llama-bpe"}, std::pair{"qwen2", "qwen2"}}) {
    const fs::path dir = test::data_path(std::string("tokenizers/") + name);
    const gguf::File ref = gguf::File::open(test::data_path(std::string("tokenizers/gguf/") + name + ".gguf"));
    const int64_t n = int64_t(ref.get("tokenizer.ggml.tokens").get<gguf::Array>().size());
    gguf::Writer w;
    models::add_vocab_metadata(w, dir, n);
    w.write(tmp.path / "vocab.gguf");
    const gguf::File got = gguf::File::open(tmp.path / "vocab.gguf");
    EXPECT_EQ(got.get("tokenizer.ggml.pre").get<std::string>(), pre);
    for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                            "tokenizer.ggml.merges", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token"})
      EXPECT_EQ(got.get(key).to_string(), ref.get(key).to_string()) << name << " " << key;
    EXPECT_EQ(got.has("tokenizer.ggml.bos_token_id"), ref.has("tokenizer.ggml.bos_token_id")) << name;
    const text::Tokenizer a = text::Tokenizer::from_gguf(got);
    const text::Tokenizer b =
        std::string(name) == "qwen2" ? text::Tokenizer::from_gguf(ref) : text::Tokenizer::from_folder(dir);
    for (const auto& text : corpus) {
      const std::string t = text.get<std::string>();
      EXPECT_EQ(a.encode(t), b.encode(t)) << name << " " << t;
    }
  }
}

// A SentencePiece-style tokenizer.json (BPE with byte fallback, Prepend + Replace
// normalizer: tests/data/tokenizers/llama2) as GGUF `llama`: scores from the merge ranks,
// byte tokens typed, and the GGUF tokenizer encodes the corpus as the tokenizer.json does.
TEST(ConvertLlama, ByteFallbackBpeBecomesALlamaVocabulary) {
  TempDir tmp("convert_spm");
  const fs::path dir = test::data_path("tokenizers/llama2");
  // 900 model tokens and the added ones after them.
  const auto json = nlohmann::json::parse(std::ifstream(dir / "tokenizer.json"));
  int64_t n = int64_t(json["model"]["vocab"].size());
  for (const auto& a : json["added_tokens"]) n = std::max(n, a["id"].get<int64_t>() + 1);
  gguf::Writer w;
  models::add_vocab_metadata(w, dir, n);
  w.write(tmp.path / "vocab.gguf");
  const gguf::File f = gguf::File::open(tmp.path / "vocab.gguf");
  EXPECT_EQ(f.get("tokenizer.ggml.model").get<std::string>(), "llama");
  EXPECT_EQ(f.get("tokenizer.ggml.pre").get<std::string>(), "default");
  EXPECT_TRUE(f.get("tokenizer.ggml.add_space_prefix").get<bool>());
  EXPECT_FALSE(f.has("tokenizer.ggml.merges"));
  const auto types = f.get("tokenizer.ggml.token_type").get<gguf::Array>().to_vector<int32_t>();
  EXPECT_EQ(types[0], 3);  // <unk>, special
  EXPECT_EQ(types[3], 6);  // <0x00>
  EXPECT_EQ(f.get("tokenizer.ggml.bos_token_id").get<uint32_t>(), 1u);
  EXPECT_TRUE(f.get("tokenizer.ggml.add_bos_token").get<bool>());
  const text::Tokenizer a = text::Tokenizer::from_gguf(f), b = text::Tokenizer::from_folder(dir);
  const auto corpus = nlohmann::json::parse(std::ifstream(test::data_path("tokenizers/corpus.json")));
  // Except around "[INST]": an added token with lstrip / rstrip, which GGUF token types
  // cannot express (llama.cpp and wick's GGUF reader strip nothing).
  size_t compared = 0;
  for (const auto& text : corpus) {
    const std::string t = text.get<std::string>();
    if (t.find("[INST]") != std::string::npos) continue;
    EXPECT_EQ(a.encode(t), b.encode(t)) << t;
    ++compared;
  }
  EXPECT_GE(compared + 1, corpus.size());
}

TEST(ConvertLlama, ChatTemplateAndSpecialTokensFromTokenizerConfig) {
  TempDir tmp("convert_chat");
  const fs::path dir = tmp.path / "qwen3";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(llama_dir("qwen3")))
    if (e.path().filename() != "tokenizer_config.json") fs::copy(e.path(), dir / e.path().filename());
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}", "add_bos_token": true,
            "eos_token": "\u0120t"})";
  // A named token must be an added token for SpecialVocab; "Ġt" is a vocabulary token, so
  // eos stays config.json's 2.
  convert_to_gguf(dir, tmp.path / "chat.gguf");
  const gguf::File f = gguf::File::open(tmp.path / "chat.gguf");
  EXPECT_EQ(f.get("tokenizer.chat_template").get<std::string>(), "{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_TRUE(f.get("tokenizer.ggml.add_bos_token").get<bool>());
  EXPECT_EQ(f.get("tokenizer.ggml.eos_token_id").get<uint32_t>(), 2u);
}

TEST(ConvertLlama, PyPiGgufReadsTheFile) {
  if (std::system("/usr/bin/python3 -c 'import gguf' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no gguf package; wick's own reader is checked above";
  TempDir tmp("convert_py");
  for (const auto& name : {"llama3", "qwen2", "gemma2", "phi3"}) {
    const fs::path out = convert(name, tmp, GgmlType::Q8_0);
    const std::string cmd =
        "/usr/bin/python3 -c \"import gguf, sys; r = gguf.GGUFReader(sys.argv[1]); "
        "assert r.fields['general.architecture'].contents() in ('llama', 'qwen2', 'gemma2', "
        "'phi3'); assert len(r.fields['tokenizer.ggml.tokens'].contents()) == 256; "
        "assert any(t.name == 'token_embd.weight' for t in r.tensors)\" " +
        out.string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << name;
  }
}

// One single-turn generation of 4 tokens: llama.cpp must accept every key and tensor.
int llama_cli_status(const char* bin, const fs::path& model) {
  const std::string cmd = (fs::path(bin) / "llama-cli").string() + " -m " + model.string() +
                          " -p hi -n 4 -t 1 --no-warmup -st < /dev/null > /dev/null 2>&1";
  return std::system(cmd.c_str());
}

// phi3: llama.cpp's Phi-3 vocabulary setup looks up chat tokens (<|end|>, ...) that the
// fixture's 256 byte tokens lack, so it refuses its own converter's file of this folder
// too; the converted file must then fail the same way, and load everywhere else.
TEST(ConvertLlama, LlamaCppLoadsTheFile) {
  const char* bin = std::getenv("WICK_LLAMA_CPP_BIN");
  if (!bin || !fs::exists(fs::path(bin) / "llama-cli"))
    GTEST_SKIP() << "set WICK_LLAMA_CPP_BIN to a llama.cpp build/bin with llama-cli to run this";
  TempDir tmp("convert_lcpp");
  for (const auto& name : llama_dense_fixtures()) {
    for (const GgmlType type : {GgmlType::F32, GgmlType::Q8_0}) {
      const fs::path out = convert(name, tmp, type);
      EXPECT_EQ(llama_cli_status(bin, out), name == "phi3" ? llama_cli_status(bin, llama_dir(name) / "model.gguf") : 0)
          << name << " " << ggml_type_name(type);
    }
  }
}

TEST(ConvertLlama, BadInputGetsOneLineErrors) {
  TempDir tmp("convert_bad");
  const fs::path dir = tmp.path / "model";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer_config.json"})
    fs::copy(llama_dir("qwen2") / f, dir / f);
  // No tokenizer.json.
  EXPECT_NE(error_of([&] { convert_to_gguf(dir, tmp.path / "a.gguf"); }).find("has no tokenizer.json"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp.path / "a.gguf"));
  fs::copy(llama_dir("qwen2") / "tokenizer.json", dir / "tokenizer.json");
  // Unwritable output.
  EXPECT_THROW(convert_to_gguf(dir, tmp.path / "no" / "such" / "dir" / "a.gguf"), Error);
  // A tokenizer that is not BPE; a BPE one neither byte-level nor byte-fallback; a
  // byte-fallback one with a pre-tokenizer.
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "Unigram", "vocab": []}})";
  EXPECT_NE(error_of([&] { convert_to_gguf(dir, tmp.path / "a.gguf"); }).find("model 'Unigram' is not supported"),
            std::string::npos);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})";
  EXPECT_NE(error_of([&] { convert_to_gguf(dir, tmp.path / "a.gguf"); }).find("neither byte-level"), std::string::npos);
  std::ofstream(dir / "tokenizer.json")
      << R"({"model": {"type": "BPE", "byte_fallback": true}, "pre_tokenizer": {"type": "Metaspace"}})";
  EXPECT_NE(error_of([&] {
              convert_to_gguf(dir, tmp.path / "a.gguf");
            }).find("pre-tokenizer 'Metaspace' has no GGUF pre name"),
            std::string::npos);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": [1]}, "pre_tokenizer":
      {"type": "ByteLevel"}})";
  EXPECT_NE(error_of([&] { convert_to_gguf(dir, tmp.path / "a.gguf"); }).find("'vocab' must be an object"),
            std::string::npos);
  // Unknown architecture.
  std::ofstream(dir / "config.json") << R"({"architectures": ["FooForCausalLM"], "vocab_size": 256})";
  const std::string e = error_of([&] { convert_to_gguf(dir, tmp.path / "a.gguf"); });
  EXPECT_NE(e.find("unknown architecture 'FooForCausalLM'"), std::string::npos) << e;
  // GPT-2: loaded from its folder, not converted (yet).
  const std::string g = error_of([&] { convert_to_gguf(test::data_path("gpt2/tiny2l"), tmp.path / "a.gguf"); });
  EXPECT_NE(g.find("GPT-2 folders are not written as GGUF yet"), std::string::npos) << g;
  EXPECT_FALSE(fs::exists(tmp.path / "a.gguf"));
  // Not a folder.
  EXPECT_NE(error_of([&] { convert_to_gguf(tmp.path / "missing", tmp.path / "a.gguf"); }).find("is not a folder"),
            std::string::npos);
}

}  // namespace
}  // namespace wick
