// One engine step: every running sequence's next token (and its speculative draft) and
// prefill chunks of the newly admitted ones in one forward_batch over their paged caches,
// then sampling (and the drafts' verification), stop conditions and events per sequence.
// Also submit()'s validation of a request.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <future>
#include <limits>
#include <numeric>
#include <system_error>
#include <thread>

#include "constrain.h"
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
  WICK_CHECK(!r.grammar || opt.tokens, InvalidArgument,
             "engine: a request with a grammar needs the vocabulary's bytes (EngineOptions::tokens)");
  WICK_CHECK(!r.grammar_prefix || r.grammar, InvalidArgument, "engine: grammar_prefix without a grammar");
  WICK_CHECK(!r.grammar_prefix || !r.grammar_prefix->close.empty(), InvalidArgument,
             "engine: grammar_prefix needs a closing marker");
}

// How many tokens a decoding sequence drafts this step at most (0: none): its pacer, `room`
// left in the step, the context (the token and the draft must fit), max_tokens (no token
// past it), what one forward computes exactly (LongRoPE) and the draft model's cache.
int64_t Engine::Impl::draft_limit(Slot& s, int64_t room) {
  Sequence& q = *s.seq;
  if (opt.speculative.draft_tokens == 0 || !q.pacer.drafting() || q.matcher) return 0;
  const int64_t length = s.cache.length();
  int64_t most = std::min({opt.speculative.draft_tokens, room, opt.ctx_size - length - 1,
                           q.req.max_tokens - q.generated - 1, model.exact_span(length) - 1});
  if (const models::CausalLM* drafter = opt.speculative.draft_model)
    most = std::min(most, s.draft_cache.resolved_capacity(drafter->context_length()) - length - 1);
  return std::max<int64_t>(most, 0);
}

