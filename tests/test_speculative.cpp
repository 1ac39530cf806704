// Speculative decoding by prompt lookup and by a draft model (models::Generator::speculative): greedy output is
// the same token for token as plain decoding, for every Llama fixture and GPT-2, with
// penalties, through a conversation's cache and up to a full cache; drafts are made and
// kept where the text repeats; sampled output has plain decoding's distribution (two-sample
// chi-square over 1500 seeds on the tiny Llama); bad options are InvalidArgument.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/golden.h"
#include "support/llama_oracle.h"
#include "support/model_inputs.h"
#include "support/thrown.h"
#include "wick/models/generate.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

using models::Generator;
using models::SamplingOptions;
using models::SpeculativeOptions;

models::LlamaModel llama(const std::string& name) {
  models::LlamaLoadOptions o;
  o.dtype = DType::F32;
  return models::LlamaModel::load(test::llama_dir(name), o);
}

struct Output {
  std::vector<int32_t> tokens;
  models::GenerationStats stats;
};

Output generate(const models::CausalLM& m, const SamplingOptions& s, const SpeculativeOptions& spec,
                const std::vector<int32_t>& prompt, int64_t n, models::KvCache* cache = nullptr) {
  Output r;
  r.stats = Generator(m, s).speculative(spec).generate(
      prompt, n, [&](int32_t t) { r.tokens.push_back(t); }, {}, cache);
  return r;
}

// A prompt that repeats itself, so that lookups find drafts from the first step.
std::vector<int32_t> repetitive(int64_t vocab, uint32_t seed) {
  const std::vector<int32_t> motif = test::lcg_tokens(5, vocab, seed);
  std::vector<int32_t> p;
  for (int i = 0; i < 4; ++i) p.insert(p.end(), motif.begin(), motif.end());
  return p;
}

void expect_greedy_same(const models::CausalLM& m, const std::string& what, int64_t& drafted, int64_t& accepted) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<int32_t> prompt = repetitive(m.vocab_size(), seed);
    for (const SamplingOptions& s : {SamplingOptions{}, SamplingOptions{.repetition_penalty = 1.3}}) {
      const Output plain = generate(m, s, {}, prompt, 24);
      for (int64_t k : {1, 4, 8}) {
        const Output spec = generate(m, s, {.draft_tokens = k, .max_ngram = 3}, prompt, 24);
        EXPECT_EQ(spec.tokens, plain.tokens)
            << what << " seed " << seed << " k " << k << " rp " << s.repetition_penalty;
        EXPECT_EQ(spec.stats.generated_tokens, plain.stats.generated_tokens);
        EXPECT_LE(spec.stats.accepted_tokens, spec.stats.drafted_tokens);
        drafted += spec.stats.drafted_tokens;
        accepted += spec.stats.accepted_tokens;
      }
    }
  }
}

TEST(Speculative, GreedyOutputIsPlainDecodingsForEveryFixture) {
  int64_t drafted = 0, accepted = 0;
  for (const auto& name : test::llama_fixtures()) expect_greedy_same(llama(name), name, drafted, accepted);
  expect_greedy_same(models::Gpt2Model::load(test::data_path("gpt2/tiny2l"), Device::cpu()), "gpt2", drafted, accepted);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0);  // random weights loop often: some drafts are kept
}

// A conversation's cache: the second turn continues the cache, and the cache is left
// holding the same positions (every token fed but the last) as after plain decoding.
TEST(Speculative, ThroughACacheAndUpToAFullOne) {
  const auto m = llama("llama3");
  const std::vector<int32_t> first = repetitive(m.vocab_size(), 7), second = repetitive(m.vocab_size(), 8);
  models::KvCache a(64), b(64);
  const Output p1 = generate(m, {}, {}, first, 10, &a);
  const Output s1 = generate(m, {}, {.draft_tokens = 6}, first, 10, &b);
  EXPECT_EQ(s1.tokens, p1.tokens);
  EXPECT_EQ(b.length(), a.length());
  // The second turn fills the cache: generation ends at its capacity either way.
  const Output p2 = generate(m, {}, {}, second, 1000, &a);
  const Output s2 = generate(m, {}, {.draft_tokens = 6}, second, 1000, &b);
  EXPECT_EQ(s2.tokens, p2.tokens);
  EXPECT_EQ(b.length(), a.length());
  EXPECT_EQ(a.length(), 64);
  // A draft model through the same two turns: its own cache starts at each call's prompt.
  models::KvCache c(64);
  EXPECT_EQ(generate(m, {}, {.draft_tokens = 3, .draft_model = &m}, first, 10, &c).tokens, p1.tokens);
  EXPECT_EQ(generate(m, {}, {.draft_tokens = 3, .draft_model = &m}, second, 1000, &c).tokens, p2.tokens);
  EXPECT_EQ(c.length(), 64);
}

