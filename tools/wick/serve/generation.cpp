#include "generation.h"

#include <ctime>
#include <memory>
#include <random>

#include "api_error.h"
#include "http_server.h"
#include "request_json.h"

namespace wick::serve {

namespace {
// How long a worker waits for events before it looks at its client again: the bound on how
// late a disconnect is noticed (and the request cancelled).
constexpr std::chrono::milliseconds kPollInterval{50};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

void EventQueue::push(const TokenEvent& e) {
  {
    std::lock_guard lock(mu_);
    events_.emplace_back(e, Clock::now());
  }
  cv_.notify_one();
}

bool EventQueue::wait(std::vector<std::pair<TokenEvent, Clock::time_point>>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  for (auto& e : events_) out.push_back(std::move(e));
  events_.clear();
  return true;
}

Generation::Generation(const models::LanguageModel& lm, const GenerationRequest& request, int64_t prompt_tokens,
                       Clock::time_point arrival, Metrics& metrics)
    : lm_(lm),
      decoder_(lm.tokenizer().decode_stream()),
      stop_(request.stop),
      want_logprobs_(request.logprobs),
      metrics_(metrics),
      prompt_tokens_(prompt_tokens),
      arrival_(arrival) {}

TokenLogprob Generation::logprob_of(const TokenEvent& e) const {
  const text::Tokenizer& tok = lm_.tokenizer();
  TokenLogprob t{tok.decode(std::vector<int32_t>{e.token}), e.logprob, {}};
  for (const auto& alt : e.top) t.top.emplace_back(tok.decode(std::vector<int32_t>{alt.token}), alt.logprob);
  return t;
}

void Generation::feed(const TokenEvent& e, Clock::time_point at) {
  if (e.finish != FinishReason::None) {
    final_seen_ = true;
    cached_tokens_ = e.cached_tokens;
  }
  if (done_) return;
  if (e.token >= 0) {
    ++completion_tokens_;
    if (completion_tokens_ == 1)
      metrics_.observe_time_to_first_token(seconds(at - arrival_));
    else
      metrics_.observe_inter_token_latency(seconds(at - last_token_));
    last_token_ = at;
    if (want_logprobs_) logprobs_.push_back(logprob_of(e));
    append(stop_.push(decoder_.push(e.token)));
    if (stop_.stopped()) {
      finish_ = "stop";
      end();
      return;
    }
  }
  switch (e.finish) {
    case FinishReason::None: return;
    case FinishReason::Stop: finish_ = "stop"; break;
    case FinishReason::Length: finish_ = "length"; break;
    case FinishReason::Cancelled:
      // The worker cancels only requests it has stopped reading, so this is the shutdown.
      error_status_ = 503;
      error_ = "the request was cancelled: the server is shutting down";
      break;
    case FinishReason::Error:
      error_status_ = status_of(Error(e.error_kind, e.error));
      error_ = e.error;
      break;
  }
  append(stop_.flush());
  end();
}

void Generation::append(const std::string& piece) { place(harmony_ ? harmony_->push(piece) : piece); }

void Generation::place(const std::string& piece) {
  std::string answer = piece;
  if (split_) {
    const text::ReasoningSplit::Piece p = split_->push(piece);
    reasoning_ += p.reasoning;
    answer = p.content;
  }
  text_ += tools_ ? tools_->push(answer) : answer;
}

void Generation::end() {
  if (harmony_) place(harmony_->flush());
  if (split_) {
    const text::ReasoningSplit::Piece p = split_->flush();
    reasoning_ += p.reasoning;
    text_ += tools_ ? tools_->push(p.content) : p.content;
  }
  if (tools_ && !error_status_) {
    text::ToolCallReply r = tools_->finish();
    text_ += r.content;
    calls_ = std::move(r.calls);
    if (!calls_.empty()) finish_ = "tool_calls";
  }
  done_ = true;
}

std::string Generation::take_reasoning() {
  std::string out = reasoning_.substr(reasoning_taken_);
  reasoning_taken_ = reasoning_.size();
  return out;
}

std::string Generation::take_text() {
  std::string out = text_.substr(taken_);
  taken_ = text_.size();
  return out;
}

std::vector<TokenLogprob>* Generation::take_logprobs() {
  if (!want_logprobs_) return nullptr;
  taken_logprobs_ = std::move(logprobs_);
  logprobs_.clear();
  return &taken_logprobs_;
}

namespace {

// A token id the request names (a prompt's, a logit_bias key) must be in the vocabulary.
void check_token_id(int32_t id, const models::LanguageModel& lm, const char* field) {
  const auto vocab = int64_t(lm.model().vocab_size());
  if (id >= vocab)
    throw ApiError(400,
                   std::string(field) + ": token id " + std::to_string(id) + " is outside the vocabulary (" +
                       std::to_string(vocab) + " tokens)",
                   field);
}

// The prompt's token ids: the rendered conversation (its special tokens are in the text), or
// the completion prompt with the tokenizer's BOS, as `wick generate` encodes it.
// rendered: the rendered conversation (chat), for what its end says (an opened reasoning).
// The conversation as the model's template renders it: with the tools and the tool turns
// when the template takes tools; otherwise the tools described in a system turn of their own
// and the calls written as text (Hermes-style).
std::string render_conversation(const models::LanguageModel& lm, const GenerationRequest& r) {
  const ToolRequest& t = r.tools;
  nlohmann::json extra = r.template_kwargs;
  const auto dump_extra = [&] { return extra.empty() ? std::string() : extra.dump(); };
  if (!t.active() && !t.history_has_tools) return lm.render_chat(r.messages, true, dump_extra());
  if (text::template_takes_tools(lm.chat_template()->source())) {
    extra["messages"] = t.messages;
    if (t.active()) extra["tools"] = t.tools_json;
    return lm.render_chat(r.messages, true, extra.dump());
  }
  std::vector<text::ChatMessage> plain;
  if (t.active()) plain.push_back({"system", text::tools_system_prompt(t.tools_json.dump())});
  for (size_t i = 0; i < r.messages.size(); ++i) plain.push_back(plain_message(t.messages[i], r.messages[i].content));
  return lm.render_chat(plain, true, dump_extra());
}

std::vector<int32_t> prompt_tokens(const models::LanguageModel& lm, const GenerationRequest& r, std::string& rendered) {
  const char* field = r.endpoint == Endpoint::Chat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  try {
    if (r.endpoint == Endpoint::Chat) {
      if (!lm.has_chat_template())
        throw ApiError(400, "messages: the model has no chat template (use /v1/completions)", "messages");
      rendered = render_conversation(lm, r);
      ids = lm.encode(rendered, /*add_special=*/false);
    } else if (r.prompt_ids) {
      ids = *r.prompt_ids;
      for (int32_t id : ids) check_token_id(id, lm, "prompt");
    } else {
      ids = lm.encode(r.prompt_text, /*add_special=*/true);
    }
  } catch (const Error& e) {
    throw ApiError(status_of(e), std::string(field) + ": " + e.what(), field);
  }
  if (ids.empty()) throw ApiError(400, std::string(field) + ": the prompt encodes to no tokens", field);
  return ids;
}

// The output length: max_tokens when given (400 when it does not fit the context), else
// OpenAI's defaults: 16 for completions, the rest of the context for chat.
int64_t output_length(const GenerationRequest& r, int64_t prompt, int64_t ctx_size) {
  const char* field = r.endpoint == Endpoint::Chat ? "messages" : "prompt";
  const int64_t room = ctx_size - prompt;
  if (room < 1)
    throw ApiError(400,
                   "the prompt has " + std::to_string(prompt) + " tokens; this server's context holds " +
                       std::to_string(ctx_size) + " (prompt and output)",
                   field, "context_length_exceeded");
  if (!r.max_tokens) return r.endpoint == Endpoint::Chat ? room : std::min<int64_t>(16, room);
  if (*r.max_tokens > room)
    throw ApiError(400,
                   "the context holds " + std::to_string(ctx_size) + " tokens; you requested " +
                       std::to_string(uint64_t(prompt) + uint64_t(*r.max_tokens)) + " (" + std::to_string(prompt) +
                       " of prompt, " + std::to_string(*r.max_tokens) + " of output)",
                   "max_tokens", "context_length_exceeded");
  return *r.max_tokens;
}

uint64_t random_seed() {
  static thread_local std::random_device rd;
  return uint64_t(rd()) << 32 | rd();
}

using Batch = std::vector<std::pair<TokenEvent, Clock::time_point>>;

// A streamed response: called by httplib's chunked writer on the worker thread until done.
struct SseStream {
  Generation gen;
  std::shared_ptr<EventQueue> queue;
  Engine& engine;
  Metrics& metrics;
  uint64_t id;
  ResponseMeta meta;
  bool include_usage;
  bool started = false, finished = false;

