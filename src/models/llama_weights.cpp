// Weight sources of the Llama family: safetensors folders (sharded or not) and GGUF files.
#include "llama_weights.h"

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "io/json_limits.h"
#include "llama_config.h"
#include "wick/error.h"

namespace wick::models {

namespace fs = std::filesystem;

namespace {

// 1 + the largest N in names <prefix>N.<rest>.
template <class Names>
int64_t count_layers(const Names& names, std::string_view prefix) {
  int64_t count = 0;
  for (const std::string_view name : names) {
    if (!name.starts_with(prefix)) continue;
    const char* digits = name.data() + prefix.size();
    const char* end = name.data() + name.size();
    int64_t n = 0;
    const auto [stop, ec] = std::from_chars(digits, end, n);
    if (ec != std::errc() || stop == digits || stop == end || *stop != '.' || n < 0) continue;
    count = std::max(count, n < INT64_MAX ? n + 1 : n);
  }
  return count;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  WICK_CHECK(in.good(), Io, kLlamaOp, ": cannot open '", path.string(), "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

SafetensorsFolder::SafetensorsFolder(const fs::path& dir) {
  const fs::path index = dir / "model.safetensors.index.json";
  if (!fs::exists(index)) {
    const fs::path single = dir / "model.safetensors";
    WICK_CHECK(fs::exists(single), Io, kLlamaOp, ": '", dir.string(),
               "' has neither model.safetensors nor model.safetensors.index.json");
    files_.push_back(safetensors::File::open(single));
    file_names_.push_back("model.safetensors");
    for (const auto& t : files_[0].tensors()) where_[t.name] = 0;
    return;
  }
  const nlohmann::json j = json::parse(read_text(index), "llama: invalid JSON in model.safetensors.index.json");
  WICK_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), Format, kLlamaOp,
             ": model.safetensors.index.json has no object 'weight_map'");
  std::map<std::string, size_t> shard_index;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    WICK_CHECK(shard.is_string(), Format, kLlamaOp, ": model.safetensors.index.json maps '", name,
               "' to a non-string: ", json::brief(shard));
    const std::string file = shard.get<std::string>();
    // A shard is a file beside the index: no folders, so a hostile index cannot reach out.
    WICK_CHECK(!file.empty() && file.find('/') == std::string::npos && file.find('\\') == std::string::npos &&
                   file != "." && file != "..",
               Format, kLlamaOp, ": model.safetensors.index.json names shard '", file, "' (a file name in the folder)");
    auto it = shard_index.find(file);
    if (it == shard_index.end()) {
      WICK_CHECK(fs::exists(dir / file), Io, kLlamaOp, ": shard '", file,
                 "' named by model.safetensors.index.json is missing from '", dir.string(), "'");
      it = shard_index.emplace(file, files_.size()).first;
      files_.push_back(safetensors::File::open(dir / file));
      file_names_.push_back(file);
    }
    WICK_CHECK(files_[it->second].contains(name), Format, kLlamaOp, ": model.safetensors.index.json puts tensor '",
               name, "' in shard '", file, "', which does not hold it");
    where_[name] = it->second;
  }
  // Every tensor of every shard once: the index names it, and no other shard holds it too.
  for (size_t i = 0; i < files_.size(); ++i)
    for (const auto& t : files_[i].tensors()) {
      const auto it = where_.find(t.name);
      WICK_CHECK(it != where_.end(), Format, kLlamaOp, ": shard '", file_names_[i], "' holds tensor '", t.name,
                 "', which model.safetensors.index.json does not list");
      WICK_CHECK(it->second == i, Format, kLlamaOp, ": tensor '", t.name, "' is in both shard '",
                 file_names_[it->second], "' and shard '", file_names_[i], "'");
    }
}

StoredTensor SafetensorsFolder::get(const std::string& name) const {
  const auto it = where_.find(name);
  WICK_CHECK(it != where_.end(), Format, kLlamaOp, ": the checkpoint has no tensor '", name, "'");
  const safetensors::File& f = files_[it->second];
  const auto& info = f.info(name);
  WICK_CHECK(info.wick_dtype && is_float(*info.wick_dtype) && *info.wick_dtype != DType::F64, DTypeMismatch, kLlamaOp,
             ": tensor '", name, "' has dtype ", info.dtype, ", expected F32, F16 or BF16");
  return {f.tensor(name), {}};
}

Tensor SafetensorsFolder::raw(const std::string& name, DType want) const {
  const auto it = where_.find(name);
  WICK_CHECK(it != where_.end(), Format, kLlamaOp, ": the checkpoint has no tensor '", name, "'");
  const safetensors::File& f = files_[it->second];
  const auto& info = f.info(name);
  WICK_CHECK(info.wick_dtype && *info.wick_dtype == want, DTypeMismatch, kLlamaOp, ": tensor '", name, "' has dtype ",
             info.dtype, ", expected ", want);
  return f.tensor(name);
}

std::vector<std::string> SafetensorsFolder::names() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : where_) out.push_back(name);
  return out;
}

