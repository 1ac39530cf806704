// POST /v1/completions and /v1/chat/completions: a request becomes a prompt, an engine
// request, and the engine's token events become OpenAI's response, whole or streamed.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "metrics.h"
#include "openai_request.h"
#include "openai_response.h"
#include "wick/models/language_model.h"
#include "wick/serve/engine.h"
#include "wick/text/harmony.h"
#include "wick/text/reasoning.h"
#include "wick/text/stop_text.h"
#include "wick/text/tool_calls.h"

namespace wick::serve {

using Clock = std::chrono::steady_clock;

// Token events handed from the engine thread to the HTTP worker serving the request. Kept
// alive by the engine's callback as well as by the worker, so events that arrive after the
// worker gave up (a disconnect) land in a queue nobody reads, not in freed memory.
class EventQueue {
 public:
  void push(const TokenEvent& e);
  // Moves the queued events into `out` (with their arrival times), waiting up to `timeout`
  // for the first; false when none came.
  bool wait(std::vector<std::pair<TokenEvent, Clock::time_point>>& out, std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<TokenEvent, Clock::time_point>> events_;
};

// One request's output as it is generated: the tokens' text through the tokenizer's decode
// stream and the stop strings, the logprobs, the finish reason and the latency metrics.
class Generation {
 public:
  Generation(const models::LanguageModel& lm, const GenerationRequest& request, int64_t prompt_tokens,
             Clock::time_point arrival, Metrics& metrics);

  void feed(const TokenEvent& e, Clock::time_point at);
  bool done() const { return done_; }
  // The engine's last event for the request has come (after done(), when a stop string
  // ended the text and the request was cancelled, it follows).
  bool final_seen() const { return final_seen_; }
  // A stop string ended the text while the engine still generates: cancel the request.
  bool stopped_by_text() const { return stop_.stopped(); }
  const char* finish_reason() const { return finish_; }
  // Set when the request failed (done() then): the HTTP status and message.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_; }

  // Chat with a thinking model: the output's reasoning is split from its text
  // (text::ReasoningSplit); starts_inside: the prompt opened it.
  void split_reasoning(bool starts_inside) { split_.emplace(starts_inside); }
  // Chat with a harmony template (gpt-oss): the output is rewritten by text::HarmonyDecoder
  // before the reasoning split and the tool calls (which then read Hermes calls).
  void decode_harmony() { harmony_.emplace(); }
  std::string take_text();       // text not yet taken
  std::string take_reasoning();  // reasoning not yet taken
  // A chat with tools: the text that cannot belong to a call goes out as it comes, the rest
  // is kept until the reply ends, then its calls are parsed out in the model's syntax
  // (text::ToolCallStream). The finish reason is then "tool_calls".
  void expect_tool_calls(text::ToolCallFormat format) { tools_.emplace(format); }
  const std::vector<text::ToolCall>& tool_calls() const { return calls_; }
  const std::string& reasoning() const { return reasoning_; }
  std::vector<TokenLogprob>* take_logprobs();  // logprobs not yet taken (nullptr when not asked)
  const std::string& text() const { return text_; }
  Usage usage() const { return {prompt_tokens_, completion_tokens_, cached_tokens_}; }

 private:
  TokenLogprob logprob_of(const TokenEvent& e) const;
  void append(const std::string& piece);  // through the harmony decoder, then place()
  void place(const std::string& piece);   // to the text, or split into reasoning and text
  void end();                             // the reply is complete: release what was held
  const models::LanguageModel& lm_;
  text::Tokenizer::DecodeStream decoder_;
  text::StopText stop_;
  bool want_logprobs_;
  Metrics& metrics_;
  std::string text_, reasoning_;
  size_t taken_ = 0, reasoning_taken_ = 0;
  std::optional<text::HarmonyDecoder> harmony_;
  std::optional<text::ReasoningSplit> split_;
  std::optional<text::ToolCallStream> tools_;
  std::vector<text::ToolCall> calls_;
  std::vector<TokenLogprob> logprobs_, taken_logprobs_;
  int64_t prompt_tokens_, completion_tokens_ = 0, cached_tokens_ = 0;
  Clock::time_point arrival_, last_token_;
  const char* finish_ = nullptr;
  bool done_ = false, final_seen_ = false;
  int error_status_ = 0;
  std::string error_;
};

struct GenerationContext {
  const models::LanguageModel& lm;
  Engine& engine;
  Metrics& metrics;
  const std::string& model_id;
  const std::atomic<bool>& shutting_down;
  int retry_after_seconds;
};

// Cancels a request whose text a stop string ended and waits (briefly) for the engine's
// last event, which carries the request's counts.
void cancel_and_settle(Engine& engine, uint64_t id, EventQueue& queue, Generation& gen);

// Answers one generation request into res: a JSON body, or an SSE stream that the worker
// writes after the handler returns. Throws ApiError for what is refused before generating.
void serve_generation(const GenerationContext& ctx, std::string_view body, Endpoint endpoint, uint64_t serial,
                      httplib::Response& res);

}  // namespace wick::serve