  bool step(httplib::DataSink& sink) {
    auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    if (!started) {  // OpenAI's first chat chunk: the role, no content
      started = true;
      return meta.endpoint != Endpoint::Chat || send(sse_event(role_delta(meta, include_usage)));
    }
    Batch batch;
    queue->wait(batch, kPollInterval);
    // One chunk per token, as OpenAI streams (a client timing tokens counts chunks); a token
    // whose text is held back (an unfinished character, a possible stop string) sends none.
    for (const auto& [e, at] : batch) {
      gen.feed(e, at);
      const std::string text = gen.take_text(), reasoning = gen.take_reasoning();
      std::vector<TokenLogprob>* lps = gen.take_logprobs();
      if (!text.empty() || !reasoning.empty() || (lps && !lps->empty()))
        if (!send(sse_event(stream_chunk(meta, text, lps, nullptr, include_usage, reasoning)))) return false;
    }
    if (!gen.done()) return sink.is_writable();  // false: the client is gone (release() cancels)
    finished = true;
    if (gen.stopped_by_text()) cancel_and_settle(engine, id, *queue, gen);
    if (gen.error_status()) {
      send(sse_event(error_body(gen.error_status(), gen.error_message())));
    } else {
      // What the end released (held-back text) comes with the finish reason.
      const std::string text = gen.take_text(), reasoning = gen.take_reasoning();
      const nlohmann::json calls =
          gen.tool_calls().empty() ? nlohmann::json(nullptr) : tool_calls_json(gen.tool_calls(), meta.id, true);
      send(sse_event(stream_chunk(meta, text, nullptr, gen.finish_reason(), include_usage, reasoning, calls)));
      if (include_usage) send(sse_event(usage_chunk(meta, gen.usage())));
    }
    send(std::string(kSseDone));
    sink.done();
    return true;
  }

