// Gpt2Config from Hugging Face's config.json.

#include "config_json.h"
#include "io/json_limits.h"
#include "wick/error.h"
#include "wick/models/gpt2.h"

namespace wick::models {

Gpt2Config Gpt2Config::from_json_file(const std::filesystem::path& path) {
  return from_json_string(read_config_text(path, "gpt2"), path.string());
}

Gpt2Config Gpt2Config::from_json_string(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_config_object(text, "gpt2", origin);
  Gpt2Config c;
  auto get_int = [&](const char* key, int64_t& field) { read_config_size(j, "gpt2", key, field); };
  get_int("vocab_size", c.vocab_size);
  get_int("n_positions", c.n_positions);
  get_int("n_embd", c.n_embd);
  get_int("n_layer", c.n_layer);
  get_int("n_head", c.n_head);
  if (j.contains("n_inner") && !j["n_inner"].is_null()) get_int("n_inner", c.n_inner);
  if (j.contains("layer_norm_epsilon")) {
    WICK_CHECK(j["layer_norm_epsilon"].is_number() && j["layer_norm_epsilon"].get<double>() > 0, Format,
               "gpt2: config key 'layer_norm_epsilon' must be a positive number, got ",
               json::brief(j["layer_norm_epsilon"]));
    c.layer_norm_epsilon = j["layer_norm_epsilon"].get<double>();
  }
  if (j.contains("activation_function")) {
    WICK_CHECK(j["activation_function"].is_string(), Format,
               "gpt2: config key 'activation_function' must be a string, got ", json::brief(j["activation_function"]));
    c.activation =
        activation_named(j["activation_function"].get<std::string>(), "gpt2: config key 'activation_function'");
  }
  WICK_CHECK(c.n_embd % c.n_head == 0, Format, "gpt2: n_embd ", c.n_embd, " is not a multiple of n_head ", c.n_head);
  return c;
}

}  // namespace wick::models
