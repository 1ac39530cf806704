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
