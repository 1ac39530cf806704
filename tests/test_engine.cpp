// The serving engine (wick/serve/engine.h) on the CPU with the tiny fixtures: continuous
// batching gives every request exactly what it gets alone from forward() and the Sampler
// (greedy token for token, seeded sampling too; speculative requests what a one-slot engine
// gives them alone), and the limits, cancellation, shutdown, validation and
// step failures behave as the header says. EngineConcurrency (run under TSan by
// scripts/sanitize.sh) hammers submit / cancel / stats from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/cli.h"
#include "support/devices.h"
#include "support/forwarding_model.h"
#include "support/golden.h"
#include "support/llama_oracle.h"
#include "support/model_inputs.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"
#include "wick/serve/engine.h"
#include "wick/serve/generator.h"

namespace wick {
namespace {

using models::SamplingOptions;
using serve::Engine;
using serve::EngineOptions;
using serve::FinishReason;
using serve::Generator;
using serve::Request;
using serve::TokenEvent;
using namespace std::chrono_literals;

using test::lcg_tokens;

const models::LlamaModel& llama(Device device = Device::cpu()) {
  static std::map<std::string, models::LlamaModel> models;
  const std::string key = device.str();
  if (!models.count(key)) {
    models::LlamaLoadOptions o;
    o.device = device;
    o.dtype = DType::F32;
    models.emplace(key, models::LlamaModel::load(test::llama_dir("llama3"), o));
  }
  return models.at(key);
}

// What a request gives alone, computed without the engine: forward() over a cache of its
// own and the Sampler picking each token, up to max_tokens, a stop token or a full context
// (the last token sampled, not fed).
std::vector<int32_t> alone(const models::CausalLM& m, const Request& r, int64_t ctx_size = 4096) {
  models::Sampler sampler(r.sampling);
  sampler.set_prompt(r.prompt);
  const int64_t ctx = std::min(ctx_size, m.context_length());
  models::KvCache cache(ctx);
  std::vector<int64_t> feed(r.prompt.begin(), r.prompt.end());
  std::vector<int32_t> out;
  for (;;) {
    const Tensor logits = m.forward(Tensor::from_vector(feed, Shape{1, int64_t(feed.size())}), &cache, true);
    const int32_t t = sampler.sample(logits.reshape({-1}).to(Device::cpu()).to(DType::F32).to_vector<float>());
    if (std::find(r.stop_tokens.begin(), r.stop_tokens.end(), t) != r.stop_tokens.end()) break;
    out.push_back(t);
    if (int64_t(out.size()) >= r.max_tokens || cache.length() >= ctx) break;
    feed = {t};
  }
  return out;
}

// What a one-slot engine (Generator) gives a request alone with speculative decoding.
std::vector<int32_t> alone(const models::CausalLM& m, const Request& r, const models::SpeculativeOptions& spec) {
  std::vector<int32_t> out;
  Generator(m, r.sampling)
      .speculative(spec)
      .generate(
          r.prompt, r.max_tokens, [&](int32_t t) { out.push_back(t); }, r.stop_tokens);
  return out;
}

// Every request's events, by the caller's key.
class Collector {
 public:
  struct Result {
    std::vector<int32_t> tokens;
    std::vector<TokenEvent> events;
    TokenEvent last;
    int finals = 0;
  };
  Engine::OnEvent on(size_t key) {
    return [this, key](const TokenEvent& e) {
      const std::lock_guard<std::mutex> lock(mu_);
      Result& r = results_[key];
      r.events.push_back(e);
      if (e.token >= 0) r.tokens.push_back(e.token);
      if (e.finish != FinishReason::None) {
        r.last = e;
        ++r.finals;
        ++done_;
      }
      cv_.notify_all();
    };
  }
  // Waits for n final events in all (fails the test after 30 s).
  void wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, 30s, [&] { return done_ >= n; })) << done_ << " of " << n << " finished";
  }
  Result get(size_t key) {
    const std::lock_guard<std::mutex> lock(mu_);
    return results_[key];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, Result> results_;
  size_t done_ = 0;
};

Request request(std::vector<int32_t> prompt, int64_t max_tokens, SamplingOptions s = {}) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling = s;
  return r;
}

