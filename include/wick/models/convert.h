// A Hugging Face folder of a Llama-family architecture (llama, mistral, qwen2, qwen3,
// gemma2, phi3) written as a GGUF file in llama.cpp's layout, as its convert_hf_to_gguf.py
// writes it: general.* and <arch>.* metadata, llama.cpp's tensor names (q/k rows permuted
// for the llama architecture, Gemma's norms as 1 + w, rope factor tensors), and the
// vocabulary of tokenizer.json (byte-level BPE as tokenizer.ggml.model "gpt2") with
// tokenizer_config.json's special tokens and chat template.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "wick/gguf.h"
#include "wick/quant.h"

namespace wick::models {

struct ConvertOptions {
  // Type of the 2-D weights: f32, f16, bf16, or q8_0, q4_0, q4_K, q6_K (a matrix whose
  // rows are not a multiple of the block falls back to q8_0, else f16). 1-D tensors stay f32.
  GgmlType outtype = GgmlType::F32;
  std::function<void(size_t done, size_t total)> on_tensor;  // progress, after each tensor
};

struct ConvertResult {
  std::string arch;                            // the architecture table's row
  size_t tensors = 0;                          // written
  size_t quantized = 0;                        // of them block-quantized
  size_t parameters = 0;                       // values in the weights
  std::map<GgmlType, size_t> tensors_by_type;  // how many were stored as each type
};

// Unsupported for an unknown architecture or a tokenizer model it cannot write (named);
// Io when config.json, the weights or tokenizer.json are missing or out cannot be written
// (a failed write leaves no partial file).
ConvertResult convert_to_gguf(const std::filesystem::path& dir, const std::filesystem::path& out,
                              const ConvertOptions& options = {});

// The tokenizer.* metadata convert_to_gguf writes, from the texts of a folder's files (""
// for an absent optional one), for a vocabulary of vocab_size tokens (ids past the
// tokenizer's are padded as [PADn]; the caller bounds it: convert_to_gguf by the
// embedding's rows). Format for malformed JSON or ids outside vocab_size, Unsupported for
// a tokenizer GGUF cannot describe.
struct VocabFiles {
  std::string tokenizer_json, tokenizer_config_json, config_json, chat_template_jinja;
};
void add_vocab_metadata(gguf::Writer& w, const VocabFiles& files, int64_t vocab_size);

}  // namespace wick::models