int64_t SafetensorsFolder::layer_count() const {
  std::vector<std::string_view> names;
  for (const auto& [name, file] : where_) names.push_back(name);
  return count_layers(names, "model.layers.");
}

StoredTensor GgufSource::get(const std::string& name) const {
  WICK_CHECK(file_->contains(name), Format, kLlamaOp, ": the GGUF file has no tensor '", name, "'");
  const QuantTensor& t = file_->tensor(name);
  switch (t.type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: {
      const DType dt = t.type == GgmlType::F32 ? DType::F32 : t.type == GgmlType::F16 ? DType::F16 : DType::BF16;
      // A zero-copy view when the mapping is aligned for the dtype (GGUF aligns tensor data).
      const Buffer b = t.bytes.view(dt, t.shape);
      if (reinterpret_cast<uintptr_t>(b.data()) % dtype_size(dt) == 0) return {Tensor::from_buffer(b), {}};
      return {gguf::plain_tensor(t), {}};
    }
    default:
      WICK_CHECK(gguf::dequantizable(t.type), DTypeMismatch, kLlamaOp, ": tensor '", name, "' has type ",
                 ggml_type_name(t.type), ", which is not a float or block-quantized type");
      return {{}, t};
  }
}

int64_t GgufSource::layer_count() const {
  std::vector<std::string_view> names;
  for (const QuantTensor& t : file_->tensors()) names.push_back(t.name);
  return count_layers(names, "blk.");
}

Gpt2Folder::Gpt2Folder(const fs::path& dir) : folder_(dir) {
  if (folder_.contains("transformer.wte.weight")) prefix_ = "transformer.";
}

std::optional<Gpt2Folder::HfName> Gpt2Folder::hf_name(const std::string& name) const {
  struct Row {
    std::string_view gguf, hf;
    bool conv1d;
  };
  static constexpr Row kGlobals[] = {
      {"token_embd", "wte", false}, {"position_embd", "wpe", false}, {"output_norm", "ln_f", false}};
  static constexpr Row kLayer[] = {{"attn_norm", "ln_1", false},         {"attn_qkv", "attn.c_attn", true},
                                   {"attn_output", "attn.c_proj", true}, {"ffn_norm", "ln_2", false},
                                   {"ffn_up", "mlp.c_fc", true},         {"ffn_down", "mlp.c_proj", true}};
  if (name == "output.weight") return HfName{"lm_head.weight", false};  // never under "transformer."
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string_view stem = std::string_view(name).substr(0, dot), suffix = std::string_view(name).substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  for (const Row& r : kGlobals)
    if (stem == r.gguf) return HfName{prefix_ + std::string(r.hf) + std::string(suffix), false};
  if (!stem.starts_with("blk.")) return std::nullopt;
  const size_t at = stem.find('.', 4);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view layer = stem.substr(4, at - 4), part = stem.substr(at + 1);
  for (const Row& r : kLayer)
    if (part == r.gguf)
      return HfName{prefix_ + "h." + std::string(layer) + "." + std::string(r.hf) + std::string(suffix),
                    r.conv1d && suffix == ".weight"};
  return std::nullopt;
}

std::string Gpt2Folder::stored_name(const std::string& name) const {
  const auto hf = hf_name(name);
  return hf ? hf->name : name;
}

bool Gpt2Folder::contains(const std::string& name) const {
  const auto hf = hf_name(name);
  return hf && folder_.contains(hf->name);
}

