// Engine (wick/serve/engine.h): the public calls and the engine's loop. Each iteration is a
// token boundary (cancellations applied, queued requests admitted into free slots) and one
// step (engine_step.cpp). The engine thread sleeps on `wake` until there is work; an engine
// without a thread runs its iterations on the caller, in run_until_idle().
#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>

#include "engine_impl.h"
#include "wick/error.h"

namespace wick::serve {

void deliver(Outbox& out) {
  for (auto& [on_event, ev] : out) {
    // A throwing callback must not take the engine thread (and every other request) down;
    // the request's own events simply go nowhere.
    try {
      on_event(ev);
    } catch (...) {
    }
  }
  out.clear();
}

Engine::Impl::Impl(const models::CausalLM& m, const EngineOptions& options)
    : model(m), opt(options), decoder(m, options.cuda_graphs) {
  // The bound keeps a typo from asking for billions of slot objects before any KV memory.
  constexpr int64_t kMaxParallel = 1 << 16;
  WICK_CHECK(opt.parallel >= 1 && opt.parallel <= kMaxParallel, InvalidArgument, "engine: parallel must be in [1, ",
             kMaxParallel, "], got ", opt.parallel);
  WICK_CHECK(opt.ctx_size >= 1, InvalidArgument, "engine: ctx_size must be >= 1, got ", opt.ctx_size);
  WICK_CHECK(opt.max_queue >= 0, InvalidArgument, "engine: max_queue must be >= 0, got ", opt.max_queue);
  WICK_CHECK(opt.prefill_chunk >= 1, InvalidArgument, "engine: prefill_chunk must be >= 1, got ", opt.prefill_chunk);
  // Every running sequence feeds its token in every step, so a step must hold them all.
  WICK_CHECK(opt.max_step_tokens >= opt.parallel, InvalidArgument, "engine: max_step_tokens (", opt.max_step_tokens,
             ") must be >= parallel (", opt.parallel, ")");
  opt.ctx_size = std::min(opt.ctx_size, model.context_length());
  models::check_speculative_options(opt.speculative, model);
  const models::CausalLM* drafter = opt.speculative.draft_model;
  constexpr int64_t kMaxBlockSize = 1 << 16;
  WICK_CHECK(opt.block_size >= 1 && opt.block_size <= kMaxBlockSize, InvalidArgument,
             "engine: block_size must be in [1, ", kMaxBlockSize, "], got ", opt.block_size);
  const int64_t per_sequence = (opt.ctx_size + opt.block_size - 1) / opt.block_size;
  if (opt.kv_blocks == 0) opt.kv_blocks = opt.parallel * per_sequence;
  WICK_CHECK(opt.kv_blocks >= 1 && opt.kv_blocks <= INT32_MAX - 1, InvalidArgument, "engine: kv_blocks must be in [1, ",
             INT32_MAX - 1, "], got ", opt.kv_blocks);
  slots.resize(size_t(opt.parallel));
  // One block pool per layer for all sequences (KvCache::paged): a step's decoding sequences
  // attend in one kernel through their block tables. OutOfMemory here, before any request.
  std::vector<models::KvCache> caches;
  {
    models::KvCache layout(1);  // the layout of one position: heads, head_dim, dtype, device
    model.reserve_cache(layout);
    caches = models::KvCache::paged(layout, opt.parallel, opt.ctx_size, opt.kv_blocks, opt.block_size);
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i].cache = std::move(caches[i]);
    if (drafter) {  // the draft model's caches, allocated now too (OutOfMemory before any request)
      slots[i].draft_cache = models::KvCache(opt.ctx_size);
      drafter->reserve_cache(slots[i].draft_cache);
    }
  }
  // Every lane count's decode step recorded now, before any request: later the HTTP workers
  // may use the device (embeddings) while the engine thread runs, which a recording in
  // progress cannot tolerate.
  decoder.prepare(slots[0].cache, opt.parallel);
  st.slots = opt.parallel;
  st.kv_blocks = opt.kv_blocks;
  st.kv_capacity = opt.kv_blocks * opt.block_size;
}

void Engine::Impl::refresh_usage() {
  st.running = st.kv_used = 0;
  for (const Slot& s : slots)
    if (s.seq) {
      ++st.running;
      st.kv_used += s.cache.length();
    }
  st.queued = int64_t(queue.size());
  const models::BlockPool& pool = slots[0].cache.block_pool();
  st.kv_blocks_used = pool.used_blocks();
  st.kv_blocks_cached = pool.cached_blocks();
  st.prefix_query_tokens = pool.query_tokens();
  st.prefix_hit_tokens = pool.hit_tokens();
}

