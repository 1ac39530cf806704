// The model half of `wick inspect`: what a Llama-family model is (architecture,
// hyperparameters, parameters and bytes per tensor type, tokenizer, chat template), for a
// GGUF file of a supported architecture or a Hugging Face folder.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "wick/gguf.h"

namespace wick::cli {

// nullopt when the file's general.architecture is not in the Llama table (a GPT-2 GGUF, a
// tensor file): the plain listing is all there is to say.
std::optional<nlohmann::ordered_json> gguf_model_summary(const gguf::File& f);
// A folder with config.json of a Llama-family architecture (Unsupported naming it otherwise).
nlohmann::ordered_json folder_model_summary(const std::filesystem::path& dir);
// The summary as a few indented lines.
void print_model_summary(const nlohmann::ordered_json& s);

}  // namespace wick::cli