// 16 requests of different prompt lengths and budgets, 4 slots, small prefill chunks: each
// gets exactly its Generator tokens; the slots are free at the end. Every fourth request is
// greedy whatever s says.
void expect_concurrent_equal_alone(const models::CausalLM& m, const SamplingOptions& s, int64_t parallel = 4) {
  EngineOptions o;
  o.parallel = parallel;
  o.ctx_size = 64;
  o.prefill_chunk = 5;
  o.max_step_tokens = std::max<int64_t>(12, parallel);
  Engine engine(m, o);
  Collector c;
  std::vector<Request> reqs;
  for (size_t i = 0; i < 16; ++i) {
    SamplingOptions si = s;
    si.seed = s.seed + i;
    if (i % 4 == 3) si = {};  // greedy ones among the sampled: the device-argmax rows mix in
    reqs.push_back(request(lcg_tokens(1 + 3 * i % 23, m.vocab_size(), uint32_t(i)), int64_t(1 + (7 * i) % 13), si));
    ASSERT_TRUE(engine.submit(reqs.back(), c.on(i)).has_value());
  }
  c.wait(16);
  for (size_t i = 0; i < 16; ++i) {
    const auto r = c.get(i);
    EXPECT_EQ(r.tokens, alone(m, reqs[i])) << "request " << i << " " << r.last.error;
    EXPECT_EQ(r.finals, 1);
    EXPECT_EQ(r.last.finish, FinishReason::Length);
    EXPECT_EQ(r.last.completion_tokens, reqs[i].max_tokens);
    EXPECT_EQ(r.last.prompt_tokens, int64_t(reqs[i].prompt.size()));
  }
  const auto st = engine.stats();
  EXPECT_EQ(st.kv_used, 0);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.finished, 16u);
  EXPECT_LE(st.last_step_tokens, o.max_step_tokens);
  EXPECT_LT(st.steps, st.generated_tokens);  // the requests did share steps
}

TEST(Engine, GreedyConcurrentRequestsEqualGeneratorAlone) {
  expect_concurrent_equal_alone(llama(), {});
  expect_concurrent_equal_alone(models::LlamaModel::load(test::data_path("gpt2/tiny2l")), {});
}

TEST(Engine, SeededSamplingEqualsGeneratorWithTheSeed) {
  SamplingOptions s;
  s.temperature = 0.9;
  s.top_k = 40;
  s.top_p = 0.95;
  s.repetition_penalty = 1.1;
  s.frequency_penalty = 0.3;
  s.seed = 1234;
  expect_concurrent_equal_alone(llama(), s);
  // 16 slots: enough sampled rows per step that they are sampled on several threads.
  expect_concurrent_equal_alone(llama(), s, 16);
}

TEST(Engine, StopTokensMaxTokensAndAFullContext) {
  const auto& m = llama();
  EngineOptions o;
  o.parallel = 2;
  o.ctx_size = 24;
  Engine engine(m, o);
  EXPECT_EQ(engine.options().ctx_size, 24);
  const std::vector<int32_t> prompt = lcg_tokens(14, m.vocab_size(), 99);
  const std::vector<int32_t> greedy = alone(m, request(prompt, 10));
  Collector c;
  Request stop = request(prompt, 10);
  stop.stop_tokens = {greedy[3]};  // generation ends before the first occurrence
  const size_t first = size_t(std::find(greedy.begin(), greedy.end(), greedy[3]) - greedy.begin());
  ASSERT_TRUE(engine.submit(stop, c.on(0)));
  ASSERT_TRUE(engine.submit(request(prompt, 10), c.on(1)));  // 14 + 10 = ctx_size: all of the context
  c.wait(2);
  const auto s = c.get(0);
  EXPECT_EQ(s.tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + long(first)));
  EXPECT_EQ(s.last.finish, FinishReason::Stop);
  EXPECT_EQ(s.last.token, -1);
  EXPECT_EQ(s.last.completion_tokens, int64_t(first));
  const auto l = c.get(1);
  EXPECT_EQ(l.tokens, greedy);
  EXPECT_EQ(l.last.finish, FinishReason::Length);
  EXPECT_EQ(l.last.token, greedy.back());  // the final event carries the last token
  try {
    (void)engine.submit(request(prompt, 11), c.on(2));  // one past the context
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_tokens 11 exceed ctx_size 24"), std::string::npos) << e.what();
  }
  // The context clamps to the model's.
  o.ctx_size = 1 << 20;
  EXPECT_EQ(Engine(m, o).options().ctx_size, m.context_length());
}

