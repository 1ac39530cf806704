// Where the Llama family's weights come from: a Hugging Face folder (one safetensors file,
// or shards listed by model.safetensors.index.json) or a GGUF file. Both hand out tensors
// as stored, as CPU views of the memory-mapped files: float tensors zero-copy, packed
// ggml blocks as QuantTensors. The loader (llama_load.cpp) converts and uploads them.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/gguf.h"
#include "wick/io.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::models {

struct StoredTensor {
  Tensor dense;        // a float tensor (f32, f16, bf16) viewing the file
  QuantTensor packed;  // or packed blocks (when dense is undefined)
  Shape shape() const { return dense.defined() ? dense.shape() : packed.shape; }
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual bool contains(const std::string& name) const = 0;
  // Format "llama: <origin> has no tensor '<name>'" when absent; float dtypes only.
  virtual StoredTensor get(const std::string& name) const = 0;
  // 1 + the largest N of the tensors named <prefix>N.*, 0 when there is none.
  virtual int64_t layer_count() const = 0;
  // Whether tensors go by GGUF's names (llama.cpp's: "blk.0.attn_q.weight"), not HF's.
  virtual bool gguf_names() const = 0;
  // The name as the file spells it, for messages.
  virtual std::string stored_name(const std::string& name) const { return name; }
};

class SafetensorsFolder final : public WeightSource {
 public:
  // dir/model.safetensors.index.json and its shards (each must exist; each tensor must be
  // named once and lie in the shard the index names), else dir/model.safetensors.
  explicit SafetensorsFolder(const std::filesystem::path& dir);
  bool contains(const std::string& name) const override { return where_.count(name) != 0; }
  StoredTensor get(const std::string& name) const override;
  int64_t layer_count() const override;
  bool gguf_names() const override { return false; }
  // Every tensor's name, sorted.
  std::vector<std::string> names() const;
  // A tensor of dtype `want` (packed bytes: U8), Format naming it when absent or of another dtype.
  Tensor raw(const std::string& name, DType want) const;

 private:
  std::vector<safetensors::File> files_;
  std::vector<std::string> file_names_;
  std::map<std::string, size_t> where_;  // tensor -> index into files_
};

class GgufSource final : public WeightSource {
 public:
  explicit GgufSource(std::shared_ptr<const gguf::File> file) : file_(std::move(file)) {}
  bool contains(const std::string& name) const override { return file_->contains(name); }
  StoredTensor get(const std::string& name) const override;
  int64_t layer_count() const override;
  bool gguf_names() const override { return true; }

 private:
  std::shared_ptr<const gguf::File> file_;
};

// A GPT-2 Hugging Face folder (GPT2LMHeadModel's keys, with or without "transformer.") read
// under GGUF's names, llama.cpp's gpt2 layout ("blk.0.attn_qkv.weight" is
// "h.0.attn.c_attn.weight"), so that the loader plans GPT-2 once for both sources. GPT-2's
// Conv1D matrices are stored (in, out): they are handed out transposed, as views.
class Gpt2Folder final : public WeightSource {
 public:
  explicit Gpt2Folder(const std::filesystem::path& dir);
  bool contains(const std::string& name) const override;
  StoredTensor get(const std::string& name) const override;
  int64_t layer_count() const override;
  bool gguf_names() const override { return true; }
  std::string stored_name(const std::string& name) const override;

 private:
  struct HfName {
    std::string name;
    bool conv1d = false;  // a matrix stored (in, out)
  };
  std::optional<HfName> hf_name(const std::string& gguf_name) const;
  SafetensorsFolder folder_;
  std::string prefix_;  // "transformer." when the checkpoint's keys carry it
};

// A gpt-oss Hugging Face folder (GptOssForCausalLM) read under GGUF's names, llama.cpp's
// gpt-oss layout, so that the loader plans gpt-oss once for both sources. Its experts are
// fused: gate_up_proj (E, hidden, 2F), gate and up interleaved along the last dim (gate row f
// at column 2f, up row f at 2f + 1), and down_proj (E, F, hidden), both (in, out): handed out
// as (E, out, in) copies, their biases split the same way. As OpenAI released gpt-oss, the
// experts are MXFP4 instead (<name>_blocks (E, rows, K/32, 16) u8, value 2b of a block in the
// low nibble of byte b and 2b + 1 in the high one; <name>_scales (E, rows, K/32) e8m0): they
// are repacked into ggml's MXFP4 blocks (the same scale byte and codes, ggml's nibble order),
// never expanded.
class GptOssFolder final : public WeightSource {
 public:
  explicit GptOssFolder(const std::filesystem::path& dir) : folder_(dir) {}
  bool contains(const std::string& name) const override;
  StoredTensor get(const std::string& name) const override;
  int64_t layer_count() const override { return folder_.layer_count(); }
  bool gguf_names() const override { return true; }
  std::string stored_name(const std::string& name) const override;

 private:
  enum class Take : uint8_t { Plain, Gate, Up, Down };  // which part of the fused experts
  struct HfName {
    std::string name;  // the HF tensor (for the experts, the stem of their weight / _bias / _blocks)
    Take take = Take::Plain;
    bool bias = false;
  };
  std::optional<HfName> hf_name(const std::string& gguf_name) const;
  StoredTensor experts(const HfName& hf) const;
  SafetensorsFolder folder_;
};

// The type a float matrix with rows of k values is quantized to (at load, and by the
// converter): the requested one when k is a multiple of its block, else q8_0 (32-value
// blocks), else none (stays float).
std::optional<GgmlType> quant_type_for(std::optional<GgmlType> want, int64_t k);

// OutOfMemory "llama: the weights need <needed> bytes on <device>, which has <free> free"
// when needed > free (free 0 = unknown: no check).
void check_fits(size_t needed, size_t free, Device device);

}  // namespace wick::models