StoredTensor Gpt2Folder::get(const std::string& name) const {
  const auto hf = hf_name(name);
  WICK_CHECK(hf && folder_.contains(hf->name), Format, kLlamaOp, ": the GPT-2 checkpoint has no tensor '",
             hf ? hf->name : name, "'");
  StoredTensor t = folder_.get(hf->name);
  if (hf->conv1d) {
    WICK_CHECK(t.dense.rank() == 2, ShapeMismatch, kLlamaOp, ": tensor '", hf->name, "' must be 2-D, got ",
               t.dense.shape());
    t.dense = t.dense.transpose(0, 1);  // (in, out) -> (out, in), a view
  }
  return t;
}

int64_t Gpt2Folder::layer_count() const {
  std::vector<std::string_view> names;
  const std::vector<std::string> all = folder_.names();
  for (const std::string& n : all) names.push_back(n);
  return count_layers(names, prefix_ + "h.");
}

std::optional<GptOssFolder::HfName> GptOssFolder::hf_name(const std::string& name) const {
  struct Row {
    std::string_view gguf, hf;
    Take take;
  };
  static constexpr Row kGlobals[] = {{"token_embd.weight", "model.embed_tokens.weight", Take::Plain},
                                     {"output_norm.weight", "model.norm.weight", Take::Plain},
                                     {"output.weight", "lm_head.weight", Take::Plain}};
  static constexpr Row kLayer[] = {{"attn_norm", "input_layernorm", Take::Plain},
                                   {"post_attention_norm", "post_attention_layernorm", Take::Plain},
                                   {"attn_q", "self_attn.q_proj", Take::Plain},
                                   {"attn_k", "self_attn.k_proj", Take::Plain},
                                   {"attn_v", "self_attn.v_proj", Take::Plain},
                                   {"attn_output", "self_attn.o_proj", Take::Plain},
                                   {"attn_sinks", "self_attn.sinks", Take::Plain},
                                   {"ffn_gate_inp", "mlp.router", Take::Plain},
                                   {"ffn_gate_exps", "mlp.experts.gate_up_proj", Take::Gate},
                                   {"ffn_up_exps", "mlp.experts.gate_up_proj", Take::Up},
                                   {"ffn_down_exps", "mlp.experts.down_proj", Take::Down}};
  for (const Row& r : kGlobals)
    if (name == r.gguf) return HfName{std::string(r.hf)};
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || !name.starts_with("blk.")) return std::nullopt;
  const std::string_view stem = std::string_view(name).substr(0, dot), suffix = std::string_view(name).substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  const size_t at = stem.find('.', 4);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string layer = "model.layers." + std::string(stem.substr(4, at - 4)) + ".";
  const std::string_view part = stem.substr(at + 1);
  const bool bias = suffix == ".bias";
  for (const Row& r : kLayer) {
    if (part != r.gguf) continue;
    if (r.take != Take::Plain) return HfName{layer + std::string(r.hf), r.take, bias};
    if (part == "attn_sinks") return bias ? std::nullopt : std::optional(HfName{layer + std::string(r.hf)});
    return HfName{layer + std::string(r.hf) + std::string(suffix)};
  }
  return std::nullopt;
}

std::string GptOssFolder::stored_name(const std::string& name) const {
  const auto hf = hf_name(name);
  if (!hf) return name;
  if (hf->take == Take::Plain) return hf->name;
  return hf->name + (hf->bias ? "_bias" : folder_.contains(hf->name) ? "" : "_blocks");
}

bool GptOssFolder::contains(const std::string& name) const {
  const auto hf = hf_name(name);
  if (!hf) return false;
  if (hf->take == Take::Plain) return folder_.contains(hf->name);
  if (hf->bias) return folder_.contains(hf->name + "_bias");
  return folder_.contains(hf->name) ||
         (folder_.contains(hf->name + "_blocks") && folder_.contains(hf->name + "_scales"));
}

StoredTensor GptOssFolder::get(const std::string& name) const {
  const auto hf = hf_name(name);
  WICK_CHECK(hf && contains(name), Format, kLlamaOp, ": the gpt-oss checkpoint has no tensor '",
             hf ? stored_name(name) : name, "'");
  if (hf->take == Take::Plain) return folder_.get(hf->name);
  return experts(*hf);
}

