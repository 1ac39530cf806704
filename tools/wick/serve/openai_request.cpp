#include "openai_request.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "api_error.h"
#include "openai_constraints.h"
#include "request_json.h"

namespace wick::serve {

namespace {

// The fields both generation endpoints share: model, sampling, length, stop, n, stream.
void parse_common(const Fields& f, std::string_view raw, GenerationRequest& r) {
  if (auto v = f.string("model")) r.model = *v;
  auto& s = r.sampling;
  s.temperature = 1.0;  // OpenAI's default
  if (auto v = f.number("temperature", 0, 2)) {
    // Below models::kMinTemperature sampling is greedy in all but name (generate.h): say so.
    s.temperature = *v < models::kMinTemperature ? 0.0 : *v;
  }
  // top_p 0 (allowed by OpenAI's API) keeps the smallest nucleus there is: the most
  // probable token, which is what top_k 1 keeps.
  bool top_token_only = false;
  if (auto v = f.number("top_p", 0, 1)) {
    top_token_only = *v == 0;
    s.top_p = top_token_only ? 1.0 : *v;
  }
  if (auto v = f.integer("top_k", 0, INT32_MAX)) s.top_k = *v;  // llama-server / vLLM extension
  if (top_token_only) s.top_k = 1;
  if (auto v = f.number("min_p", 0, 1)) s.min_p = *v;  // likewise
  if (auto v = f.number("presence_penalty", -2, 2)) s.presence_penalty = *v;
  if (auto v = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = *v;
  if (auto v = f.number("repetition_penalty", 1e-3, 1e3)) s.repetition_penalty = *v;  // extension
  // Seeds are 64-bit: any of [-2^63, 2^64 - 1], a negative one taken as its two's complement.
  if (const nlohmann::json* v = f.get("seed"); v && v->is_number_unsigned()) {
    s.seed = v->get<uint64_t>();
    r.seed_given = true;
  } else if (auto i = f.integer("seed", INT64_MIN, INT64_MAX)) {
    s.seed = uint64_t(*i);
    r.seed_given = true;
  }
  // {"token id": bias}: a string key per token, as OpenAI's API sends it.
  if (const nlohmann::json* lb = f.get("logit_bias")) {
    if (!lb->is_object()) f.wrong_type("logit_bias", "an object of token ids to biases");
    if (lb->size() > kMaxLogitBias)
      throw ApiError(
          400, "logit_bias: at most " + std::to_string(kMaxLogitBias) + " tokens, got " + std::to_string(lb->size()),
          "logit_bias");
    for (const auto& [key, bias] : lb->items()) {
      const std::string where = "logit_bias[" + key.substr(0, 40) + "]";
      char* end = nullptr;
      errno = 0;
      // Digits only: strtoll would also take a sign and leading white space.
      const long long id =
          key.empty() || !std::isdigit(static_cast<unsigned char>(key[0])) ? -1 : std::strtoll(key.c_str(), &end, 10);
      if (id < 0 || *end || errno || id > INT32_MAX)
        throw ApiError(400, where + ": keys must be token ids (non-negative integers)", "logit_bias");
      if (!bias.is_number() || !(bias.get<double>() >= -100 && bias.get<double>() <= 100))
        throw ApiError(400, where + ": the bias must be a number in [-100, 100]", "logit_bias");
      s.logit_bias.emplace_back(int32_t(id), bias.get<double>());
    }
  }
  // Fields that would change what is generated and are not implemented yet are refused
  // rather than ignored (an ignored schema or tool list would look like a model's failure).
  // (The legacy `functions` form of tool calling; chat's `tools` are read by parse_tools.)
  if (const nlohmann::json* v = f.get("functions"); v && !(v->is_array() && v->empty()))
    throw ApiError(400, "functions: the legacy form is not supported: give tools", "functions");
  r.grammar = parse_output_constraint(f, raw);
  if (auto v = f.string("reasoning_format")) {
    if (*v != "auto" && *v != "none" && *v != "deepseek")
      throw ApiError(400, "reasoning_format: expected auto, none or deepseek, got " + v->substr(0, 40),
                     "reasoning_format");
    r.reasoning_format = *v;
  }
  if (auto v = f.integer("n", 1, INT64_MAX); v && *v != 1)
    throw ApiError(400, "n: only 1 choice per request is supported, got " + std::to_string(*v), "n");
  // max_completion_tokens is the newer name of max_tokens; when both are sent it wins.
  if (auto v = f.integer("max_tokens", 1, INT64_MAX)) r.max_tokens = v;
  if (auto v = f.integer("max_completion_tokens", 1, INT64_MAX)) r.max_tokens = v;
  if (const nlohmann::json* stop = f.get("stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > kMaxStops)
        throw ApiError(
            400, "stop: at most " + std::to_string(kMaxStops) + " stop strings, got " + std::to_string(stop->size()),
            "stop");
      for (const auto& x : *stop) {
        if (!x.is_string())
          throw ApiError(400, std::string("stop: expected strings, got ") + json_type_name(x), "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      f.wrong_type("stop", "a string or an array of strings");
    }
    for (const auto& x : r.stop)
      if (x.empty()) throw ApiError(400, "stop: stop strings must not be empty", "stop");
  }
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.stream = f.boolean("stream").value_or(false);
  if (const nlohmann::json* so = f.get("stream_options")) {
    const Fields opts(*so, "stream_options");
    r.include_usage = opts.boolean("include_usage").value_or(false);
  }
}

// A completion prompt: a string, token ids, or a one-item array of either (OpenAI's batch
// form; more than one prompt per request is refused like n > 1).
void parse_prompt(const nlohmann::json& p, GenerationRequest& r) {
  auto ids = [&](const nlohmann::json& a) {
    std::vector<int32_t> out;
    for (const auto& x : a) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
        throw ApiError(400, "prompt: token ids must be non-negative integers", "prompt");
      out.push_back(int32_t(x.get<int64_t>()));
    }
    return out;
  };
  if (p.is_string()) {
    r.prompt_text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    r.prompt_ids = ids(p);
  } else if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) {
    parse_prompt(p[0], r);
  } else if (p.is_array() && p.size() > 1) {
    throw ApiError(400, "prompt: only one prompt per request is supported, got " + std::to_string(p.size()), "prompt");
  } else {
    throw ApiError(400, std::string("prompt: expected a string or token ids, got ") + json_type_name(p), "prompt");
  }
}

// Chat content: a string, or a list of parts of which only text parts are understood.
std::string parse_content(const nlohmann::json* c, const std::string& where) {
  if (!c) return "";  // an assistant turn with tool calls only
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array())
    throw ApiError(400, where + ": expected a string or an array of parts, got " + json_type_name(*c), where);
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    const Fields part((*c)[i], where + "[" + std::to_string(i) + "]");
    const std::string type = part.string("type").value_or("");
    if (type != "text")
      throw ApiError(400, part.name_of("type") + ": only \"text\" parts are supported, got \"" + type + "\"",
                     part.name_of("type"));
    text += part.string("text").value_or("");
  }
  return text;
}

}  // namespace

