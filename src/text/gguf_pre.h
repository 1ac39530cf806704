// The tokenizer.ggml.pre name llama.cpp gives a byte-level BPE tokenizer's split regexes
// (the rows of gguf_vocab.cpp, read in reverse by the GGUF converter).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wick::text::hf {

// regexes: the Split patterns in order (GPT-2's own for a ByteLevel with use_regex);
// ignore_merges: the BPE model's flag (Llama 3 sets it), which tells rows of equal regexes
// apart. nullopt when no row splits that way.
std::optional<std::string> gguf_pre_name(const std::vector<std::string>& regexes, bool ignore_merges);

// GPT-2's split regex (what ByteLevel with use_regex applies).
std::string gpt2_split_regex();

}  // namespace wick::text::hf