  void release() {
    if (finished) return;
    metrics.count_disconnect();  // before the cancel, which a /metrics reader may be waiting on
    engine.cancel(id);
  }
};

}  // namespace

void cancel_and_settle(Engine& engine, uint64_t id, EventQueue& queue, Generation& gen) {
  engine.cancel(id);
  // The cancel takes effect at the next token boundary: a step or two.
  const auto until = Clock::now() + std::chrono::seconds(2);
  Batch batch;
  while (!gen.final_seen() && Clock::now() < until) {
    batch.clear();
    queue.wait(batch, kPollInterval);
    for (const auto& [e, at] : batch) gen.feed(e, at);
  }
}

void serve_generation(const GenerationContext& ctx, std::string_view raw, Endpoint endpoint, uint64_t serial,
                      httplib::Response& res) {
  const Clock::time_point arrival = Clock::now();
  const nlohmann::json body = parse_request_body(raw);
  const GenerationRequest r =
      endpoint == Endpoint::Chat ? parse_chat_request(body, raw) : parse_completion_request(body, raw);
  if (!r.model.empty() && r.model != ctx.model_id)
    throw ApiError(404, "the model '" + r.model + "' does not exist: this server serves '" + ctx.model_id + "'",
                   "model", "model_not_found");
  if (ctx.shutting_down) throw ApiError(503, "the server is shutting down");

  for (const auto& [id, bias] : r.sampling.logit_bias) check_token_id(id, ctx.lm, "logit_bias");
  // Tools: the model's call syntax, and with tool_choice required or a named function a
  // grammar that makes the reply calls of those tools.
  std::optional<text::ToolCallFormat> tool_format;
  std::optional<text::Grammar> tool_grammar;
  if (r.endpoint == Endpoint::Chat && r.tools.active()) {
    const std::string& source = ctx.lm.chat_template()->source();
    // Harmony's calls reach the parser as Hermes calls (HarmonyDecoder).
    tool_format = text::template_takes_tools(source) && !text::template_is_harmony(source)
                      ? text::tool_call_format(source)
                      : text::ToolCallFormat::Hermes;
    if (r.tools.forced()) {
      std::vector<text::ToolSpec> callable;
      for (const text::ToolSpec& t : r.tools.tools)
        if (r.tools.choice == "required" || r.tools.choice == t.name) callable.push_back(t);
      try {
        tool_grammar = text::Grammar::from_gbnf(text::tool_call_gbnf(callable, *tool_format, r.tools.parallel ? 8 : 1));
      } catch (const Error& e) {
        throw ApiError(400, std::string("tools: ") + e.what(), "tools");
      }
    }
  }
  Request er;
  std::string rendered;
  er.prompt = prompt_tokens(ctx.lm, r, rendered);
  er.max_tokens = output_length(r, int64_t(er.prompt.size()), ctx.engine.options().ctx_size);
  er.sampling = r.sampling;
  if (!r.seed_given) er.sampling.seed = random_seed();
  if (!r.ignore_eos) er.stop_tokens = ctx.lm.stop_tokens();
  er.logprobs = r.logprobs;
  er.top_logprobs = r.top_logprobs;
  er.grammar = tool_grammar ? tool_grammar : r.grammar;
  // A thinking model's reasoning goes to reasoning_content (llama-server's reasoning_format),
  // and a constraint applies to the answer after it.
  const bool split_reasoning =
      r.endpoint == Endpoint::Chat && r.reasoning_format != "none" &&
      (r.reasoning_format == "deepseek" || text::template_thinks(ctx.lm.chat_template()->source()));
  if (er.grammar && split_reasoning)
    er.grammar_prefix = text::reasoning_prefix(ctx.lm.chat_template()->source(), rendered);
  const int64_t n_prompt = int64_t(er.prompt.size());

  auto queue = std::make_shared<EventQueue>();
  std::optional<uint64_t> id;
  try {
    id = ctx.engine.submit(std::move(er), [queue](const TokenEvent& e) { queue->push(e); });
  } catch (const Error& e) {
    throw ApiError(status_of(e), e.what());
  }
  if (!id) {
    if (ctx.shutting_down) throw ApiError(503, "the server is shutting down");
    res.set_header("Retry-After", std::to_string(ctx.retry_after_seconds));
    throw ApiError(429, "the server is busy: its request queue is full, retry later", "", "queue_full");
  }

  const ResponseMeta meta{endpoint, (endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-") + std::to_string(serial),
                          ctx.model_id, int64_t(std::time(nullptr))};
  Generation gen(ctx.lm, r, n_prompt, arrival, ctx.metrics);
  if (r.endpoint == Endpoint::Chat && text::template_is_harmony(ctx.lm.chat_template()->source())) gen.decode_harmony();
  if (split_reasoning) gen.split_reasoning(text::prompt_opens_reasoning(rendered));
  if (tool_format) gen.expect_tool_calls(*tool_format);
  if (r.stream) {
    auto s = std::make_shared<SseStream>(
        SseStream{std::move(gen), queue, ctx.engine, ctx.metrics, *id, meta, r.include_usage});
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [s](size_t, httplib::DataSink& sink) { return s->step(sink); },
        [s](bool) { s->release(); });
    return;
  }
  // The whole response at once; the client is watched meanwhile so that one who gives up
  // does not keep its sequence generating.
  Connection* conn = current_connection();
  Batch batch;
  while (!gen.done()) {
    batch.clear();
    queue->wait(batch, kPollInterval);
    for (const auto& [e, at] : batch) gen.feed(e, at);
    if (!gen.done() && conn && conn->peer_closed()) {
      ctx.metrics.count_disconnect();
      ctx.engine.cancel(*id);
      throw ApiError(499, "the client closed the connection");
    }
  }
  if (gen.stopped_by_text()) cancel_and_settle(ctx.engine, *id, *queue, gen);
  if (gen.error_status()) throw ApiError(gen.error_status(), gen.error_message());
  const nlohmann::json calls =
      gen.tool_calls().empty() ? nlohmann::json(nullptr) : tool_calls_json(gen.tool_calls(), meta.id, false);
  res.set_content(dump(completion_response(meta, gen.text(), gen.take_logprobs(), gen.finish_reason(), gen.usage(),
                                           gen.reasoning(), calls)),
                  "application/json");
}

}  // namespace wick::serve
