
#include "config_json.h"
#include "io/json_limits.h"
#include "wick/error.h"
#include "wick/models/bert.h"

namespace wick::models {

BertConfig BertConfig::from_json_file(const std::filesystem::path& path) {
  return from_json_string(read_config_text(path, "bert"), path.string());
}

BertConfig BertConfig::from_json_string(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_config_object(text, "bert", origin);
  BertConfig c;
  auto get_int = [&](const char* key, int64_t& field) { read_config_size(j, "bert", key, field); };
  get_int("vocab_size", c.vocab_size);
  get_int("hidden_size", c.hidden_size);
  get_int("num_hidden_layers", c.num_layers);
  get_int("num_attention_heads", c.num_heads);
  get_int("intermediate_size", c.intermediate_size);
  get_int("max_position_embeddings", c.max_position_embeddings);
  get_int("type_vocab_size", c.type_vocab_size);
  if (j.contains("layer_norm_eps")) {
    WICK_CHECK(j["layer_norm_eps"].is_number(), Format, "bert: config key 'layer_norm_eps' must be a number");
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  if (j.contains("hidden_act")) {
    WICK_CHECK(j["hidden_act"].is_string(), Format, "bert: config key 'hidden_act' must be a string");
    c.activation = activation_named(j["hidden_act"].get<std::string>(), "bert: config key 'hidden_act'");
  }
  WICK_CHECK(c.hidden_size % c.num_heads == 0, Format, "bert: hidden_size ", c.hidden_size,
             " is not a multiple of num_attention_heads ", c.num_heads);
  return c;
}

}  // namespace wick::models
