// Internal pieces of the Hugging Face -> GGUF converter (llama_convert*.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "wick/gguf.h"
#include "wick/models/convert.h"

namespace wick::models {

// The op name that `wick convert`'s errors start with.
inline constexpr const char* kConvertOp = "convert";

// tokenizer.* metadata from dir's tokenizer.json / tokenizer_config.json / config.json,
// laid out as convert_hf_to_gguf.py's _set_vocab_gpt2 and gguf-py's SpecialVocab write it,
// padded to vocab_size tokens. Io when tokenizer.json is missing; Unsupported for a
// tokenizer that is not byte-level BPE.
void add_vocab_metadata(gguf::Writer& w, const std::filesystem::path& dir, int64_t vocab_size);
// (The same from the files' texts: wick/models/convert.h.)

}  // namespace wick::models
