// Sampling, speculative drafting and UTF-8 streaming for any CausalLM (the loop is serve::Engine's).
#include "wick/models/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "wick/error.h"
#include "wick/ops.h"

namespace wick::models {

void check_sampling_options(const SamplingOptions& opt) {
  // Written as "in range" tests so that NaN, which compares false with everything, fails.
  const bool temperature_ok =
      opt.temperature == 0 || (opt.temperature >= kMinTemperature && std::isfinite(opt.temperature));
  WICK_CHECK(temperature_ok, InvalidArgument,
             "generate: temperature must be >= 0: 0 (greedy) or a finite number >= ", kMinTemperature, ", got ",
             opt.temperature);
  WICK_CHECK(opt.top_k >= 0, InvalidArgument, "generate: top_k must be >= 0 (0: all tokens), got ", opt.top_k);
  WICK_CHECK(opt.top_p > 0 && opt.top_p <= 1, InvalidArgument, "generate: top_p must be in (0, 1], got ", opt.top_p);
  WICK_CHECK(opt.min_p >= 0 && opt.min_p <= 1, InvalidArgument, "generate: min_p must be in [0, 1], got ", opt.min_p);
  WICK_CHECK(opt.repetition_penalty > 0 && std::isfinite(opt.repetition_penalty), InvalidArgument,
             "generate: repetition_penalty must be a finite number > 0 (1: off), got ", opt.repetition_penalty);
  for (const auto& [id, bias] : opt.logit_bias) {
    WICK_CHECK(id >= 0, InvalidArgument, "generate: logit_bias token ids must be >= 0, got ", id);
    WICK_CHECK(std::isfinite(bias) && bias >= -100 && bias <= 100, InvalidArgument, "generate: logit_bias of token ",
               id, " must be in [-100, 100], got ", bias);
  }
  WICK_CHECK(opt.presence_penalty >= -2 && opt.presence_penalty <= 2, InvalidArgument,
             "generate: presence_penalty must be in [-2, 2], got ", opt.presence_penalty);
  WICK_CHECK(opt.frequency_penalty >= -2 && opt.frequency_penalty <= 2, InvalidArgument,
             "generate: frequency_penalty must be in [-2, 2], got ", opt.frequency_penalty);
}

void check_generation_options(const SamplingOptions& opt, int64_t max_new_tokens, int64_t context) {
  check_sampling_options(opt);
  WICK_CHECK(max_new_tokens >= 1 && max_new_tokens <= context, InvalidArgument,
             "generate: max_tokens must be between 1 and ", context, " (the model's context is ", context,
             " tokens), got ", max_new_tokens);
}

Sampler::Sampler(const SamplingOptions& opt) : opt_(opt), rng_(opt.seed) { check_sampling_options(opt); }

void Sampler::set_prompt(std::span<const int32_t> prompt) { seen_.assign(prompt.begin(), prompt.end()); }

void Sampler::apply_penalties(std::vector<float>& logits) const {
  const auto n = int64_t(logits.size());
  auto in_vocab = [&](int32_t id) { return id >= 0 && id < n; };
  if (opt_.repetition_penalty != 1) {
    std::vector<bool> done(logits.size());  // each distinct token once, as transformers' gather/scatter
    const auto r = float(opt_.repetition_penalty);
    for (int32_t id : seen_) {
      if (!in_vocab(id) || done[size_t(id)]) continue;
      done[size_t(id)] = true;
      float& l = logits[size_t(id)];
      l = l < 0 ? l * r : l / r;
    }
  }
  if (opt_.presence_penalty != 0 || opt_.frequency_penalty != 0) {
    std::vector<int32_t> count(logits.size());
    for (int32_t id : generated_)
      if (in_vocab(id)) ++count[size_t(id)];
    for (size_t i = 0; i < logits.size(); ++i)
      if (count[i] > 0) logits[i] -= float(opt_.presence_penalty + opt_.frequency_penalty * double(count[i]));
  }
  for (const auto& [id, bias] : opt_.logit_bias) {
    WICK_CHECK(in_vocab(id), InvalidArgument, "sampler: logit_bias token id ", id, " is outside the vocabulary (", n,
               " tokens)");
    logits[size_t(id)] += float(bias);
  }
}

std::vector<float> Sampler::penalized(std::span<const float> logits) const {
  std::vector<float> out(logits.begin(), logits.end());
  if (opt_.penalized()) apply_penalties(out);
  return out;
}

int32_t Sampler::sample(std::span<const float> raw) { return sample(raw, -1); }

int32_t Sampler::sample(std::span<const float> raw, int32_t draft) {
  WICK_CHECK(!raw.empty(), InvalidArgument, "sampler: empty logits");
  std::vector<float> penalized;
  if (opt_.penalized()) {
    penalized.assign(raw.begin(), raw.end());
    apply_penalties(penalized);
    raw = penalized;
  }
  const int32_t id = pick(raw, draft);
  if (opt_.repetition_penalty != 1) seen_.push_back(id);
  if (opt_.presence_penalty != 0 || opt_.frequency_penalty != 0) generated_.push_back(id);
  return id;
}

int32_t Sampler::pick(std::span<const float> logits, int32_t draft) {
  if (opt_.temperature == 0)
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());  // first maximum, as torch