void Engine::Impl::publish(Slot& slot) {
  if (!slot.tokens.empty()) slot.cache.block_pool().publish(slot.cache.blocks(), slot.tokens);
}

void Engine::Impl::finish(Slot& slot, TokenEvent ev, Outbox& out) {
  Sequence& seq = *slot.seq;
  ev.prompt_tokens = int64_t(seq.req.prompt.size());
  ev.completion_tokens = seq.generated;
  switch (ev.finish) {
    case FinishReason::Cancelled: ++st.cancelled; break;
    case FinishReason::Error: ++st.failed; break;
    default: ++st.finished; break;
  }
  ev.cached_tokens = seq.cached;
  const bool failed = ev.finish == FinishReason::Error;
  live.erase(seq.id);
  cancels.erase(seq.id);
  out.emplace_back(std::move(seq.on_event), std::move(ev));
  slot.seq.reset();
  // A failed step may have half-written the cache: nothing of it is published. Otherwise its
  // full blocks stay in the prefix cache for a later prompt that shares them.
  if (!failed) publish(slot);
  slot.cache.clear();
  slot.draft_cache.clear();
  slot.tokens.clear();
}

bool Engine::Impl::admit_next() {
  const std::vector<int32_t>& prompt = queue.front().req.prompt;
  const auto free = std::find_if(slots.begin(), slots.end(), [](const Slot& s) { return !s.seq; });
  if (free == slots.end()) return false;
  models::KvCache& cache = free->cache;
  models::BlockPool& pool = cache.block_pool();
  // The prompt's last token is always fed (its logits are the first prediction), so only
  // blocks wholly before it are reused.
  const size_t limit = prompt.size() - 1;
  const int64_t hit = pool.cached_prefix_blocks(prompt, limit), B = pool.block_size();
  // Blocks for the rest of the prompt now, so that a prefill never runs out: counted as if
  // every hit were a free block, which a hit held by a running sequence is not (admission
  // may wait a little longer than it must, never less).
  const int64_t fresh = (int64_t(prompt.size()) + B - 1) / B - hit;
  if (fresh > pool.free_blocks() - hit) return false;
  std::vector<int32_t> taken = pool.take_prefix(prompt, limit);
  const int64_t reused = int64_t(taken.size()) * B;
  cache.adopt(std::move(taken), reused);
  WICK_CHECK(cache.ensure_positions(int64_t(prompt.size())), Internal, "engine: the pool lost blocks it counted");
  free->tokens.assign(prompt.begin(), prompt.begin() + reused);
  free->seq = std::move(queue.front());
  queue.pop_front();
  Sequence& q = *free->seq;
  q.fed = q.cached = reused;
  st.cached_prompt_tokens += uint64_t(q.cached);
  // The sampler sees the whole prompt, cached part included (the repetition penalty counts it).
  q.sampler.emplace(q.req.sampling);
  if (q.req.grammar) q.matcher.emplace(*q.req.grammar, opt.tokens, q.req.grammar_prefix);
  q.sampler->set_prompt(q.req.prompt);
  return true;
}

TokenEvent error_event(std::exception_ptr e) {
  TokenEvent ev;
  ev.finish = FinishReason::Error;
  ev.error_kind = ErrorKind::Internal;
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    ev.error_kind = x.kind();
    ev.error = x.what();
  } catch (const std::bad_alloc&) {
    ev.error_kind = ErrorKind::OutOfMemory;
    ev.error = "engine: out of host memory in a step";
  } catch (const std::exception& x) {
    ev.error = x.what();
  } catch (...) {
    ev.error = "engine: unknown exception in a step";
  }
  return ev;
}

void Engine::Impl::fail_running(std::exception_ptr e, Outbox& out) {
  const TokenEvent ev = error_event(e);
  const std::lock_guard<std::mutex> lock(mu);
  for (Slot& s : slots)
    if (s.seq) finish(s, ev, out);
  refresh_usage();
}

namespace {
TokenEvent cancelled_event() {
  TokenEvent ev;
  ev.finish = FinishReason::Cancelled;
  return ev;
}
}  // namespace