namespace {

// Rows [0, 2, 4, ...] (even) or [1, 3, ...] of dim `dim` of t, a view.
Tensor interleaved_half(const Tensor& t, int64_t dim, bool odd, const std::string& name) {
  WICK_CHECK(t.dim(dim) % 2 == 0, ShapeMismatch, kLlamaOp, ": tensor '", name, "' has ", t.dim(dim),
             " interleaved gate/up entries along dim ", dim, " (an even count expected)");
  std::vector<int64_t> shape = t.shape().dims();
  shape[size_t(dim)] /= 2;
  shape.insert(shape.begin() + dim + 1, 2);
  return t.reshape(shape).select(dim + 1, odd ? 1 : 0);
}

// HF MXFP4 blocks (E, R, G, 16) and scales (E, R, G), rows first, first + step, ... of each
// expert, as ggml MXFP4 blocks of an (E, R', G * 32) matrix.
QuantTensor repack_mxfp4(const Tensor& blocks, const Tensor& scales, int64_t first, int64_t step,
                         const std::string& name) {
  const bool paired = blocks.rank() == 4 && scales.rank() == 3 && blocks.dim(3) == 16 &&
                      scales.dim(0) == blocks.dim(0) && scales.dim(1) == blocks.dim(1) &&
                      scales.dim(2) == blocks.dim(2);
  WICK_CHECK(paired, ShapeMismatch, kLlamaOp, ": the MXFP4 tensors of '", name, "' have shapes ", blocks.shape(),
             " and ", scales.shape(), " (expected (E, rows, K/32, 16) and (E, rows, K/32))");
  const int64_t E = blocks.dim(0), R = blocks.dim(1), G = blocks.dim(2), rows = (R - first + step - 1) / step;
  const Tensor b = blocks.contiguous(), s = scales.contiguous();
  const auto* bp = static_cast<const uint8_t*>(b.data());
  const auto* sp = static_cast<const uint8_t*>(s.data());
  Buffer out = Buffer::allocate(Device::cpu(), DType::U8, Shape{E * rows * G * 17});
  auto* op = static_cast<uint8_t*>(out.mutable_data());
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t src = (e * R + first + r * step) * G + g;
        const uint8_t* in = bp + src * 16;
        uint8_t* blk = op + ((e * rows + r) * G + g) * 17;
        uint8_t code[32];
        for (int i = 0; i < 16; ++i) code[2 * i] = in[i] & 15, code[2 * i + 1] = in[i] >> 4;
        blk[0] = sp[src];
        for (int j = 0; j < 16; ++j) blk[1 + j] = uint8_t(code[j] | (code[j + 16] << 4));
      }
  return QuantTensor{name, GgmlType::MXFP4, Shape{E, rows, G * 32}, out};
}

}  // namespace

StoredTensor GptOssFolder::experts(const HfName& hf) const {
  const bool down = hf.take == Take::Down, odd = hf.take == Take::Up;
  if (hf.bias) {  // (E, 2F) interleaved, or down's (E, hidden)
    const Tensor b = folder_.get(hf.name + "_bias").dense;
    return {down ? b : interleaved_half(b, 1, odd, hf.name + "_bias").contiguous(), {}};
  }
  if (folder_.contains(hf.name)) {  // (E, in, out): gate_up's out interleaved
    const Tensor w = folder_.get(hf.name).dense;
    WICK_CHECK(w.rank() == 3, ShapeMismatch, kLlamaOp, ": tensor '", hf.name, "' must be 3-D, got ", w.shape());
    const Tensor part = down ? w : interleaved_half(w, 2, odd, hf.name);
    return {part.transpose(1, 2).contiguous(), {}};
  }
  const Tensor blocks = folder_.raw(hf.name + "_blocks", DType::U8),
               scales = folder_.raw(hf.name + "_scales", DType::U8);
  return {{}, repack_mxfp4(blocks, scales, down ? 0 : (odd ? 1 : 0), down ? 1 : 2, hf.name)};
}

std::optional<GgmlType> quant_type_for(std::optional<GgmlType> want, int64_t k) {
  if (!want) return std::nullopt;
  if (k % ggml_type_info(*want).block_elems == 0) return want;
  if (k % 32 == 0) return GgmlType::Q8_0;
  return std::nullopt;
}

void check_fits(size_t needed, size_t free, Device device) {
  WICK_CHECK(free == 0 || needed <= free, OutOfMemory, kLlamaOp, ": the weights need ", needed, " bytes on ", device,
             ", which has ", free, " free");
}

}  // namespace wick::models
