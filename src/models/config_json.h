// Reading the sizes of a model's config.json (GPT-2, BERT): one rule for every integer key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "io/json_limits.h"
#include "wick/error.h"

namespace wick::models {

// No real model has a size (vocabulary, width, layers, positions) near 2^31; the cap keeps
// the products the loaders form from them (4 * n_embd, shapes) far from overflowing.
inline constexpr int64_t kMaxConfigSize = std::numeric_limits<int32_t>::max();

// The text of a model's config.json: Io "<op>: cannot open config '<path>'" when missing.
inline std::string read_config_text(const std::filesystem::path& path, std::string_view op) {
  std::ifstream in(path);
  WICK_CHECK(in.good(), Io, op, ": cannot open config '", path.string(), "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// config.json parsed (depth-limited, json_limits.h) and checked to be an object.
inline nlohmann::json parse_config_object(const std::string& text, std::string_view op, const std::string& origin) {
  nlohmann::json j = json::parse(text, detail::cat(op, ": invalid JSON in '", origin, "'"));
  WICK_CHECK(j.is_object(), Format, op, ": '", origin, "' is not a JSON object");
  return j;
}

// Sets field from config[key] when the key is present: a positive integer up to kMaxConfigSize,
// else Format "<op>: config key '<key>' must be a positive integer ..., got <value>".
inline void read_config_size(const nlohmann::json& config, std::string_view op, const char* key, int64_t& field) {
  const auto it = config.find(key);
  if (it == config.end()) return;
  WICK_CHECK(it->is_number_integer() && it->get<int64_t>() > 0 && it->get<int64_t>() <= kMaxConfigSize, Format, op,
             ": config key '", key, "' must be a positive integer, got ", json::brief(*it),
             it->is_number_integer() ? detail::cat(" (at most ", kMaxConfigSize, ")") : std::string());
  field = it->get<int64_t>();
}

}  // namespace wick::models