GenerationRequest parse_completion_request(const nlohmann::json& body, std::string_view raw) {
  const Fields f(body);
  GenerationRequest r;
  r.endpoint = Endpoint::Completions;
  parse_common(f, raw, r);
  const nlohmann::json* p = f.get("prompt");
  if (!p) throw ApiError(400, "prompt: required", "prompt");
  parse_prompt(*p, r);
  if (f.boolean("echo").value_or(false)) throw ApiError(400, "echo: echoing the prompt is not supported", "echo");
  if (auto v = f.string("suffix"); v && !v->empty()) throw ApiError(400, "suffix: not supported", "suffix");
  if (auto v = f.integer("best_of", 1, INT64_MAX); v && *v != 1)
    throw ApiError(400, "best_of: only 1 is supported", "best_of");
  if (const nlohmann::json* v = f.get("tools"); v && !(v->is_array() && v->empty()))
    throw ApiError(400, "tools: tool calling is a chat completions feature (/v1/chat/completions)", "tools");
  // Legacy completions: logprobs is the number of most likely tokens to list (0: the
  // sampled token's only).
  if (auto v = f.integer("logprobs", 0, kMaxTopLogprobs)) {
    r.logprobs = true;
    r.top_logprobs = int(*v);
  }
  return r;
}

GenerationRequest parse_chat_request(const nlohmann::json& body, std::string_view raw) {
  const Fields f(body);
  GenerationRequest r;
  r.endpoint = Endpoint::Chat;
  parse_common(f, raw, r);
  const nlohmann::json* m = f.get("messages");
  if (!m) throw ApiError(400, "messages: required", "messages");
  if (!m->is_array()) f.wrong_type("messages", "an array");
  if (m->empty()) throw ApiError(400, "messages: must not be empty", "messages");
  for (size_t i = 0; i < m->size(); ++i) {
    const Fields msg((*m)[i], "messages[" + std::to_string(i) + "]");
    const auto role = msg.string("role");
    if (!role) throw ApiError(400, msg.name_of("role") + ": required", msg.name_of("role"));
    r.messages.push_back({*role, parse_content(msg.get("content"), msg.name_of("content"))});
  }
  r.tools = parse_tools(f, *m);
  for (size_t i = 0; i < r.messages.size(); ++i) r.tools.messages[i]["content"] = r.messages[i].content;
  if (const nlohmann::json* k = f.get("chat_template_kwargs"); k && !k->is_null()) {
    if (!k->is_object()) f.wrong_type("chat_template_kwargs", "an object");
    // What the request's own fields say is not overridden through the template's variables.
    for (const char* own : {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"})
      if (k->contains(own))
        throw ApiError(400, std::string("chat_template_kwargs: '") + own + "' is set by the request itself",
                       "chat_template_kwargs");
    r.template_kwargs = *k;
  }
  if (r.tools.forced() && r.grammar)
    throw ApiError(400, "tool_choice: a required tool call and an output constraint cannot both apply", "tool_choice");
  r.logprobs = f.boolean("logprobs").value_or(false);
  if (auto v = f.integer("top_logprobs", 0, kMaxTopLogprobs)) {
    if (!r.logprobs) throw ApiError(400, "top_logprobs: needs logprobs: true", "top_logprobs");
    r.top_logprobs = int(*v);
  }
  return r;
}

EmbeddingRequest parse_embedding_request(const nlohmann::json& body) {
  const Fields f(body);
  EmbeddingRequest r;
  if (auto v = f.string("model")) r.model = *v;
  const nlohmann::json* in = f.get("input");
  if (!in) throw ApiError(400, "input: required", "input");
  if (in->is_string()) {
    r.inputs.push_back(in->get<std::string>());
  } else if (in->is_array()) {
    if (in->empty()) throw ApiError(400, "input: must not be empty", "input");
    if (in->size() > kMaxEmbeddingInputs)
      throw ApiError(
          400, "input: at most " + std::to_string(kMaxEmbeddingInputs) + " inputs, got " + std::to_string(in->size()),
          "input");
    for (const auto& x : *in) {
      if (!x.is_string())
        throw ApiError(
            400, std::string("input: expected strings (token arrays are not supported), got ") + json_type_name(x),
            "input");
      r.inputs.push_back(x.get<std::string>());
    }
  } else {
    f.wrong_type("input", "a string or an array of strings");
  }
  for (const auto& x : r.inputs)
    if (x.empty()) throw ApiError(400, "input: inputs must not be empty strings", "input");
  const std::string format = f.string("encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw ApiError(400, "encoding_format: must be \"float\" or \"base64\", got \"" + format + "\"", "encoding_format");
  r.base64 = format == "base64";
  r.dimensions = f.integer("dimensions", 1, INT64_MAX);
  return r;
}

}  // namespace wick::serve