  // Candidates are cand[0, keep). Sorting is done only as far as top-k / top-p need it: a
  // full sort of GPT-2's 50257 logits per token would cost more than a small model's step.
  // (logit, id) pairs sorted in place: contiguous keys sort several times faster than ids
  // compared through the logits array.
  const size_t n = logits.size();
  std::vector<std::pair<float, int32_t>> cand(n);
  for (size_t i = 0; i < n; ++i) cand[i] = {logits[i], int32_t(i)};
  // Descending logit, ties by id: a strict order, so results never depend on the sort.
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  // Sorts cand[0, k) as the k best of cand[0, keep); a heap-based partial sort is slow for a
  // large k, so beyond a quarter of the candidates everything is sorted.
  auto sort_prefix = [&](size_t k, size_t keep) {
    if (4 * k >= keep)
      std::sort(cand.begin(), cand.begin() + long(keep), better);
    else
      std::partial_sort(cand.begin(), cand.begin() + long(k), cand.begin() + long(keep), better);
  };
  size_t keep = n;
  if (opt_.top_k > 0 && size_t(opt_.top_k) < n) {
    sort_prefix(size_t(opt_.top_k), n);
    keep = size_t(opt_.top_k);
  }
  // Unnormalized softmax(logits / temperature), in double, relative to the largest logit.
  const double top = *std::max_element(logits.begin(), logits.end());
  const double inv_t = 1.0 / opt_.temperature;
  auto weight = [&](size_t i) { return std::exp((double(cand[i].first) - top) * inv_t); };
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += weight(i);
  // Nucleus: the shortest most-likely prefix whose probability reaches top_p (at least one
  // token). Sort a prefix of k candidates, growing k until the prefix suffices.
  if (opt_.top_p < 1) {
    for (size_t k = std::min<size_t>(keep, 64);; k = std::min(4 * k, keep)) {
      sort_prefix(k, keep);
      double cum = 0;
      size_t m = 0;
      while (m < k && cum < opt_.top_p * total) cum += weight(m++);
      if (cum >= opt_.top_p * total || k == keep) {
        keep = m;
        total = cum;
        break;
      }
    }
  }
  // min-p: keep the tokens whose probability is at least min_p times the top one's (whose
  // weight is 1 relative to the largest logit), at least one. The candidates are sorted
  // as far as needed: the kept ones form a most-likely prefix.
  if (opt_.min_p > 0) {
    sort_prefix(keep, keep);
    size_t m = 1;
    while (m < keep && weight(m) >= opt_.min_p) ++m;
    keep = m;
    total = 0;
    for (size_t i = 0; i < keep; ++i) total += weight(i);
  }
  // A draft is kept with its probability w / total; else the token comes from the other
  // candidates, in proportion to their weights (the draft's weight taken out of the total).
  size_t skip = keep;  // the draft's place among the candidates, if there
  if (draft >= 0) {
    for (size_t i = 0; i < keep && skip == keep; ++i)
      if (cand[i].second == draft) skip = i;
    if (skip < keep) {
      const double w = weight(skip);
      if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total < w || total - w <= 0) return draft;
      total -= w;
    }
  }
  const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double cum = 0;
  size_t last = keep;
  for (size_t i = 0; i < keep; ++i) {
    if (i == skip) continue;
    cum += weight(i);
    last = i;
    if (u < cum) return cand[i].second;
  }
  return cand[last].second;  // u rounded up to total
}

void check_speculative_options(const SpeculativeOptions& spec) {
  constexpr int64_t kMax = 64;
  WICK_CHECK(spec.draft_tokens >= 0 && spec.draft_tokens <= kMax, InvalidArgument,
             "generate: draft_tokens must be in [0, ", kMax, "], got ", spec.draft_tokens);
  WICK_CHECK(spec.max_ngram >= 1 && spec.max_ngram <= kMax, InvalidArgument, "generate: max_ngram must be in [1, ",
             kMax, "], got ", spec.max_ngram);
  WICK_CHECK(spec.max_batch >= 1, InvalidArgument, "generate: max_batch must be >= 1, got ", spec.max_batch);
}

void check_speculative_options(const SpeculativeOptions& spec, const CausalLM& target) {
  check_speculative_options(spec);
  const CausalLM* drafter = spec.draft_model;
  WICK_CHECK(!drafter || drafter->vocab_size() == target.vocab_size(), InvalidArgument,
             "generate: the draft model's vocabulary (", drafter ? drafter->vocab_size() : 0,
             " tokens) is not the target's (", target.vocab_size(), ")");
}

std::vector<int32_t> lookup_draft(std::span<const int32_t> history, int64_t max_ngram, int64_t most) {
  const auto size = int64_t(history.size());
  for (int64_t n = std::min(max_ngram, size - 1); n >= 1 && most > 0; --n) {
    const std::span<const int32_t> tail = history.last(size_t(n));
    // Latest first: the nearest context predicts best. A match must leave a token after it.
    for (int64_t at = size - n - 1; at >= 0; --at)
      if (std::equal(tail.begin(), tail.end(), history.begin() + at)) {
        const int64_t from = at + n, count = std::min(most, size - from);
        return {history.begin() + from, history.begin() + from + count};
      }
  }
  return {};
}

namespace {
// Length of the UTF-8 sequence a lead byte announces (1 for ASCII and invalid leads).
size_t sequence_length(unsigned char b) {
  if (b >= 0xF0 && b <= 0xF4) return 4;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  return 1;
}
}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  // Hold back only a trailing lead byte whose continuation bytes have not all arrived yet.
  size_t cut = pending_.size();
  for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
    const auto b = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for its lead
    if (sequence_length(b) > back) cut = pending_.size() - back;
    break;
  }
  std::string out = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, {}); }

}  // namespace wick::models
