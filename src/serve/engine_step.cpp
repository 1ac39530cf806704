// One engine step: every running sequence's next token and prefill chunks of the newly
// admitted ones in one forward_batch over their paged caches, then sampling, stop
// conditions and events per sequence. Also submit()'s validation of a request.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <system_error>
#include <thread>

#include "engine_impl.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::serve {

namespace {

constexpr int kMaxTopLogprobs = 20;  // OpenAI's bound

// log-softmax of row at `token` and the `top` most likely entries (ties by lower id).
void fill_logprobs(std::span<const float> row, int32_t token, int top, TokenEvent& ev) {
  const float mx = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float x : row) sum += std::exp(double(x) - mx);
  const double lse = double(mx) + std::log(sum);
  ev.logprob = float(double(row[size_t(token)]) - lse);
  if (top <= 0) return;
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto k = std::min<size_t>(size_t(top), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) {
    return row[size_t(a)] > row[size_t(b)] || (row[size_t(a)] == row[size_t(b)] && a < b);
  });
  ev.top.reserve(k);
  for (size_t i = 0; i < k; ++i) ev.top.push_back({ids[i], float(double(row[size_t(ids[i])]) - lse)});
}

// Runs f(r) for r in [0, n), over several threads when the work (elements) is worth their
// start; f's exceptions come back to the caller (the first one).
template <class F>
void for_rows(size_t n, size_t work, const F& f) {
  constexpr size_t kMinParallelWork = 4096;  // below: one thread (tiny vocabularies)
  const size_t threads = std::min<size_t>({n, std::max(1u, std::thread::hardware_concurrency()), 16});
  if (threads < 2 || work < kMinParallelWork) {
    for (size_t r = 0; r < n; ++r) f(r);
    return;
  }
  std::vector<std::exception_ptr> errors(threads);
  auto worker = [&](size_t t) {
    try {
      for (size_t r = t; r < n; r += threads) f(r);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  size_t started = 0;
  try {
    for (; started < threads; ++started) pool.emplace_back(worker, started);
  } catch (const std::system_error&) {
    // No more threads to be had: this one does the rest.
  }
  for (size_t t = started; t < threads; ++t) worker(t);
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

void Engine::Impl::check(const Request& r) const {
  const int64_t vocab = model.vocab_size(), P = int64_t(r.prompt.size());
  WICK_CHECK(P > 0, InvalidArgument, "engine: prompt must hold at least one token");
  WICK_CHECK(r.max_tokens >= 1, InvalidArgument, "engine: max_tokens must be >= 1, got ", r.max_tokens);
  // Written so that no sum overflows: max_tokens may be anything up to INT64_MAX.
  WICK_CHECK(P <= opt.ctx_size && r.max_tokens <= opt.ctx_size - P, InvalidArgument, "engine: prompt of ", P,
             " tokens + max_tokens ", r.max_tokens, " exceed ctx_size ", opt.ctx_size);
  const int64_t blocks = (P + opt.block_size - 1) / opt.block_size;
  WICK_CHECK(blocks <= opt.kv_blocks, InvalidArgument, "engine: a prompt of ", P, " tokens needs ", blocks,
             " KV blocks of ", opt.block_size, ", the pool has ", opt.kv_blocks);
  for (size_t i = 0; i < r.prompt.size(); ++i)
    WICK_CHECK(r.prompt[i] >= 0 && r.prompt[i] < vocab, InvalidArgument, "engine: prompt token ", i, " (", r.prompt[i],
               ") is outside the vocabulary of ", vocab);
  for (int32_t t : r.stop_tokens)
    WICK_CHECK(t >= 0 && t < vocab, InvalidArgument, "engine: stop_tokens id ", t, " is outside the vocabulary of ",
               vocab);
  WICK_CHECK(r.top_logprobs >= 0 && r.top_logprobs <= kMaxTopLogprobs, InvalidArgument,
             "engine: top_logprobs must be in [0, ", kMaxTopLogprobs, "], got ", r.top_logprobs);
  WICK_CHECK(r.top_logprobs == 0 || r.logprobs, InvalidArgument, "engine: top_logprobs needs logprobs");
  models::check_sampling_options(r.sampling);
}

void Engine::Impl::step(Outbox& out) {
  // Admission order (ids grow), so that the oldest prefill gets the step's token budget first.
  std::vector<Slot*> order;
  for (Slot& s : slots) {
    if (!s.seq) continue;
    // A decoding sequence's next position may begin a block: taken now. A pool too full for
    // it (kv_blocks below the default) ends the sequence with `length`; its last token is out.
    if (s.seq->prefilled() && !s.cache.ensure_positions(s.cache.length() + 1)) {
      const std::lock_guard<std::mutex> lock(mu);
      TokenEvent ev;
      ev.finish = FinishReason::Length;
      finish(s, std::move(ev), out);
      refresh_usage();
      continue;
    }
    order.push_back(&s);
  }
  if (order.empty()) return;
  std::sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) { return a->seq->id < b->seq->id; });
  // Decode tokens first (every running sequence advances each step: steady inter-token
  // latency), then prefill chunks in what is left of max_step_tokens.
  std::vector<models::BatchSequence> batch;
  std::vector<Slot*> in_step;
  int64_t budget = opt.max_step_tokens;
  for (Slot* s : order)
    if (s->seq->prefilled()) {
      batch.push_back({std::span<const int32_t>(&s->seq->next, 1), &s->cache});
      in_step.push_back(s);
      --budget;
    }
  const size_t n_decode = batch.size();
  std::vector<int64_t> chunk(in_step.size(), 0);
  for (Slot* s : order) {
    Sequence& q = *s->seq;
    if (q.prefilled() || budget == 0) continue;
    const int64_t n = std::min({opt.prefill_chunk, int64_t(q.req.prompt.size()) - q.fed, budget});
    batch.push_back({std::span<const int32_t>(q.req.prompt.data() + q.fed, size_t(n)), &s->cache});
    in_step.push_back(s);
    chunk.push_back(n);
    budget -= n;
  }
  const int64_t tokens = opt.max_step_tokens - budget;

  // Which rows are sampled this step, and which of those the host needs whole: plain greedy
  // without penalties or logprobs is the device's argmax (what Sampler::sample would pick:
  // the first maximum), so only 8 bytes per such row come back instead of a vocab row.
  std::vector<int64_t> full_rows;                        // rows copied to the host, in batch order
  std::vector<size_t> row_of(in_step.size(), SIZE_MAX);  // batch index -> index in full_rows
  for (size_t i = 0; i < in_step.size(); ++i) {
    const Sequence& q = *in_step[i]->seq;
    const bool sampled_now = q.fed + chunk[i] == int64_t(q.req.prompt.size());
    const bool greedy = q.req.sampling.temperature == 0 && !q.req.sampling.penalized() && !q.req.logprobs;
    if (sampled_now && !greedy) {
      row_of[i] = full_rows.size();
      full_rows.push_back(int64_t(i));
    }
  }
  std::vector<int64_t> argmaxes;
  std::vector<float> logits;
  std::exception_ptr failure;
  try {
    // The decode tokens (the first n_decode entries) through the batched step when it takes
    // them, the prefill chunks through forward_batch; their logits rows in batch order.
    const std::span<const models::BatchSequence> all(batch);
    const std::span<const models::BatchSequence> decoding = all.first(n_decode), prefill = all.subspan(n_decode);
    Tensor out_logits;
    if (!decoding.empty() && decoder.takes(decoding)) {
      out_logits = decoder.step(decoding);
      if (!prefill.empty()) out_logits = cat({out_logits, model.forward_batch(prefill)}, 0);
    } else {
      out_logits = model.forward_batch(batch);
    }
    argmaxes = argmax(out_logits, -1).to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
    if (!full_rows.empty()) {
      const Tensor idx = Tensor::from_vector(full_rows, Shape{int64_t(full_rows.size())}).to(model.device());
      logits = index_select(out_logits, 0, idx).to(Device::cpu()).to(DType::F32).to_vector<float>();
    }
  } catch (...) {
    failure = std::current_exception();
  }

  // Sampling and log-probabilities outside the lock (the samplers are this thread's alone),
  // the whole rows spread over threads: a vocab-sized sort per sampled row adds up at 64 rows.
  std::vector<TokenEvent> events(in_step.size());
  if (!failure) {
    for (size_t i = 0; i < in_step.size(); ++i) events[i].token = int32_t(argmaxes[i]);
    const auto vocab = size_t(model.vocab_size());
    for_rows(full_rows.size(), full_rows.size() * vocab, [&](size_t r) {
      const auto i = size_t(full_rows[r]);
      Sequence& q = *in_step[i]->seq;
      const std::span<const float> row(logits.data() + r * vocab, vocab);
      // Log-probabilities over the row the sampler is about to pick from (penalties applied).
      const std::vector<float> penalized = q.req.logprobs ? q.sampler->penalized(row) : std::vector<float>();
      events[i].token = q.sampler->sample(row);
      if (q.req.logprobs) fill_logprobs(penalized, events[i].token, q.req.top_logprobs, events[i]);
    });
  }

  const std::lock_guard<std::mutex> lock(mu);
  ++st.steps;
  st.last_step_batch = int64_t(batch.size());
  st.last_step_tokens = tokens;
  if (failure) {
    // Only this step's requests fail; their caches may hold half-written positions, and
    // freeing the slots forgets them.
    const TokenEvent ev = error_event(failure);
    for (Slot* s : in_step) finish(*s, ev, out);
    refresh_usage();
    return;
  }
  for (size_t i = 0; i < in_step.size(); ++i) {
    Slot& s = *in_step[i];
    Sequence& q = *s.seq;
    s.tokens.insert(s.tokens.end(), batch[i].tokens.begin(), batch[i].tokens.end());
    // Blocks filled by this step join the prefix cache now, for requests arriving meanwhile.
    const auto B = size_t(opt.block_size);
    if (s.tokens.size() / B != (s.tokens.size() - batch[i].tokens.size()) / B) publish(s);
    q.fed += chunk[i];
    st.prompt_tokens += uint64_t(chunk[i]);
    if (!q.prefilled()) continue;  // a middle chunk: its logits are not a prediction we use
    TokenEvent& ev = events[i];
    if (std::find(q.req.stop_tokens.begin(), q.req.stop_tokens.end(), ev.token) != q.req.stop_tokens.end()) {
      TokenEvent stop;  // the stop token itself is not emitted
      stop.finish = FinishReason::Stop;
      finish(s, std::move(stop), out);
      continue;
    }
    ++q.generated;
    ++st.generated_tokens;
    // The last token is emitted but never fed: max_tokens reached, or no position left.
    if (q.generated >= q.req.max_tokens || s.cache.length() >= opt.ctx_size) {
      ev.finish = FinishReason::Length;
      finish(s, std::move(ev), out);
      continue;
    }
    q.next = ev.token;
    out.emplace_back(q.on_event, std::move(ev));
  }
  refresh_usage();
}

}  // namespace wick::serve
