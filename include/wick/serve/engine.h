// The serving engine behind `wick serve`: continuous batching of many generation requests
// over one CausalLM. Requests join and leave the running batch at token boundaries; every
// step is one batched forward over all running sequences (the decode tokens of the running
// ones, their speculative drafts, and prefill chunks of newly admitted ones). KV memory is
// one pool of blocks fixed at construction (EngineOptions::kv_blocks); the full blocks of
// every prompt and output stay in its prefix cache until their memory is needed, and a
// request whose prompt starts with them (the next turn of a chat, a shared system prompt)
// computes only the rest (TokenEvent::cached_tokens).
//
// Threading: one engine thread owns the model and runs the steps. submit(), cancel(),
// stats() and shutdown() may be called from any thread (the HTTP workers). Events are
// delivered on the engine thread, in order per request; a callback must return quickly
// (copy the event into the worker's queue) and must not call back into the engine except
// cancel().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/models/causal_lm.h"
#include "wick/models/generate.h"
#include "wick/text/grammar.h"

namespace wick::serve {

// Why a request ended (OpenAI's finish_reason: Stop -> "stop", Length -> "length").
enum class FinishReason {
  None,       // not finished: more events follow
  Stop,       // an end-of-generation token (not emitted as text)
  Length,     // max_tokens reached, or the sequence's context is full
  Cancelled,  // cancel() or shutdown()
  Error,      // the request failed (TokenEvent::error says why; kind OutOfMemory -> HTTP 503)
};

struct TopLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// One generated token, or the end of a request. The last event of every submitted request
// has finish != None (exactly one such event per request); it may carry a token too
// (Length: the last token), or none (token == -1: Stop, Cancelled, Error).
struct TokenEvent {
  int32_t token = -1;
  // log-softmax of the token under the model's logits after the penalties and before
  // temperature / top-k / top-p / min-p (what OpenAI reports), when Request::logprobs.
  float logprob = 0;
  std::vector<TopLogprob> top;  // the top_logprobs most likely tokens, most likely first
  FinishReason finish = FinishReason::None;
  ErrorKind error_kind = ErrorKind::Internal;  // for FinishReason::Error
  std::string error;                           // for FinishReason::Error
  int64_t prompt_tokens = 0;                   // on the final event: the request's counts
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // on the final event: prompt tokens reused from the prefix cache
};

struct Request {
  std::vector<int32_t> prompt;  // token ids, non-empty
  int64_t max_tokens = 16;      // >= 1
  models::SamplingOptions sampling;
  std::vector<int32_t> stop_tokens;  // end-of-generation ids: finish Stop, not emitted
  bool logprobs = false;
  int top_logprobs = 0;  // 0..20, with logprobs
  // Constrained decoding (text/grammar.h): every token sampled is one the grammar allows,
  // a stop token only where the text so far is a sentence, and the request ends (Stop)
  // as soon as nothing can follow. Needs EngineOptions::tokens; such a sequence does not
  // draft (speculative decoding).
  std::optional<text::Grammar> grammar;
  // Free text before the grammar's sentence (a thinking model's reasoning, text/grammar.h):
  // the output opens with its `open`, writes anything up to its `close`, then the sentence.
  // No stop token is allowed before the sentence. Only with a grammar.
  std::optional<text::FreePrefix> grammar_prefix;
};

struct EngineOptions {
  int64_t parallel = 4;            // sequences in the running batch at most (KV slots)
  int64_t ctx_size = 4096;         // positions per sequence (prompt + output); clamped to the model's
  int64_t max_queue = 64;          // admitted requests waiting for a slot (beyond the free ones); more are refused
  int64_t prefill_chunk = 512;     // prompt tokens of one sequence fed per step at most
  int64_t max_step_tokens = 2048;  // tokens of one batched forward at most (decode + prefill); >= parallel
  // The KV cache is paged (models::KvCache::paged): blocks of block_size positions from one
  // pool of kv_blocks blocks (0: enough for every sequence at ctx_size, parallel x
  // ceil(ctx_size / block_size)). Full blocks of finished and running prompts stay in the
  // pool's prefix cache until their memory is needed (least recently freed first): a prompt
  // that starts with one of them reuses its keys and values, whichever request made them.
  int64_t block_size = 16;
  int64_t kv_blocks = 0;
  // The decoding sequences of a step run as models::BatchDecoder's recorded step (one CUDA
  // graph per lane count, recorded at construction) when the model has one; false: op by op.
  bool cuda_graphs = true;
  // true: the engine runs on a thread of its own and submit() returns at once (a server).
  // false: no thread; the caller runs the engine in run_until_idle(), and the callbacks
  // are called there, on the caller's thread (Generator: one sequence, no hand-off per token).
  bool thread = true;
  // Speculative decoding (models::SpeculativeOptions): each decoding sequence drafts up to
  // draft_tokens tokens, by prompt lookup in its own prompt and output or as draft_model's
  // greedy continuation (the draft model's batched forwards, with a cache per slot of its
  // own, allocated at construction; same vocabulary, must outlive the engine), and the step
  // verifies every sequence's draft in the same forward (its rows of logits: the token and
  // each draft). The output is what decoding without drafts gives (greedy: plain
  // decoding's tokens; sampled: the same distribution). A step with drafts runs
  // forward_batch op by op instead of the recorded step; drafts count against
  // max_step_tokens after every sequence's one token.
  models::SpeculativeOptions speculative;
  // The vocabulary's bytes (text::TokenTable of the model's tokenizer), for requests with a
  // grammar; ids of the model beyond it are never allowed to them.
  std::shared_ptr<const text::TokenTable> tokens;
};

struct EngineStats {
  int64_t queued = 0, running = 0, slots = 0;
  int64_t kv_used = 0, kv_capacity = 0;  // positions held by running sequences / the pool's blocks
  int64_t kv_blocks = 0, kv_blocks_used = 0, kv_blocks_cached = 0;  // the pool: all, referenced, in the prefix cache
  uint64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;          // prompt tokens looked up / found in it
  int64_t last_step_batch = 0;                                      // sequences in the last step
  int64_t last_step_tokens = 0;                                     // tokens in the last step's forward
  uint64_t requests = 0, finished = 0, cancelled = 0, failed = 0, rejected = 0;
  uint64_t prompt_tokens = 0, generated_tokens = 0, steps = 0;  // prompt_tokens: computed ones
  uint64_t cached_prompt_tokens = 0;                            // prompt tokens reused from the prefix cache instead
  uint64_t drafted_tokens = 0, accepted_tokens = 0;             // speculative decoding: proposed, and kept
};

class Engine {
 public:
  using OnEvent = std::function<void(const TokenEvent&)>;

