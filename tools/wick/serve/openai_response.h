// OpenAI's response bodies: completions and chat completions whole or as server-sent-event
// chunks, with usage and logprobs; embeddings lists; the SSE framing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "openai_request.h"
#include "wick/text/tool_calls.h"

namespace wick::serve {

// What identifies one response: every chunk of a stream repeats it.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // of the prompt's, reused from the engine's cache (prefix reuse)
};

// One generated token as logprobs report it: its text, its log-probability and the most
// likely alternatives (most likely first).
struct TokenLogprob {
  std::string token;
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;
};

// The whole response of a request that did not stream. finish_reason: "stop" or "length".
// reasoning: a thinking model's reasoning (chat: message.reasoning_content, when not empty).
// tool_calls: chat's message.tool_calls (tool_calls_json; null: none), content then null when empty.
nlohmann::json completion_response(const ResponseMeta& meta, const std::string& text,
                                   const std::vector<TokenLogprob>* logprobs, const char* finish_reason, Usage usage,
                                   std::string_view reasoning = {}, const nlohmann::json& tool_calls = nullptr);

// One chunk of a stream: `text` is the new text (chat: delta.content), `logprobs` the tokens it
// came from (nullptr: logprobs not asked), finish_reason nullptr until the last chunk. The
// first chat chunk is role_delta() instead. With include_usage every chunk carries
// "usage": null and usage_chunk() ends the stream, as OpenAI does.
nlohmann::json stream_chunk(const ResponseMeta& meta, const std::string& text,
                            const std::vector<TokenLogprob>* logprobs, const char* finish_reason, bool include_usage,
                            std::string_view reasoning = {}, const nlohmann::json& tool_calls = nullptr);
// OpenAI's tool_calls array: ids "call_<response id>_<i>"; streamed chunks carry each call's index.
nlohmann::json tool_calls_json(const std::vector<text::ToolCall>& calls, const std::string& response_id, bool streamed);
nlohmann::json role_delta(const ResponseMeta& meta, bool include_usage);
nlohmann::json usage_chunk(const ResponseMeta& meta, Usage usage);

// Server-sent events: "data: <json>\n\n", and the "data: [DONE]\n\n" that ends a stream.
std::string sse_event(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// /v1/embeddings' body for (count, dim) row-major floats; base64: each row as the bytes of
// little-endian float32, base64-encoded (OpenAI's encoding_format "base64").
nlohmann::json embeddings_response(const std::string& model, std::span<const float> values, size_t dim, bool base64,
                                   int64_t prompt_tokens);
std::string base64_encode(std::string_view bytes);

}  // namespace wick::serve
