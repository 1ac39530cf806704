// The engine's state (engine.h): what the engine thread owns (the slots) and what the
// callers share with it under one mutex (the queue, cancellations, stats). engine.cpp has
// the public calls and the thread's loop; engine_step.cpp builds and runs one step.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "wick/models/batch_decoder.h"
#include "wick/serve/engine.h"

namespace wick::serve {

// A request from admission to its final event.
struct Sequence {
  uint64_t id = 0;
  Request req;
  Engine::OnEvent on_event;
  std::optional<models::Sampler> sampler;       // made at admission
  std::optional<text::GrammarMatcher> matcher;  // Request::grammar's state, made at admission
  int64_t fed = 0;                              // prompt tokens fed through the model so far
  int64_t generated = 0;                        // tokens sampled and emitted
  int64_t cached = 0;                           // prompt tokens found in the prefix cache at admission
  int32_t next = -1;                            // the last sampled token: the next step feeds it
  models::DraftPacer pacer;                     // speculative decoding: when this sequence drafts
  bool prefilled() const { return fed == int64_t(req.prompt.size()); }
};

// A running sequence's place: its paged KV cache (blocks of the engine's one pool, taken as
// it grows and given back when it ends) and the sequence, if any.
struct Slot {
  models::KvCache cache;
  std::vector<int32_t> tokens;  // the tokens whose keys and values the cache holds, in order
  std::optional<Sequence> seq;
  // Speculative decoding with a draft model: its cache (buffers of its own, up to ctx_size
  // positions), holding a prefix of `tokens` and the sequence's next token.
  models::KvCache draft_cache;
};

// Events are collected while the state is changed and delivered afterwards, outside the
// lock: a callback may call cancel(), which takes it.
using Outbox = std::vector<std::pair<Engine::OnEvent, TokenEvent>>;

struct Engine::Impl {
  Impl(const models::CausalLM& model, const EngineOptions& options);

  const models::CausalLM& model;
  EngineOptions opt;
  std::vector<Slot> slots;  // the engine thread's alone (allocated before it starts)
  // Decode-only parts of a step go through the recorded batched step (the engine thread's).
  models::BatchDecoder decoder;
  Tensor bits;  // constrain.h's bit_table on the model's device, made at the first constrained greedy step

  mutable std::mutex mu;           // guards everything below
  std::condition_variable wake;    // the engine thread waits on it for work
  std::condition_variable exited;  // shutdown() waits on it for the thread's end
  std::deque<Sequence> queue;
  std::unordered_set<uint64_t> live;     // ids queued or running (cancel ignores the rest)
  std::unordered_set<uint64_t> cancels;  // asked for, applied at the next token boundary
  bool stopping = false;                 // no more admissions; the thread ends once nothing is left
  bool aborting = false;                 // cancel everything at the next token boundary
  bool done = false;                     // the thread has left its loop
  uint64_t next_id = 1;
  EngineStats st;

  std::mutex shutdown_mu;  // one shutdown() at a time
  std::thread thread;

  void run();  // the engine thread: iterate(true) until it ends
  // One token boundary and step; block: wait for work, else return false when there is
  // none. False when the engine has ended (shutdown, nothing left).
  bool iterate(bool block);
  void step(Outbox& out);              // one batched forward and its events (engine_step.cpp)
  void check(const Request& r) const;  // submit()'s validation (engine_step.cpp)
  // Speculative decoding (engine_step.cpp): how many tokens a decoding sequence drafts at
  // most, with `room` left in the step; the drafts of the decoding sequences.
  int64_t draft_limit(Slot& s, int64_t room);
  std::vector<std::vector<int32_t>> make_drafts(std::span<Slot* const> decoding, std::span<const int64_t> most);
  // Ends slot's sequence with a final event (caller holds mu): frees the slot first; its
  // full blocks stay in the prefix cache (not those of a failed step).
  void finish(Slot& slot, TokenEvent ev, Outbox& out);
  // Registers the slot's full blocks in the pool's prefix cache (running sequences too, so
  // that a request arriving meanwhile with the same prefix shares them).
  void publish(Slot& slot);
  void refresh_usage();  // st.running / kv_used / queued from the slots (caller holds mu)
  void fail_running(std::exception_ptr e, Outbox& out);  // every running request ends with e
  // Puts the queue's first request into a free slot, starting from the prefix cache's blocks
  // of its prompt and holding blocks for the rest of it; false when no slot or too few
  // blocks are free (caller holds mu).
  bool admit_next();
};

void deliver(Outbox& out);
// The final event of a request that failed with e (its ErrorKind and message).
TokenEvent error_event(std::exception_ptr e);

}  // namespace wick::serve