bool Engine::Impl::iterate(bool block) {
  Outbox out;
  {
    std::unique_lock<std::mutex> lock(mu);
    const auto free_slot = [&] {
      return std::find_if(slots.begin(), slots.end(), [](const Slot& s) { return !s.seq; });
    };
    const auto work = [&] {
      return aborting || !cancels.empty() || st.running > 0 || (!queue.empty() && free_slot() != slots.end()) ||
             (stopping && queue.empty());
    };
    if (block)
      wake.wait(lock, work);
    else if (!work())
      return false;
    // Token boundary: cancellations first (their slots are freed before their final
    // events go out), then admissions into whatever is free.
    for (auto it = queue.begin(); it != queue.end();) {
      if (aborting || cancels.count(it->id)) {
        TokenEvent ev = cancelled_event();
        ev.prompt_tokens = int64_t(it->req.prompt.size());
        ++st.cancelled;
        live.erase(it->id);
        cancels.erase(it->id);
        out.emplace_back(std::move(it->on_event), std::move(ev));
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
    for (Slot& s : slots)
      if (s.seq && (aborting || cancels.count(s.seq->id))) finish(s, cancelled_event(), out);
    cancels.clear();  // the rest named nothing live
    while (!queue.empty() && admit_next()) {
    }
    refresh_usage();
    if (stopping && queue.empty() && st.running == 0) {
      done = true;
      exited.notify_all();
      lock.unlock();
      deliver(out);
      return false;
    }
  }
  deliver(out);
  if (std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.seq.has_value(); })) {
    try {
      step(out);
    } catch (...) {
      // step() catches the forward's errors itself; anything else (host memory while
      // sampling, say) fails what runs rather than ending the process.
      fail_running(std::current_exception(), out);
    }
  }
  deliver(out);
  return true;
}

void Engine::Impl::run() {
  while (iterate(/*block=*/true)) {
  }
}

Engine::Engine(const models::CausalLM& model, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {
  if (options.thread) impl_->thread = std::thread([this] { impl_->run(); });
}

void Engine::run_until_idle() {
  WICK_CHECK(!impl_->thread.joinable(), InvalidArgument,
             "engine: run_until_idle is for an engine without a thread (EngineOptions::thread false)");
  while (impl_->iterate(/*block=*/false)) {
  }
}

Engine::~Engine() { shutdown(std::chrono::milliseconds(0)); }

const EngineOptions& Engine::options() const { return impl_->opt; }

std::optional<uint64_t> Engine::submit(Request request, OnEvent on_event) {
  Impl& m = *impl_;
  try {
    WICK_CHECK(static_cast<bool>(on_event), InvalidArgument, "engine: on_event must be callable");
    m.check(request);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(m.mu);
    ++m.st.rejected;
    throw;
  }
  const std::lock_guard<std::mutex> lock(m.mu);
  // Requests that will go straight into a free slot do not count against max_queue (the
  // engine thread may not have admitted them yet).
  const int64_t room = m.opt.max_queue + (m.opt.parallel - m.st.running);
  if (m.stopping || int64_t(m.queue.size()) >= room) {
    ++m.st.rejected;
    return std::nullopt;
  }
  Sequence seq;
  seq.id = m.next_id++;
  seq.req = std::move(request);
  seq.on_event = std::move(on_event);
  m.live.insert(seq.id);
  m.queue.push_back(std::move(seq));
  ++m.st.requests;
  m.st.queued = int64_t(m.queue.size());
  m.wake.notify_one();
  return m.next_id - 1;
}

void Engine::cancel(uint64_t id) {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->live.count(id)) return;
  impl_->cancels.insert(id);
  impl_->wake.notify_one();
}

EngineStats Engine::stats() const {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->st;
}

void Engine::shutdown(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> once(m.shutdown_mu);
  {
    std::unique_lock<std::mutex> lock(m.mu);
    m.stopping = true;
    m.wake.notify_one();
    if (!m.thread.joinable()) {
      m.aborting = m.aborting || grace.count() == 0;  // the caller runs what is left below
    } else if (!m.exited.wait_for(lock, grace, [&] { return m.done; })) {
      m.aborting = true;
      m.wake.notify_one();
    }
  }
  if (m.thread.joinable()) {
    m.thread.join();
  } else {
    // No thread: what is left runs (or, without grace, is cancelled) here, on the caller.
    while (m.iterate(/*block=*/false)) {
    }
  }
}

}  // namespace wick::serve