TEST(Engine, LogprobsAreTheLogSoftmaxOfTheLogits) {
  const auto& m = llama();
  Engine engine(m, {});
  Collector c;
  Request r = request(lcg_tokens(6, m.vocab_size(), 5), 3);
  r.logprobs = true;
  r.top_logprobs = 5;
  ASSERT_TRUE(engine.submit(r, c.on(0)));
  c.wait(1);
  const auto got = c.get(0);
  ASSERT_EQ(got.events.size(), 3u);
  // The first token's row: the prompt's last logits.
  const auto row = m.forward(test::llama_ids(r.prompt), nullptr, true).reshape({m.vocab_size()}).to_vector<float>();
  double mx = -INFINITY, sum = 0;
  for (float x : row) mx = std::max(mx, double(x));
  for (float x : row) sum += std::exp(double(x) - mx);
  const TokenEvent& e = got.events[0];
  EXPECT_NEAR(e.logprob, double(row[size_t(e.token)]) - mx - std::log(sum), 1e-4);
  for (const TokenEvent& ev : got.events) {
    ASSERT_EQ(ev.top.size(), 5u);
    EXPECT_EQ(ev.top[0].token, ev.token);  // greedy: the most likely one
    EXPECT_FLOAT_EQ(ev.top[0].logprob, ev.logprob);
    for (size_t k = 1; k < 5; ++k) EXPECT_GE(ev.top[k - 1].logprob, ev.top[k].logprob);
  }
}

// Prefix-cache tests: small contexts in blocks of 4 positions, so that a few tokens fill blocks.
EngineOptions blocks_of_4(int64_t parallel) {
  EngineOptions o;
  o.parallel = parallel;
  o.ctx_size = 64;
  o.block_size = 4;
  return o;
}

// A prompt that continues a finished conversation reuses the full blocks it left in the
// prefix cache and still gives Generator's tokens; the same prompt again recomputes only
// what follows its last full block before its last token; an unrelated prompt reuses nothing.
TEST(Engine, APromptSharingAFinishedPrefixReusesItsBlocks) {
  const auto& m = llama();
  EngineOptions o = blocks_of_4(1);
  Engine engine(m, o);
  Collector c;
  const Request first = request(lcg_tokens(10, m.vocab_size(), 21), 5);
  ASSERT_TRUE(engine.submit(first, c.on(0)));
  c.wait(1);
  const auto answer = c.get(0).tokens;
  ASSERT_EQ(answer.size(), 5u);
  EXPECT_EQ(c.get(0).last.cached_tokens, 0);
  // The cache held the prompt and the four answer tokens that were fed back: 14 positions,
  // three full blocks of 4.
  std::vector<int32_t> next = first.prompt;
  next.insert(next.end(), answer.begin(), answer.end());
  for (int32_t t : lcg_tokens(3, m.vocab_size(), 22)) next.push_back(t);
  const Request second = request(next, 6);
  ASSERT_TRUE(engine.submit(second, c.on(1)));
  c.wait(2);
  EXPECT_EQ(c.get(1).tokens, alone(m, second));
  EXPECT_EQ(c.get(1).last.cached_tokens, 12);
  EXPECT_EQ(c.get(1).last.prompt_tokens, int64_t(next.size()));
  ASSERT_TRUE(engine.submit(second, c.on(2)));
  c.wait(3);
  EXPECT_EQ(c.get(2).tokens, c.get(1).tokens);
  EXPECT_EQ(c.get(2).last.cached_tokens, 16);  // the blocks wholly before its 18th token
  const Request other = request(lcg_tokens(7, m.vocab_size(), 23), 3);
  ASSERT_TRUE(engine.submit(other, c.on(3)));
  c.wait(4);
  EXPECT_EQ(c.get(3).tokens, alone(m, other));
  EXPECT_EQ(c.get(3).last.cached_tokens, 0);
  const auto st = engine.stats();
  EXPECT_EQ(st.cached_prompt_tokens, uint64_t(12 + 16));
  EXPECT_EQ(st.prefix_hit_tokens, uint64_t(12 + 16));
  EXPECT_EQ(st.prefix_query_tokens, uint64_t(9 + 17 + 17 + 6));  // each prompt but its last token
  EXPECT_EQ(st.prompt_tokens, uint64_t(10 + (18 - 12) + (18 - 16) + 7));
  EXPECT_EQ(st.kv_used, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);  // what the prefix cache keeps is free to evict
  EXPECT_GT(st.kv_blocks_cached, 0);
}

// With one sequence at a time, a prompt seen two requests earlier is still found (a slot's
// own cache would have lost it to the request between), and gives the same greedy tokens.
TEST(Engine, ThePrefixCacheServesAPromptSeenRequestsEarlier) {
  const auto& m = llama();
  EngineOptions o = blocks_of_4(1);
  Engine engine(m, o);
  Collector c;
  const Request a = request(lcg_tokens(21, m.vocab_size(), 31), 4), b = request(lcg_tokens(13, m.vocab_size(), 32), 4);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(engine.submit(i == 1 ? b : a, c.on(i)));
    c.wait(i + 1);
  }
  EXPECT_EQ(c.get(0).tokens, alone(m, a));
  EXPECT_EQ(c.get(1).tokens, alone(m, b));
  EXPECT_EQ(c.get(2).tokens, c.get(0).tokens);
  EXPECT_EQ(c.get(2).last.cached_tokens, 20);
}