  // The model must outlive the engine. Starts the engine thread (unless options.thread is
  // false); allocates the KV slots
  // (OutOfMemory if they do not fit, before any request). Options out of range (parallel
  // outside [1, 65536], ctx_size or prefill_chunk < 1, max_queue < 0, max_step_tokens <
  // parallel) are InvalidArgument naming the option.
  Engine(const models::CausalLM& model, const EngineOptions& options);
  ~Engine();  // shutdown(0): cancels what runs, joins the thread
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineOptions& options() const;  // as resolved (ctx_size clamped)

  // Checks the request (InvalidArgument naming the field: empty prompt, max_tokens < 1,
  // prompt + max_tokens beyond ctx_size, bad sampling options, token ids outside the
  // vocabulary) and queues it. Returns its id, or nullopt when the queue is full (nothing
  // queued: the caller answers 429) or the engine is shutting down.
  std::optional<uint64_t> submit(Request request, OnEvent on_event);
  // Cancels a queued or running request: its slot is freed before its final event
  // (Cancelled) is delivered. Unknown or finished ids are ignored.
  void cancel(uint64_t id);
  // An engine without a thread (EngineOptions::thread false): runs steps on the calling
  // thread until nothing is queued or running, calling the callbacks as events come (a
  // callback may submit or cancel). InvalidArgument on an engine with a thread.
  void run_until_idle();
  EngineStats stats() const;
  // Stops admitting, lets running and queued requests finish for up to `grace`, then
  // cancels the rest and joins the engine thread. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wick::serve
