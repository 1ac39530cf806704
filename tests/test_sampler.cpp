// The sampler on hand-derived cases: greedy, temperature, top-k, top-p, seeds, and the
// penalties and min-p. Rules: transformers' RepetitionPenaltyLogitsProcessor (each
// distinct token seen in prompt or output: logit / r if positive, * r if negative),
// OpenAI's presence/frequency penalties (over generated tokens: logit -= presence +
// frequency * count), transformers' MinPLogitsWarper (keep p >= min_p * p_max). With a draft
// (speculative decoding's rejection sampling) the distribution is the same as without one.
#include <gtest/gtest.h>

#include <cmath>

#include "support/golden.h"
#include "wick/models/generate.h"

namespace wick {
namespace {

std::vector<int32_t> greedy_run(models::SamplingOptions opt, const std::vector<float>& logits, int steps,
                                const std::vector<int32_t>& prompt = {}) {
  models::Sampler s(opt);
  s.set_prompt(prompt);
  std::vector<int32_t> out;
  for (int i = 0; i < steps; ++i) out.push_back(s.sample(logits));
  return out;
}

TEST(Sampler, GreedyAndDegenerateSettingsPickTheArgmax) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  models::Sampler greedy({});
  EXPECT_EQ(greedy.sample(logits), 1);
  models::Sampler top1({.temperature = 5.0, .top_k = 1, .top_p = 1.0, .seed = 3});
  models::Sampler tiny_p({.temperature = 5.0, .top_k = 0, .top_p = 1e-6, .seed = 3});
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(top1.sample(logits), 1);
    EXPECT_EQ(tiny_p.sample(logits), 1);
  }
}

// Frequencies of 20000 draws against the renormalized probabilities (3 sigma ~ 0.011).
std::vector<double> frequencies(const models::SamplingOptions& opt, const std::vector<float>& logits) {
  models::Sampler s(opt);
  std::vector<double> f(logits.size());
  const int n = 20000;
  for (int i = 0; i < n; ++i) f[size_t(s.sample(logits))] += 1.0 / n;
  return f;
}