// Two requests with one prompt, the second arriving while the first decodes: it takes the
// blocks the first published (shared, not copied) and both answer as Generator does.
TEST(Engine, ConcurrentRequestsWithOnePromptShareItsBlocks) {
  const auto& m = llama();
  EngineOptions o = blocks_of_4(2);
  Engine engine(m, o);
  Collector c;
  const Request a = request(lcg_tokens(24, m.vocab_size(), 41), 30), b = request(a.prompt, 3);
  ASSERT_TRUE(engine.submit(a, c.on(0)));
  while (engine.stats().generated_tokens < 1) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(engine.submit(b, c.on(1)));
  c.wait(2);
  EXPECT_EQ(c.get(0).tokens, alone(m, a));
  EXPECT_EQ(c.get(1).tokens, alone(m, b));
  EXPECT_EQ(c.get(1).last.cached_tokens, 20);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

// A pool smaller than parallel x ctx_size: requests wait for blocks, a sequence that
// outgrows the pool ends with `length` (its tokens Generator's so far), a prompt larger than
// the pool is refused at submit, and every block comes back.
TEST(Engine, ASmallBlockPoolMakesRequestsWaitOrEndWithLength) {
  const auto& m = llama();
  EngineOptions o = blocks_of_4(2);
  o.kv_blocks = 6;
  // No engine thread: all four requests are queued before the first step (with a thread, the
  // first could run alone and take the blocks the others were meant to wait for).
  o.thread = false;
  Engine engine(m, o);
  Collector c;
  std::vector<Request> reqs;
  for (size_t i = 0; i < 4; ++i) {
    reqs.push_back(request(lcg_tokens(9 + i, m.vocab_size(), uint32_t(50 + i)), i % 2 ? 3 : 30));
    ASSERT_TRUE(engine.submit(reqs.back(), c.on(i)));
  }
  EXPECT_THROW((void)engine.submit(request(lcg_tokens(25, m.vocab_size(), 60), 1), c.on(9)), Error);
  engine.run_until_idle();
  c.wait(4);
  for (size_t i = 0; i < 4; ++i) {
    const auto r = c.get(i);
    ASSERT_EQ(r.finals, 1) << i;
    EXPECT_EQ(r.last.finish, FinishReason::Length) << i;
    const std::vector<int32_t> full = alone(m, reqs[i]);
    ASSERT_LE(r.tokens.size(), full.size()) << i;
    EXPECT_EQ(r.tokens, std::vector<int32_t>(full.begin(), full.begin() + long(r.tokens.size()))) << i;
    if (i % 2) EXPECT_EQ(r.tokens.size(), 3u) << i;  // short ones fit
    EXPECT_LE(int64_t(reqs[i].prompt.size() + r.tokens.size()), 6 * 4 + 1) << i;
  }
  const auto st = engine.stats();
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.kv_blocks, 6);
  EXPECT_EQ(st.failed, 0u);
}

