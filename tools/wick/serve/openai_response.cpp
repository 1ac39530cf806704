#include "openai_response.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "api_error.h"

namespace wick::serve {

namespace {

bool is_chat(const ResponseMeta& m) { return m.endpoint == Endpoint::Chat; }

nlohmann::json usage_json(Usage u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// A log-probability as OpenAI writes it: finite (-inf, a token the penalties ruled out, is
// not JSON; OpenAI reports -9999 for such tokens).
double finite(double lp) { return std::max(lp, -9999.0); }

nlohmann::json bytes_of(const std::string& s) {
  nlohmann::json b = nlohmann::json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...], "refusal": null}.
nlohmann::json chat_logprobs(const std::vector<TokenLogprob>& lps) {
  nlohmann::json content = nlohmann::json::array();
  for (const auto& t : lps) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [tok, lp] : t.top)
      top.push_back({{"token", tok}, {"logprob", finite(lp)}, {"bytes", bytes_of(tok)}});
    content.push_back(
        {{"token", t.token}, {"logprob", finite(t.logprob)}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// Legacy completions: parallel arrays; text_offset counts bytes from the start of the
// generated text (`offset` for the first token of this piece).
nlohmann::json completion_logprobs(const std::vector<TokenLogprob>& lps, size_t offset) {
  nlohmann::json tokens = nlohmann::json::array(), lp = nlohmann::json::array(), top = nlohmann::json::array(),
                 offsets = nlohmann::json::array();
  for (const auto& t : lps) {
    tokens.push_back(t.token);
    lp.push_back(finite(t.logprob));
    nlohmann::json alternatives = nlohmann::json::object();
    for (const auto& [tok, l] : t.top) alternatives[tok] = finite(l);
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += t.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offsets}};
}

nlohmann::json logprobs_json(const ResponseMeta& m, const std::vector<TokenLogprob>* lps) {
  if (!lps) return nullptr;
  return is_chat(m) ? chat_logprobs(*lps) : completion_logprobs(*lps, 0);
}

nlohmann::json envelope(const ResponseMeta& m, const char* object) {
  return {{"id", m.id}, {"object", object}, {"created", m.created}, {"model", m.model}, {"system_fingerprint", "wick"}};
}

nlohmann::json reason(const char* finish_reason) {
  return finish_reason ? nlohmann::json(finish_reason) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json completion_response(const ResponseMeta& m, const std::string& text,
                                   const std::vector<TokenLogprob>* logprobs, const char* finish_reason, Usage usage,
                                   std::string_view reasoning, const nlohmann::json& tool_calls) {
  nlohmann::json choice = {
      {"index", 0}, {"logprobs", logprobs_json(m, logprobs)}, {"finish_reason", reason(finish_reason)}};
  if (is_chat(m)) {
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
    if (!reasoning.empty()) choice["message"]["reasoning_content"] = reasoning;
    if (tool_calls.is_array() && !tool_calls.empty()) {
      choice["message"]["tool_calls"] = tool_calls;
      if (text.empty()) choice["message"]["content"] = nullptr;
    }
  } else
    choice["text"] = text;
  nlohmann::json j = envelope(m, is_chat(m) ? "chat.completion" : "text_completion");
  j["choices"] = nlohmann::json::array({choice});
  j["usage"] = usage_json(usage);
  return j;
}

nlohmann::json stream_chunk(const ResponseMeta& m, const std::string& text, const std::vector<TokenLogprob>* logprobs,
                            const char* finish_reason, bool include_usage, std::string_view reasoning,
                            const nlohmann::json& tool_calls) {
  nlohmann::json choice = {
      {"index", 0}, {"logprobs", logprobs_json(m, logprobs)}, {"finish_reason", reason(finish_reason)}};
  if (is_chat(m)) {
    nlohmann::json delta = nlohmann::json::object();
    if (!text.empty() || (!finish_reason && reasoning.empty())) delta["content"] = text;
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (tool_calls.is_array() && !tool_calls.empty()) delta["tool_calls"] = tool_calls;
    choice["delta"] = std::move(delta);
  } else
    choice["text"] = text;
  nlohmann::json j = envelope(m, is_chat(m) ? "chat.completion.chunk" : "text_completion");
  j["choices"] = nlohmann::json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

nlohmann::json tool_calls_json(const std::vector<text::ToolCall>& calls, const std::string& response_id,
                               bool streamed) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    nlohmann::json c = {{"id", "call_" + response_id + "_" + std::to_string(i)},
                        {"type", "function"},
                        {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streamed) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

nlohmann::json role_delta(const ResponseMeta& m, bool include_usage) {
  nlohmann::json choice = {{"index", 0},
                           {"delta", {{"role", "assistant"}, {"content", ""}}},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr}};
  nlohmann::json j = envelope(m, "chat.completion.chunk");
  j["choices"] = nlohmann::json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

nlohmann::json usage_chunk(const ResponseMeta& m, Usage usage) {
  nlohmann::json j = envelope(m, is_chat(m) ? "chat.completion.chunk" : "text_completion");
  j["choices"] = nlohmann::json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string sse_event(const nlohmann::json& j) { return "data: " + dump(j) + "\n\n"; }

std::string base64_encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (const size_t rest = in.size() - i) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

nlohmann::json embeddings_response(const std::string& model, std::span<const float> values, size_t dim, bool base64,
                                   int64_t prompt_tokens) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  nlohmann::json data = nlohmann::json::array();
  for (size_t row = 0; dim && row < values.size() / dim; ++row) {
    const std::span<const float> v = values.subspan(row * dim, dim);
    nlohmann::json e = {{"object", "embedding"}, {"index", row}};
    if (base64)
      e["embedding"] = base64_encode(std::string_view(reinterpret_cast<const char*>(v.data()), v.size_bytes()));
    else
      e["embedding"] = std::vector<float>(v.begin(), v.end());
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", data},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace wick::serve