TEST(Sampler, DistributionsFollowTemperatureTopKAndTopP) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  auto f = frequencies({.temperature = 1.0, .top_k = 0, .top_p = 1.0, .seed = 1}, logits);
  EXPECT_NEAR(f[0], 0.5, 0.015);
  EXPECT_NEAR(f[1], 0.3, 0.015);
  EXPECT_NEAR(f[2], 0.2, 0.015);
  // Temperature 2: p ~ sqrt(p) = .707, .548, .447 -> .413, .326, .261 after normalizing.
  f = frequencies({.temperature = 2.0, .top_k = 0, .top_p = 1.0, .seed = 2}, logits);
  const double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.2);
  EXPECT_NEAR(f[0], std::sqrt(0.5) / z, 0.015);
  EXPECT_NEAR(f[2], std::sqrt(0.2) / z, 0.015);
  f = frequencies({.temperature = 1.0, .top_k = 2, .top_p = 1.0, .seed = 3}, logits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_EQ(f[2], 0.0);
  // top_p 0.7: 0.5 < 0.7 <= 0.5 + 0.3, so the first two.
  f = frequencies({.temperature = 1.0, .top_k = 0, .top_p = 0.7, .seed = 4}, logits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_EQ(f[2], 0.0);
}

// sample(logits, draft): keep the draft with probability p(draft), else draw from the rest
// in proportion: the token's distribution is p whatever the draft (in the candidates, cut by
// top-k, or none), 20000 draws each.
TEST(SamplerDraft, KeepsTheDistributionWhateverTheDraft) {
  const std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  for (const auto& [top_k, want] : {std::pair{int64_t(0), std::vector<double>{0.4, 0.3, 0.2, 0.1}},
                                    std::pair{int64_t(2), std::vector<double>{4.0 / 7, 3.0 / 7, 0, 0}}})
    for (const int32_t draft : {0, 1, 3, -1}) {
      SCOPED_TRACE("top_k " + std::to_string(top_k) + ", draft " + std::to_string(draft));
      models::Sampler s({.temperature = 1.0, .top_k = top_k, .top_p = 1.0, .seed = uint64_t(10 + draft)});
      std::vector<double> f(logits.size());
      const int n = 20000;
      int kept = 0;
      for (int i = 0; i < n; ++i) {
        const int32_t t = s.sample(logits, draft);
        f[size_t(t)] += 1.0 / n;
        kept += t == draft;
      }
      for (size_t t = 0; t < f.size(); ++t) EXPECT_NEAR(f[t], want[t], 0.015) << t;
      if (draft >= 0) EXPECT_NEAR(double(kept) / n, want[size_t(draft)], 0.015);
    }
  // Greedy: the argmax, the draft kept only when it is the argmax.
  models::Sampler greedy({});
  EXPECT_EQ(greedy.sample(logits, 2), 0);
  EXPECT_EQ(greedy.sample(logits, 0), 0);
  // A draft the distribution cannot pick (p = 1 elsewhere) is never kept.
  models::Sampler certain({.temperature = 1.0, .top_k = 1, .top_p = 1.0, .seed = 5});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(certain.sample(logits, 3), 0);
}

TEST(Sampler, SeedsReproduceAndDiffer) {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(std::sin(double(i)));
  auto draw = [&](uint64_t seed) {
    models::Sampler s({.temperature = 1.0, .top_k = 50, .top_p = 0.95, .seed = seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 30; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, BadOptions) {
  EXPECT_WICK_ERROR(models::Sampler({.temperature = -1.0}), InvalidArgument, "temperature must be >= 0");
  EXPECT_WICK_ERROR(models::Sampler({.temperature = 1.0, .top_k = -2}), InvalidArgument, "top_k must be >= 0");
  EXPECT_WICK_ERROR(models::Sampler({.temperature = 1.0, .top_k = 0, .top_p = 0.0}), InvalidArgument,
                    "top_p must be in (0, 1]");
}

TEST(SamplerPenalties, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  // Prompt {3}: 3.0 / 4 = 0.75 < 2.0, so token 0 wins; then 0 is seen too: 0.5 / 4 = 0.125,
  // 2.0 / 4 = 0.5 and 0.75: token 3 again (it stays at 0.75: once per distinct token).
  EXPECT_EQ(greedy_run({.repetition_penalty = 4.0}, {2.0f, -1.0f, 0.5f, 3.0f}, 2, {3}), (std::vector<int32_t>{0, 3}));
  // Negative logits grow more negative: -0.1 * 5 = -0.5 < -0.3.
  EXPECT_EQ(greedy_run({.repetition_penalty = 5.0}, {-0.5f, -0.1f, -0.3f}, 1, {1}), (std::vector<int32_t>{2}));
  // Without the penalty the prompt does not matter.
  EXPECT_EQ(greedy_run({}, {-0.5f, -0.1f, -0.3f}, 1, {1}), (std::vector<int32_t>{1}));
}

TEST(SamplerPenalties, PresenceCountsDistinctGeneratedTokensAndFrequencyEachOccurrence) {
  // Presence 1.5 over {1.0, 0.9, 0.0}: 0; then 0 -> -0.5: 1; then 1 -> -0.6: 2; then 2 ->
  // -1.5: 0 (-0.5 is the largest), and 0 stays at -0.5 however often it comes.
  EXPECT_EQ(greedy_run({.presence_penalty = 1.5}, {1.0f, 0.9f, 0.0f}, 5, {0, 0, 0}),
            (std::vector<int32_t>{0, 1, 2, 0, 0}));
  // Frequency 0.3 over {1.0, 0.5}: 1.0 > .5; .7 > .5; .4 < .5; .4 > .2; .1 < .2; .1 > -.1.
  // The prompt does not count for either.
  EXPECT_EQ(greedy_run({.frequency_penalty = 0.3}, {1.0f, 0.5f}, 6, {0, 0, 0}),
            (std::vector<int32_t>{0, 0, 1, 0, 1, 0}));
}

TEST(SamplerMinP, KeepsTokensAtLeastMinPTimesTheMostLikely) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  // min_p 0.5: p >= 0.25 -> {0.5, 0.3}, renormalized 0.625 / 0.375 (3 sigma of 20000 ~ 0.011).
  auto f = frequencies({.temperature = 1.0, .min_p = 0.5, .seed = 5}, logits);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  EXPECT_EQ(f[2] + f[3], 0.0);
  // min_p 0.2: p >= 0.1 -> the first three (0.15 / 0.95 for the third).
  f = frequencies({.temperature = 1.0, .min_p = 0.2, .seed = 6}, logits);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.015);
  EXPECT_EQ(f[3], 0.0);
  // Temperature first: at T = 2 the ratios are square roots (0.3/0.5 -> 0.775, 0.05/0.5 -> 0.316),
  // so min_p 0.5 keeps three: sqrt(.5), sqrt(.3), sqrt(.15) renormalized.
  f = frequencies({.temperature = 2.0, .min_p = 0.5, .seed = 7}, logits);
  const double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.15);
  EXPECT_NEAR(f[2], std::sqrt(0.15) / z, 0.015);
  EXPECT_EQ(f[3], 0.0);
  // min_p 1 keeps only the most likely token.
  f = frequencies({.temperature = 1.0, .min_p = 1.0, .seed = 8}, logits);
  EXPECT_EQ(f[1] + f[2] + f[3], 0.0);
}

TEST(SamplerOptions, BadPenaltiesAndMinPAreRejected) {
  EXPECT_WICK_ERROR(models::Sampler({.min_p = 1.5}), InvalidArgument, "min_p must be in [0, 1]");
  EXPECT_WICK_ERROR(models::Sampler({.min_p = -0.1}), InvalidArgument, "min_p must be in [0, 1]");
  EXPECT_WICK_ERROR(models::Sampler({.repetition_penalty = 0.0}), InvalidArgument,
                    "repetition_penalty must be a finite number > 0");
  EXPECT_WICK_ERROR(models::Sampler({.repetition_penalty = NAN}), InvalidArgument, "repetition_penalty");
  EXPECT_WICK_ERROR(models::Sampler({.presence_penalty = 2.5}), InvalidArgument, "presence_penalty must be in [-2, 2]");
  EXPECT_WICK_ERROR(models::Sampler({.frequency_penalty = NAN}), InvalidArgument, "frequency_penalty");
}

// OpenAI's logit_bias: added to the token's logit after the penalties, before the rest, so
// under greedy decoding too.
TEST(SamplerLogitBias, ShiftsTheLogitsItNames) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  models::SamplingOptions opt;
  opt.logit_bias = {{1, -100.0}};  // bans the argmax: 3 (1.9) is next
  EXPECT_EQ(greedy_run(opt, logits, 2), (std::vector<int32_t>{3, 3}));
  opt.logit_bias = {{2, 3.5}};  // -1 + 3.5 = 2.5 beats 2.0
  EXPECT_EQ(greedy_run(opt, logits, 1), std::vector<int32_t>{2});
  opt.logit_bias = {{2, 2.9}};  // 1.9 does not
  EXPECT_EQ(greedy_run(opt, logits, 1), std::vector<int32_t>{1});
  // After the penalties: presence 2 takes token 1 to 0.0 after its first pick, and the bias
  // of 0.15 on token 0 then makes it 0.25, above 0.0 but below 3's 1.9.
  opt = {.presence_penalty = 2.0};
  opt.logit_bias = {{0, 0.15}};
  EXPECT_EQ(greedy_run(opt, logits, 3), (std::vector<int32_t>{1, 3, 0}));
  // What the logits are before sampling, as a server reports log-probabilities over them.
  models::SamplingOptions shift;
  shift.logit_bias = {{0, 1.0}, {3, -0.5}};
  EXPECT_EQ(models::Sampler(shift).penalized(logits), (std::vector<float>{1.1f, 2.0f, -1.0f, 1.4f}));
}

TEST(SamplerLogitBias, BadBiasesAreRejected) {
  models::SamplingOptions opt;
  opt.logit_bias = {{0, 100.5}};
  EXPECT_WICK_ERROR(models::Sampler{opt}, InvalidArgument, "logit_bias of token 0 must be in [-100, 100]");
  opt.logit_bias = {{0, NAN}};
  EXPECT_WICK_ERROR(models::Sampler{opt}, InvalidArgument, "logit_bias");
  opt.logit_bias = {{-1, 1.0}};
  EXPECT_WICK_ERROR(models::Sampler{opt}, InvalidArgument, "logit_bias token ids must be >= 0");
  opt.logit_bias = {{4, 1.0}};  // past the 4 logits
  models::Sampler s(opt);
  EXPECT_WICK_ERROR(s.sample(std::vector<float>{0, 1, 2, 3}), InvalidArgument,
                    "logit_bias token id 4 is outside the vocabulary (4 tokens)");
}

}  // namespace
}  // namespace wick