// A callback that holds the engine thread on its first event until released: the engine's
// state is then fixed while the test looks at it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false;
  Engine::OnEvent wrap(Engine::OnEvent inner) {
    return [this, inner](const TokenEvent& e) {
      {
        std::unique_lock<std::mutex> lock(mu);
        entered = true;
        cv.notify_all();
        cv.wait(lock, [&] { return open; });
      }
      inner(e);
    };
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  void release() {
    const std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Speculative decoding in the engine: prompts that repeat a motif draft by prompt lookup from
// their first step. Each request gets exactly what Generator with the same speculative options
// gives it alone (the same drafts, so seeded sampling makes the same draws), and greedy ones
// plain decoding's tokens; refused drafts leave blocks of 4 positions mid-block and across
// block boundaries; a stop token among kept drafts ends the text there. With max_step_tokens
// leaving room for drafts only when fewer sequences decode, fewer are made and greedy output
// is the same.
TEST(Engine, SpeculativeDecodingGivesGeneratorsTokens) {
  const auto gpt2 = models::LlamaModel::load(test::data_path("gpt2/tiny2l"));
  const models::SpeculativeOptions spec{.draft_tokens = 4, .max_ngram = 3};
  for (const models::CausalLM* m : std::initializer_list<const models::CausalLM*>{&llama(), &gpt2}) {
    std::vector<Request> reqs;
    for (size_t i = 0; i < 12; ++i) {
      const std::vector<int32_t> motif = lcg_tokens(3 + i % 4, m->vocab_size(), uint32_t(40 + i));
      std::vector<int32_t> prompt;
      for (int rep = 0; rep < 4; ++rep) prompt.insert(prompt.end(), motif.begin(), motif.end());
      SamplingOptions s;
      if (i % 3 == 1) s.repetition_penalty = 1.3;  // greedy, but whole rows on the host
      if (i % 3 == 2) s = {.temperature = 0.8, .top_k = 20, .seed = 7 + i};
      reqs.push_back(request(prompt, 20, s));
      if (i == 4) reqs.back().stop_tokens = {motif[1]};
    }
    uint64_t drafted_freely = 0;
    // 2048 step tokens: drafts whenever the text repeats; 4: only where the budget leaves room;
    // 0: 2048 with speculative.max_batch 1, drafts only while one sequence decodes.
    for (const int64_t step_tokens : {int64_t(2048), int64_t(4), int64_t(0)}) {
      EngineOptions o = blocks_of_4(4);
      o.speculative = spec;
      o.max_step_tokens = step_tokens > 0 ? step_tokens : 2048;
      if (step_tokens == 0) o.speculative.max_batch = 1;
      Engine engine(*m, o);
      Collector c;
      for (size_t i = 0; i < reqs.size(); ++i) ASSERT_TRUE(engine.submit(reqs[i], c.on(i)).has_value());
      c.wait(reqs.size());
      for (size_t i = 0; i < reqs.size(); ++i) {
        const auto r = c.get(i);
        if (step_tokens == 2048)
          EXPECT_EQ(r.tokens, alone(*m, reqs[i], spec)) << "request " << i << " " << r.last.error;
        if (i % 3 != 2) EXPECT_EQ(r.tokens, alone(*m, reqs[i])) << "request " << i << ", " << step_tokens;
        EXPECT_EQ(r.finals, 1);
        EXPECT_EQ(r.last.completion_tokens, int64_t(r.tokens.size()));
      }
      const auto st = engine.stats();
      if (step_tokens == 2048) {
        EXPECT_GT(st.accepted_tokens, 0u);
        EXPECT_GE(st.drafted_tokens, st.accepted_tokens);
        drafted_freely = st.drafted_tokens;
      } else {
        // Drafts only where fewer than 4 sequences decode (the budget's rest), or where one
        // does (max_batch 1): fewer of them.
        EXPECT_LT(st.drafted_tokens, drafted_freely);
        if (step_tokens == 4) EXPECT_LE(st.last_step_tokens, 4);
      }
      EXPECT_EQ(st.kv_used, 0);
      EXPECT_EQ(st.kv_blocks_used, 0);
    }
  }
  EngineOptions o;
  o.speculative = {.draft_tokens = 65};
  EXPECT_WICK_ERROR(Engine e(llama(), o), InvalidArgument, "draft_tokens must be in [0, 64]");
  o.speculative = {.draft_tokens = 4, .draft_model = &gpt2};
  EXPECT_WICK_ERROR(Engine e(llama(), o), InvalidArgument, "the draft model's vocabulary");
  o.speculative = {.draft_tokens = 4, .max_batch = 0};
  EXPECT_WICK_ERROR(Engine e(llama(), o), InvalidArgument, "max_batch must be >= 1");
}

// Log-probabilities under speculative decoding: each emitted token's, kept draft or not,
// come from its own row of the verifying forward, as plain decoding's do from its step's.
TEST(Engine, SpeculativeLogprobsAreThoseOfPlainDecoding) {
  const auto& m = llama();
  const std::vector<int32_t> motif = lcg_tokens(4, m.vocab_size(), 77);
  std::vector<int32_t> prompt;
  for (int rep = 0; rep < 5; ++rep) prompt.insert(prompt.end(), motif.begin(), motif.end());
  Request r = request(prompt, 16);
  r.logprobs = true;
  r.top_logprobs = 3;
  std::vector<TokenEvent> got[2];
  uint64_t accepted = 0;
  for (int spec = 0; spec < 2; ++spec) {
    EngineOptions o = blocks_of_4(2);
    if (spec) o.speculative = {.draft_tokens = 4};
    Engine engine(m, o);
    Collector c;
    ASSERT_TRUE(engine.submit(r, c.on(0)).has_value());
    c.wait(1);
    got[spec] = c.get(0).events;
    if (spec) accepted = engine.stats().accepted_tokens;
  }
  EXPECT_GT(accepted, 0u);
  ASSERT_EQ(got[0].size(), got[1].size());
  for (size_t e = 0; e < got[0].size(); ++e) {
    EXPECT_EQ(got[1][e].token, got[0][e].token) << e;
    EXPECT_NEAR(got[1][e].logprob, got[0][e].logprob, 1e-4) << e;
    ASSERT_EQ(got[1][e].top.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(got[1][e].top[k].token, got[0][e].top[k].token) << e;
      EXPECT_NEAR(got[1][e].top[k].logprob, got[0][e].top[k].logprob, 1e-4) << e;
    }
  }
}

// With a draft model (the target itself, every draft kept under greedy decoding, and a q4_0
// quantization of it) each request gets what Generator with the same draft model gives it
// alone; the draft model's caches follow the kept tokens across requests reusing a slot.
TEST(Engine, ADraftModelsDraftsGiveGeneratorsTokens) {
  const auto& m = llama();
  models::LlamaLoadOptions lo;
  lo.dtype = DType::F32;
  lo.quantize = GgmlType::Q4_0;
  const auto q = models::LlamaModel::load(test::llama_dir("llama3"), lo);
  for (const models::CausalLM* drafter : std::initializer_list<const models::CausalLM*>{&m, &q}) {
    const models::SpeculativeOptions spec{.draft_tokens = 5, .draft_model = drafter};
    EngineOptions o = blocks_of_4(3);
    o.speculative = spec;
    Engine engine(m, o);
    Collector c;
    std::vector<Request> reqs;
    for (size_t i = 0; i < 8; ++i) {
      SamplingOptions s;
      if (i % 2 == 1) s = {.temperature = 0.7, .top_p = 0.9, .seed = 3 + i};
      reqs.push_back(request(lcg_tokens(5 + 2 * i, m.vocab_size(), uint32_t(60 + i)), 18, s));
      ASSERT_TRUE(engine.submit(reqs.back(), c.on(i)).has_value());
    }
    c.wait(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(c.get(i).tokens, alone(m, reqs[i], spec)) << "request " << i;
      if (i % 2 == 0) EXPECT_EQ(c.get(i).tokens, alone(m, reqs[i])) << "request " << i;
    }
    const auto st = engine.stats();
    EXPECT_GT(st.drafted_tokens, 0u);
    EXPECT_GT(st.accepted_tokens, 0u);
    EXPECT_EQ(st.kv_blocks_used, 0);
  }
}

TEST(Engine, AFullQueueRefusesAndChangesNothing) {
  const auto& m = llama();
  EngineOptions o;
  o.parallel = 1;
  o.max_queue = 1;
  Engine engine(m, o);
  Collector c;
  Gate gate;
  const auto p = lcg_tokens(4, m.vocab_size(), 1);
  ASSERT_TRUE(engine.submit(request(p, 4), gate.wrap(c.on(0))));
  gate.wait_entered();                                 // running in the one slot
  ASSERT_TRUE(engine.submit(request(p, 4), c.on(1)));  // queued
  const auto before = engine.stats();
  EXPECT_EQ(before.queued, 1);
  EXPECT_EQ(before.running, 1);
  EXPECT_FALSE(engine.submit(request(p, 4), c.on(2)).has_value());
  auto after = engine.stats();
  EXPECT_EQ(after.queued, 1);
  EXPECT_EQ(after.requests, before.requests);
  EXPECT_EQ(after.rejected, before.rejected + 1);
  gate.release();
  c.wait(2);
  EXPECT_EQ(c.get(0).tokens, c.get(1).tokens);
  EXPECT_EQ(c.get(2).finals, 0);  // never queued: no events
}

TEST(Engine, CancelFreesTheSlotAndLeavesTheOthersAlone) {
  const auto& m = llama();
  EngineOptions o;
  o.parallel = 3;
  Engine engine(m, o);
  Collector c;
  const Request keep = request(lcg_tokens(9, m.vocab_size(), 8), 20);
  std::atomic<uint64_t> victim{0};
  std::atomic<int> seen{0};
  // Cancels itself from its own callback after three tokens (cancel() is allowed there).
  auto self_cancel = [&, inner = c.on(0)](const TokenEvent& e) {
    inner(e);
    if (++seen == 3) engine.cancel(victim.load());
  };
  const auto id = engine.submit(request(lcg_tokens(30, m.vocab_size(), 2), 60), self_cancel);
  ASSERT_TRUE(id);
  victim = *id;
  ASSERT_TRUE(engine.submit(keep, c.on(1)));
  c.wait(2);
  const auto v = c.get(0);
  EXPECT_EQ(v.last.finish, FinishReason::Cancelled);
  EXPECT_EQ(v.last.token, -1);
  EXPECT_GE(v.tokens.size(), 3u);
  EXPECT_LT(v.tokens.size(), 60u);
  EXPECT_EQ(v.finals, 1);
  EXPECT_EQ(c.get(1).tokens, alone(m, keep));
  const auto st = engine.stats();
  EXPECT_EQ(st.kv_used, 0);
  EXPECT_EQ(st.cancelled, 1u);
  engine.cancel(*id);  // finished: ignored
  engine.cancel(12345);
  EXPECT_EQ(engine.stats().cancelled, 1u);
}

TEST(Engine, ShutdownWithGraceFinishesWithoutGraceCancels) {
  const auto& m = llama();
  const auto p = lcg_tokens(5, m.vocab_size(), 4);
  {
    EngineOptions o;
    o.parallel = 2;
    Engine engine(m, o);
    Collector c;
    for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(engine.submit(request(p, 6), c.on(i)));
    engine.shutdown(30s);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(c.get(i).last.finish, FinishReason::Length) << i;
    EXPECT_FALSE(engine.submit(request(p, 6), c.on(9)).has_value());  // no admissions after
    engine.shutdown(0ms);                                             // idempotent
  }
  Engine engine(m, {});
  Collector c;
  for (size_t i = 0; i < 6; ++i) ASSERT_TRUE(engine.submit(request(p, 100), c.on(i)));
  engine.shutdown(0ms);
  size_t cancelled = 0;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(c.get(i).finals, 1) << i;
    cancelled += c.get(i).last.finish == FinishReason::Cancelled;
  }
  EXPECT_GE(cancelled, 2u);  // the queued ones at least (4 slots)
}

TEST(Engine, BadRequestsAreRejectedWithTheFieldNamed) {
  const auto& m = llama();
  EngineOptions o;
  o.ctx_size = 32;
  Engine engine(m, o);
  const auto p = lcg_tokens(4, m.vocab_size(), 6);
  auto expect_rejected = [&](Request r, const std::string& field) {
    try {
      (void)engine.submit(std::move(r), [](const TokenEvent&) {});
      ADD_FAILURE() << "accepted: " << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << field;
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_rejected(request({}, 4), "prompt");
  expect_rejected(request(p, 0), "max_tokens");
  expect_rejected(request(p, INT64_MAX), "max_tokens");
  expect_rejected(request({1, 2, int32_t(m.vocab_size())}, 4), "prompt token 2");
  expect_rejected(request({-1}, 4), "prompt token 0");
  SamplingOptions s;
  s.temperature = -1;
  expect_rejected(request(p, 4, s), "temperature");
  s = {};
  s.top_p = 0;
  expect_rejected(request(p, 4, s), "top_p");
  Request r = request(p, 4);
  r.stop_tokens = {-3};
  expect_rejected(r, "stop_tokens");
  r = request(p, 4);
  r.logprobs = true;
  r.top_logprobs = 21;
  expect_rejected(r, "top_logprobs");
  const auto st = engine.stats();
  EXPECT_EQ(st.requests, 0u);
  EXPECT_EQ(st.rejected, 9u);
  EngineOptions bad;
  bad.parallel = 0;
  EXPECT_THROW(Engine(m, bad), Error);
  bad.parallel = int64_t(1) << 40;
  bad.max_step_tokens = bad.parallel;
  EXPECT_THROW(Engine(m, bad), Error);
  bad = {};
  bad.max_step_tokens = 2;
  EXPECT_THROW(Engine(m, bad), Error);
}

// A model whose forward_batch fails with OutOfMemory when a poisoned token is fed: the
// requests of that step fail, the engine keeps serving.
class Poisoned final : public test::ForwardingModel {
 public:
  using ForwardingModel::ForwardingModel;
  Tensor forward_batch(std::span<const models::BatchSequence> seqs) const override {
    for (const auto& s : seqs)
      for (int32_t t : s.tokens) WICK_CHECK(t != kPoison, OutOfMemory, "test: poisoned token");
    return m_.forward_batch(seqs);
  }
  static constexpr int32_t kPoison = 7;
};

// Generator: an engine without a thread, run on the caller's. on_token is called on the
// calling thread; returning false stops the generation there; an exception from it
// propagates and leaves the generator usable; run_until_idle is refused where a thread runs.
TEST(Engine, AGeneratorRunsTheEngineOnTheCallersThread) {
  const auto& m = llama();
  const Request r = request(lcg_tokens(40, m.vocab_size(), 77), 12);
  const std::vector<int32_t> want = alone(m, r);
  Generator g(m, {});
  std::vector<int32_t> got;
  const auto caller = std::this_thread::get_id();
  auto st = g.generate(r.prompt, r.max_tokens, [&](int32_t t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    got.push_back(t);
  });
  EXPECT_EQ(got, want);
  EXPECT_EQ(st.generated_tokens, 12);
  got.clear();
  st = g.generate(r.prompt, r.max_tokens, [&](int32_t t) {
    got.push_back(t);
    return got.size() < 4;
  });
  EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + 4));
  EXPECT_EQ(st.generated_tokens, 4);
  EXPECT_GT(st.cached_tokens, 0);  // the same prompt again: its full blocks came from the prefix cache
  EXPECT_THROW(g.generate(r.prompt, r.max_tokens, [&](int32_t) -> bool { throw std::runtime_error("caller"); }),
               std::runtime_error);
  got.clear();
  g.generate(r.prompt, r.max_tokens, [&](int32_t t) { got.push_back(t); });
  EXPECT_EQ(got, want);
  Engine threaded(m, {});
  EXPECT_THROW(threaded.run_until_idle(), Error);
}

TEST(Engine, AFailedStepFailsItsRequestsOnly) {
  const Poisoned m(llama());
  Engine engine(m, {});
  Collector c;
  ASSERT_TRUE(engine.submit(request({1, 2, Poisoned::kPoison}, 4), c.on(0)));
  c.wait(1);
  const auto bad = c.get(0);
  EXPECT_EQ(bad.last.finish, FinishReason::Error);
  EXPECT_EQ(bad.last.error_kind, ErrorKind::OutOfMemory);
  EXPECT_NE(bad.last.error.find("poisoned"), std::string::npos);
  const Request ok = request({1, 2, 3}, 4);
  ASSERT_TRUE(engine.submit(ok, c.on(1)));
  c.wait(2);
  EXPECT_EQ(c.get(1).last.finish, FinishReason::Length);
  const auto st = engine.stats();
  EXPECT_EQ(st.failed, 1u);
  EXPECT_EQ(st.kv_used, 0);
}

class EngineDevices : public test::DeviceTest {};

TEST_P(EngineDevices, AModelOnTheDeviceGivesGeneratorsTokens) {
  const auto& m = llama(dev());
  Engine engine(m, {});
  Collector c;
  std::vector<Request> reqs;
  for (size_t i = 0; i < 6; ++i) {
    reqs.push_back(request(lcg_tokens(2 + 5 * i, m.vocab_size(), uint32_t(40 + i)), int64_t(3 + i)));
    ASSERT_TRUE(engine.submit(reqs.back(), c.on(i)));
  }
  c.wait(6);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(c.get(i).tokens, alone(m, reqs[i])) << i;
}

WICK_INSTANTIATE_DEVICE_TEST(EngineDevices);

// Several threads submitting, cancelling and reading stats at once (run under TSan).
// Also with speculative decoding by a draft model (the model itself), so that TSan sees the
// draft caches and the truncation of refused positions under cancellations.
TEST(EngineConcurrency, SubmitCancelAndStatsFromManyThreads) {
  const auto m = models::LlamaModel::load(test::data_path("gpt2/tiny2l"));
  for (const models::SpeculativeOptions& spec :
       {models::SpeculativeOptions{}, models::SpeculativeOptions{.draft_tokens = 4, .draft_model = &m}}) {
    EngineOptions o;
    o.parallel = 4;
    o.max_queue = 8;
    o.speculative = spec;
    Engine engine(m, o);
    Collector c;
    std::atomic<size_t> accepted{0};
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (size_t i = 0; i < 6; ++i) {
          const size_t key = t * 100 + i;
          const auto id = engine.submit(request(lcg_tokens(3 + i, m.vocab_size(), uint32_t(key)), 8), c.on(key));
          if (!id) continue;
          ++accepted;
          if (i % 2) engine.cancel(*id);
          (void)engine.stats();
        }
      });
    for (auto& th : threads) th.join();
    c.wait(accepted.load());
    const auto st = engine.stats();
    EXPECT_EQ(st.finished + st.cancelled, accepted.load());
    EXPECT_EQ(st.kv_used, 0);
    EXPECT_EQ(st.kv_blocks_used, 0);
    if (spec.draft_model) EXPECT_GT(st.drafted_tokens, 0u);
    engine.shutdown(1s);
  }
}

// `wick batched-bench` (tools/wick-bench) on the tiny fixture, both modes, as a smoke test:
// one row per npl with llama-batched-bench's quantities (the timings are not checked).
TEST(Engine, BatchedBenchPrintsARowPerParallelCount) {
  test::CliRun bench;
  bench.program = WICK_BENCH_CLI_PATH;
  for (const char* mode : {"batch", "engine"}) {
    const auto r = test::run_cli("batched-bench --model '" + test::llama_dir("llama3").string() +
                                     "' -npp 6 -ntg 3 -npl 1,3 --json --mode " + mode,
                                 bench);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rows = nlohmann::json::parse(r.out);
    ASSERT_EQ(rows.size(), 2u) << r.out;
    EXPECT_EQ(rows[1]["npl"], 3);
    EXPECT_EQ(rows[1]["npp"], 6);
    EXPECT_GT(rows[1]["s_tg"].get<double>(), 0) << mode;
  }
  const auto bad = test::run_cli("batched-bench --model x -npl 1,zero", bench);
  EXPECT_NE(bad.code, 0);
}

}  // namespace
}  // namespace wick
