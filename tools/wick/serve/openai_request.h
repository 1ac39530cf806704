// OpenAI's request bodies for /v1/completions, /v1/chat/completions and /v1/embeddings,
// read into plain structs. Every field OpenAI defines that changes what wick computes is
// either honoured or refused with a 400 naming it (n > 1, echo, image parts); the rest
// (user, metadata, store, ...) and unknown fields are ignored, as OpenAI's API does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "openai_tools.h"
#include "wick/models/generate.h"
#include "wick/text/chat_template.h"
#include "wick/text/grammar.h"

namespace wick::serve {

enum class Endpoint { Completions, Chat };

struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;  // "" when not given (the loaded model is meant)
  // The prompt: text to encode (completions), token ids given as such (completions), or the
  // conversation to render with the chat template (chat).
  std::string prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  std::vector<text::ChatMessage> messages;
  std::optional<int64_t> max_tokens;  // max_tokens / max_completion_tokens; nullopt: the default
  models::SamplingOptions sampling;   // OpenAI's defaults: temperature 1, top_p 1
  bool seed_given = false;            // else the server draws a seed
  std::vector<std::string> stop;      // stop strings (text level), at most kMaxStops
  bool logprobs = false;
  int top_logprobs = 0;
  bool stream = false, include_usage = false;
  bool ignore_eos = false;  // llama-server's / vLLM's extension: generate past end-of-text (benchmarks)
  // The output's constraint (openai_constraints.h: response_format, grammar, json_schema,
  // guided_*), compiled; nullopt: free text.
  std::optional<text::Grammar> grammar;
  // Chat: the reasoning of a thinking model (<think>...</think>) returned as
  // reasoning_content ("auto": when the chat template writes such markers; "deepseek":
  // always) or left in content ("none"); llama-server's reasoning_format.
  std::string reasoning_format = "auto";
  ToolRequest tools;  // chat: tools, tool_choice, parallel_tool_calls, the conversation's tool parts
  // Chat: variables for the chat template (vLLM's and llama-server's chat_template_kwargs,
  // e.g. {"enable_thinking": false} for Qwen3); an object, empty when not given.
  nlohmann::json template_kwargs = nlohmann::json::object();
};

inline constexpr size_t kMaxStops = 4;               // OpenAI's bound on `stop`
inline constexpr size_t kMaxLogitBias = 1024;        // tokens in `logit_bias` at most (memory stays bounded)
inline constexpr int kMaxTopLogprobs = 20;           // OpenAI's bound on top_logprobs (the engine's too)
inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's bound on `input` items

// Each throws ApiError 400 naming the offending field. raw: the body's text, read again for
// the key order of a JSON Schema (body's objects have their keys sorted; a schema's
// properties are generated in the order written); empty: sorted order.
GenerationRequest parse_completion_request(const nlohmann::json& body, std::string_view raw = {});
GenerationRequest parse_chat_request(const nlohmann::json& body, std::string_view raw = {});

struct EmbeddingRequest {
  std::string model;
  std::vector<std::string> inputs;
  bool base64 = false;  // encoding_format "base64" (what the openai Python client asks for)
  std::optional<int64_t> dimensions;
};
EmbeddingRequest parse_embedding_request(const nlohmann::json& body);

}  // namespace wick::serve