// The decoding sequences' drafts, most[i] tokens at most each: prompt lookup in each one's
// tokens, or the draft model's greedy continuations, batched (first the tokens each draft
// cache lacks, then one token per sequence and round). A draft stops where its cache's
// blocks do when the pool has none for the rest.
std::vector<std::vector<int32_t>> Engine::Impl::make_drafts(std::span<Slot* const> decoding,
                                                            std::span<const int64_t> most) {
  std::vector<std::vector<int32_t>> drafts(decoding.size());
  const models::CausalLM* drafter = opt.speculative.draft_model;
  std::vector<std::vector<int32_t>> feed(decoding.size());
  std::vector<size_t> active;
  for (size_t i = 0; i < decoding.size(); ++i) {
    if (most[i] == 0) continue;
    const Slot& s = *decoding[i];
    if (!drafter) {
      std::vector<int32_t> history(s.tokens);  // what the cache holds, then the token it is fed next
      history.push_back(s.seq->next);
      drafts[i] = models::lookup_draft(history, opt.speculative.max_ngram, most[i]);
      continue;
    }
    // Only what the draft cache lacks of the same history (a token or two after the first step).
    feed[i].assign(s.tokens.begin() + s.draft_cache.length(), s.tokens.end());
    feed[i].push_back(s.seq->next);
    active.push_back(i);
  }
  while (!active.empty()) {
    std::vector<models::BatchSequence> batch;
    for (size_t i : active) batch.push_back({feed[i], &decoding[i]->draft_cache});
    const std::vector<int64_t> picked =
        argmax(drafter->forward_batch(batch), -1).to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
    std::vector<size_t> still;
    for (size_t r = 0; r < active.size(); ++r) {
      const size_t i = active[r];
      drafts[i].push_back(int32_t(picked[r]));
      feed[i].assign(1, int32_t(picked[r]));
      if (int64_t(drafts[i].size()) < most[i]) still.push_back(i);
    }
    active = std::move(still);
  }
  for (size_t i = 0; i < decoding.size(); ++i) {
    models::KvCache& cache = decoding[i]->cache;
    const int64_t length = cache.length();
    if (drafts[i].empty() || cache.ensure_positions(length + 1 + int64_t(drafts[i].size()))) continue;
    const int64_t held = cache.positions_held();
    drafts[i].resize(size_t(std::max<int64_t>(0, held - length - 1)));
  }
  return drafts;
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
  // latency), then their drafts, then prefill chunks in what is left of max_step_tokens.
  std::vector<Slot*> in_step;
  for (Slot* s : order)
    if (s->seq->prefilled()) in_step.push_back(s);
  const size_t n_decode = in_step.size();
  int64_t budget = opt.max_step_tokens - int64_t(n_decode);
  // A decoding sequence feeds its last token and its draft: fed[i] = {next, draft...}.
  // (No drafts in a step wider than speculative.max_batch.)
  std::vector<int64_t> most(n_decode);
  for (size_t i = 0; i < n_decode && int64_t(n_decode) <= opt.speculative.max_batch; ++i) {
    most[i] = draft_limit(*in_step[i], budget);
    budget -= most[i];
  }
  std::vector<std::vector<int32_t>> fed = make_drafts(std::span(in_step).first(n_decode), most);
  std::vector<models::BatchSequence> batch;
  bool drafted = false;
  for (size_t i = 0; i < n_decode; ++i) {
    budget += most[i] - int64_t(fed[i].size());  // a lookup may draft fewer
    drafted = drafted || !fed[i].empty();
    fed[i].insert(fed[i].begin(), in_step[i]->seq->next);
    batch.push_back({fed[i], &in_step[i]->cache, int64_t(fed[i].size())});  // every row: the token's and each draft's
  }
  std::vector<int64_t> chunk(n_decode, 0);
  for (Slot* s : order) {
    Sequence& q = *s->seq;
    if (q.prefilled() || budget == 0) continue;
    const int64_t n = std::min({opt.prefill_chunk, int64_t(q.req.prompt.size()) - q.fed, budget});
    batch.push_back({std::span<const int32_t>(q.req.prompt.data() + q.fed, size_t(n)), &s->cache});
    in_step.push_back(s);
    chunk.push_back(n);
    budget -= n;
  }
  int64_t tokens = 0;
  std::vector<int64_t> first_row(batch.size());  // each entry's first row of logits
  for (size_t i = 0, row = 0; i < batch.size(); row += size_t(batch[i].logits), ++i) {
    first_row[i] = int64_t(row);
    tokens += int64_t(batch[i].tokens.size());
  }

  // Which entries are sampled this step, and how: plain greedy without penalties or
  // logprobs is the device's argmax (what Sampler::sample would pick: the first maximum),
  // under a grammar over the ids its mask allows (masked_argmax), so only 8 bytes per such
  // row come back instead of a vocab row; the host has the other rows whole.
  std::vector<int64_t> full_rows;                        // rows copied to the host, in batch order
  std::vector<size_t> row_of(in_step.size(), SIZE_MAX);  // entry -> index of its first row in full_rows
  std::vector<size_t> argmax_entries, masked_entries, full_entries;
  for (size_t i = 0; i < in_step.size(); ++i) {
    const Sequence& q = *in_step[i]->seq;
    if (q.fed + chunk[i] != int64_t(q.req.prompt.size())) continue;  // not sampled now
    const bool greedy = q.req.sampling.temperature == 0 && !q.req.sampling.penalized() && !q.req.logprobs;
    if (greedy && !q.matcher) {
      argmax_entries.push_back(i);
    } else if (greedy && batch[i].logits == 1) {  // constrained sequences draft nothing
      masked_entries.push_back(i);
    } else {
      row_of[i] = full_rows.size();
      full_entries.push_back(i);
      for (int64_t r = 0; r < batch[i].logits; ++r) full_rows.push_back(first_row[i] + r);
    }
  }
  // The grammar masks of the constrained rows, on threads of their own while the forward
  // runs: each needs only its sequence's state, which the last step left.
  std::vector<std::vector<uint32_t>> masks(in_step.size());
  std::vector<char> alive(in_step.size(), 1);  // 0: the mask allows nothing (a dead end)
  std::future<void> masking;
  std::vector<size_t> constrained(masked_entries);
  for (const size_t i : full_entries)
    if (in_step[i]->seq->matcher) constrained.push_back(i);
  const int64_t vocab_ids = model.vocab_size();
  if (!constrained.empty()) {
    auto fill = [&] {
      for_rows(constrained.size(), constrained.size() * size_t(vocab_ids), [&](size_t r) {
        const size_t i = constrained[r];
        Sequence& q = *in_step[i]->seq;
        alive[i] = settled_mask(*q.matcher, opt.tokens->vocab_size(), vocab_ids, q.req.stop_tokens, masks[i]);
      });
    };
    try {
      masking = std::async(std::launch::async, fill);
    } catch (const std::system_error&) {
      fill();  // no thread to be had: before the forward instead of beside it
    }
  }
  std::vector<int64_t> argmaxes;
  std::vector<float> logits;
  std::exception_ptr failure;
  try {
    // The decode tokens (the first n_decode entries) through the batched step when it takes
    // them (one token each: no drafts), the rest through forward_batch; rows in batch order.
    const std::span<const models::BatchSequence> all(batch);
    const std::span<const models::BatchSequence> decoding = all.first(n_decode), prefill = all.subspan(n_decode);
    Tensor out_logits;
    if (!decoding.empty() && !drafted && decoder.takes(decoding)) {
      out_logits = decoder.step(decoding);
      if (!prefill.empty()) out_logits = cat({out_logits, model.forward_batch(prefill)}, 0);
    } else {
      out_logits = model.forward_batch(batch);
    }
    if (!full_rows.empty()) {
      const Tensor idx = Tensor::from_vector(full_rows, Shape{int64_t(full_rows.size())}).to(model.device());
      logits = index_select(out_logits, 0, idx).to(Device::cpu()).to(DType::F32).to_vector<float>();
    }
    // Every row's argmax, then the masked picks of the constrained greedy rows, come back in
    // one copy (one wait for the device).
    Tensor picks = argmax(out_logits, -1);
    if (masking.valid()) masking.get();
    std::vector<int64_t> rows;
    std::vector<const std::vector<uint32_t>*> row_masks;
    for (const size_t i : masked_entries) {
      if (!alive[i]) continue;
      rows.push_back(first_row[i]);
      row_masks.push_back(&masks[i]);
    }
    if (!rows.empty()) {
      if (!bits.defined()) bits = bit_table(model.device());
      picks = cat({picks, masked_argmax(out_logits, rows, row_masks, bits)}, 0);
    }
    argmaxes = picks.to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
    for (size_t r = 0; r < rows.size(); ++r) argmaxes[size_t(rows[r])] = argmaxes[argmaxes.size() - rows.size() + r];
  } catch (...) {
    failure = std::current_exception();
  }
  if (masking.valid()) {
    try {
      masking.get();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }

  // The tokens each sampled entry emits: its token, or with a draft the drafts sampled as
  // themselves and then the first token that is not (or, all kept, the one after the last).
  // Sampling and log-probabilities outside the lock (the samplers are this thread's alone),
  // the whole rows spread over threads: a vocab-sized sort per sampled row adds up at 64 rows.
  std::vector<std::vector<TokenEvent>> events(in_step.size());
  if (!failure) {
    const auto vocab = size_t(model.vocab_size());
    auto decide = [&](size_t i) {
      Sequence& q = *in_step[i]->seq;
      const std::span<const int32_t> draft = batch[i].tokens.subspan(1);
      for (size_t j = 0; j < size_t(batch[i].logits); ++j) {
        const int32_t guess = i < n_decode && j < draft.size() ? draft[j] : -1;
        TokenEvent& ev = events[i].emplace_back();
        if (!alive[i]) {
          ev.finish = FinishReason::Error;
          ev.error = "grammar: no token of the vocabulary continues the text (a dead end)";
          break;
        }
        if (row_of[i] == SIZE_MAX) {
          ev.token = int32_t(argmaxes[size_t(first_row[i]) + j]);
        } else {
          std::span<const float> row(logits.data() + (row_of[i] + j) * vocab, vocab);
          std::vector<float> allowed;
          if (q.matcher) {
            allowed.assign(row.begin(), row.end());
            apply_mask(allowed, masks[i]);
            row = allowed;
          }
          // Log-probabilities over the row the sampler is about to pick from (penalties applied).
          const std::vector<float> penalized = q.req.logprobs ? q.sampler->penalized(row) : std::vector<float>();
          ev.token = q.sampler->sample(row, guess);
          if (q.req.logprobs) fill_logprobs(penalized, ev.token, q.req.top_logprobs, ev);
        }
        const auto& stops = q.req.stop_tokens;
        if (q.matcher && std::find(stops.begin(), stops.end(), ev.token) == stops.end())
          WICK_CHECK(q.matcher->accept(ev.token), Internal, "grammar: sampled token ", ev.token,
                     " is not one the mask allowed");
        if (ev.token != guess) break;
      }
    };
    for (const size_t i : argmax_entries) decide(i);
    for (const size_t i : masked_entries) decide(i);
    for_rows(full_entries.size(), full_rows.size() * vocab, [&](size_t r) { decide(full_entries[r]); });
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
    // A draft's refused tokens leave the cache (their blocks are the sequence's own and not
    // yet published: publishing follows here, over the tokens kept).
    size_t kept = batch[i].tokens.size();
    if (i < n_decode && kept > 1) {
      const auto drafts = int64_t(kept - 1), accepted = int64_t(events[i].size()) - 1;
      st.drafted_tokens += uint64_t(drafts);
      st.accepted_tokens += uint64_t(accepted);
      q.pacer.kept(accepted);
      kept = size_t(1 + accepted);
      s.cache.truncate(s.cache.length() - (drafts - accepted));
      // The draft model's cache keeps what it was fed of the tokens kept.
      if (opt.speculative.draft_model) s.draft_cache.truncate(std::min(s.draft_cache.length(), s.cache.length()));
    }
    s.tokens.insert(s.tokens.end(), batch[i].tokens.begin(), batch[i].tokens.begin() + long(kept));
    // Blocks filled by this step join the prefix cache now, for requests arriving meanwhile.
    const auto B = size_t(opt.block_size);
    if (s.tokens.size() / B != (s.tokens.size() - kept) / B) publish(s);
    q.fed += chunk[i];
    st.prompt_tokens += uint64_t(chunk[i]);
    if (!q.prefilled()) continue;  // a middle chunk: its logits are not a prediction we use
    for (size_t e = 0; e < events[i].size(); ++e) {
      TokenEvent& ev = events[i][e];
      if (ev.finish == FinishReason::Error) {
        finish(s, std::move(ev), out);
        break;
      }
      if (std::find(q.req.stop_tokens.begin(), q.req.stop_tokens.end(), ev.token) != q.req.stop_tokens.end()) {
        TokenEvent stop;  // the stop token itself is not emitted
        stop.finish = FinishReason::Stop;
        finish(s, std::move(stop), out);
        break;
      }
      ++q.generated;
      ++st.generated_tokens;
      // The last token is emitted but never fed: max_tokens reached, or no position left (the
      // tokens before it, kept drafts, are in the cache already).
      const bool last = e + 1 == events[i].size();
      if (q.generated >= q.req.max_tokens || (last && s.cache.length() >= opt.ctx_size)) {
        ev.finish = FinishReason::Length;
        finish(s, std::move(ev), out);
        break;
      }
      if (last) q.next = ev.token;
      out.emplace_back(q.on_event, std::move(ev));
      if (q.matcher && q.matcher->must_end()) {
        TokenEvent stop;  // a grammar's sentence that nothing can continue
        stop.finish = FinishReason::Stop;
        finish(s, std::move(stop), out);
        break;
      }
    }
  }
  refresh_usage();
}

}  // namespace wick::serve
