// Internal pieces of the Hugging Face -> GGUF converter (llama_convert*.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "wick/gguf.h"

namespace wick::models {

// tokenizer.* metadata from dir's tokenizer.json / tokenizer_config.json / config.json,
// laid out as convert_hf_to_gguf.py's _set_vocab_gpt2 and gguf-py's SpecialVocab write it,
// padded to vocab_size tokens. Io when tokenizer.json is missing; Unsupported for a
// tokenizer that is not byte-level BPE.
void add_vocab_metadata(gguf::Writer& w, const std::filesystem::path& dir, int64_t vocab_size);

// The same from the files' texts ("" for an absent optional file). The caller bounds
// vocab_size (the converter: by the embedding's rows, which the weights file holds).
struct VocabFiles {
  std::string tokenizer_json, tokenizer_config_json, config_json, chat_template_jinja;
};
void add_vocab_metadata(gguf::Writer& w, const VocabFiles& files, int64_t vocab_size);

}  // namespace wick::models