// Sampling: the tokens at positions 2, 4 and 6 of the output (where verification decides)
// have the same distribution with and without drafts. Two-sample chi-square over the tokens
// seen at least 10 times in all; 1500 seeds each; the bound is the 0.999 quantile. (Keeping a
// draft with probability 2p instead of p fails it.)
TEST(Speculative, SampledOutputHasPlainDecodingsDistribution) {
  const auto m = llama("llama3");
  const std::vector<int32_t> prompt = repetitive(m.vocab_size(), 11);
  for (size_t at : {size_t(2), size_t(4), size_t(6)}) {
    std::map<int32_t, std::pair<int, int>> counts;
    int64_t accepted = 0;
    const int n = 1500;
    for (int seed = 0; seed < n; ++seed) {
      // Peaked enough that drafts are often kept (~17%), not so much that they always are.
      const SamplingOptions s{.temperature = 1.0, .top_k = 3, .seed = uint64_t(seed)};
      ++counts[generate(m, s, {}, prompt, 8).tokens.at(at)].first;
      const Output spec = generate(m, s, {.draft_tokens = 4}, prompt, 8);
      ++counts[spec.tokens.at(at)].second;
      accepted += spec.stats.accepted_tokens;
    }
    double chi2 = 0;
    int bins = 0, rest_a = 0, rest_b = 0;
    for (const auto& [tok, c] : counts) {
      if (c.first + c.second < 10) {
        rest_a += c.first, rest_b += c.second;
        continue;
      }
      chi2 += std::pow(c.first - c.second, 2) / (c.first + c.second);
      ++bins;
    }
    if (rest_a + rest_b > 0) chi2 += std::pow(rest_a - rest_b, 2) / (rest_a + rest_b), ++bins;
    // The 0.999 quantile of chi-square with df = bins - 1, by Wilson-Hilferty.
    const double df = bins - 1, z = 3.09;
    const double bound = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
    EXPECT_LT(chi2, bound) << "position " << at << ", " << bins << " bins";
    EXPECT_GT(accepted, 0) << "position " << at;  // the drafts did take part
  }
}

// A draft model: the target drafting for itself keeps every draft; quantized copies (q4_0)
// keep some; the output is plain decoding's either way, with penalties too.
TEST(Speculative, ADraftModelsDraftsGiveTheSameOutput) {
  int64_t quant_kept = 0;
  for (const auto& name : test::llama_fixtures()) {
    SCOPED_TRACE(name);
    const auto m = llama(name);
    models::LlamaLoadOptions o;
    o.dtype = DType::F32;
    o.quantize = GgmlType::Q4_0;
    const auto q = models::LlamaModel::load(test::llama_dir(name), o);
    const std::vector<int32_t> prompt = test::lcg_tokens(9, m.vocab_size(), 21);
    for (const SamplingOptions& s : {SamplingOptions{}, SamplingOptions{.repetition_penalty = 1.3}}) {
      const Output plain = generate(m, s, {}, prompt, 20);
      const Output self = generate(m, s, {.draft_tokens = 5, .draft_model = &m}, prompt, 20);
      EXPECT_EQ(self.tokens, plain.tokens);
      EXPECT_GT(self.stats.drafted_tokens, 0);
      if (s.repetition_penalty == 1) EXPECT_EQ(self.stats.accepted_tokens, self.stats.drafted_tokens);
      const Output quant = generate(m, s, {.draft_tokens = 5, .draft_model = &q}, prompt, 20);
      EXPECT_EQ(quant.tokens, plain.tokens);
      quant_kept += quant.stats.accepted_tokens;
    }
  }
  EXPECT_GT(quant_kept, 0);  // q4_0 rounding moves some argmaxes of these tiny models, not all
  // A draft model of another vocabulary is refused.
  const auto m = llama("llama3");
  const auto gpt2 = models::Gpt2Model::load(test::data_path("gpt2/tiny2l"), Device::cpu());
  Generator g(m, {});
  EXPECT_EQ(test::thrown_kind([&] { g.speculative({.draft_tokens = 4, .draft_model = &gpt2}); }),
            ErrorKind::InvalidArgument);
}

TEST(Speculative, BadOptionsAreRejected) {
  const auto m = llama("llama3");
  Generator g(m, {});
  for (const SpeculativeOptions& bad : {SpeculativeOptions{.draft_tokens = -1}, SpeculativeOptions{.draft_tokens = 65},
                                        SpeculativeOptions{.draft_tokens = 4, .max_ngram = 0}})
    EXPECT_EQ(test::thrown_kind([&] { g.speculative(bad); }), ErrorKind::InvalidArgument);
}

}  // namespace
}  // namespace wick
