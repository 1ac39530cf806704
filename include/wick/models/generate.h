// What autoregressive generation with any CausalLM is made of (the loop itself is the
// engine's, serve::Engine, which serve::Generator drives for one sequence): greedy decoding
// or sampling with repetition / presence / frequency penalties, temperature, top-k, top-p
// (nucleus) and min-p, reproducible from a seed; speculative drafts (prompt lookup or a
// draft model); UTF-8-safe streaming of token bytes. Sampling runs on the CPU over the
// logits row converted to f32 (vocab-sized work per token: negligible next to the forward
// pass, and identical on every device).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "wick/models/causal_lm.h"

namespace wick::models {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (argmax); otherwise logits are divided by it
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all
  double top_p = 1.0;        // keep the smallest set whose probability reaches top_p; 1: all
  double min_p = 0.0;        // drop tokens less likely than min_p x the most likely one; 0: none
  // Penalties on tokens already seen, applied to the logits before everything else (so
  // also under greedy decoding). repetition_penalty (transformers' rule: a positive logit is
  // divided by it, a negative one multiplied; 1: off) counts the prompt and the generated
  // tokens; presence (once per distinct token) and frequency (per occurrence) penalties
  // (OpenAI's rule: subtracted from the logit; 0: off) count the generated tokens only.
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  uint64_t seed = 0;
  // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to that token's logit after
  // the penalties and before everything else, so also under greedy decoding (-100 all but
  // bans a token, +100 all but forces it). A token id outside the vocabulary is an error.
  std::vector<std::pair<int32_t, double>> logit_bias;

  // Whether the logits are changed before temperature / top-k / top-p / min-p.
  bool penalized() const {
    return repetition_penalty != 1 || presence_penalty != 0 || frequency_penalty != 0 || !logit_bias.empty();
  }
};

// The smallest temperature other than 0 that sampling accepts. Below it 1/T is so large
// that the weights exp((logit - max) / T) are 0 for every token but the most likely one
// (greedy in all but name), and near 1e-308 1/T overflows to infinity and the weights turn
// into NaN. A smaller value is rejected rather than silently treated as greedy: 0 says so.
inline constexpr double kMinTemperature = 1e-4;

// Checks sampling options and a generation length, once, before any work: temperature is 0
// (greedy) or finite and >= kMinTemperature; top_k >= 0; top_p in (0, 1]; min_p in [0, 1];
// repetition_penalty finite and > 0; presence/frequency penalties finite and in [-2, 2]
// (OpenAI's range); max_new_tokens in [1, context] where context is the model's context
// length (more could never be produced).
// NaN fails every check. Throws ErrorKind::InvalidArgument with a message that starts with
// "generate:" and names the option and the bounds.
void check_sampling_options(const SamplingOptions& opt);
void check_generation_options(const SamplingOptions& opt, int64_t max_new_tokens, int64_t context);

// Picks token ids from logits rows. Order as in Hugging Face: penalties, temperature,
// top-k, top-p, min-p.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& opt);
  // The prompt's tokens count for the repetition penalty.
  void set_prompt(std::span<const int32_t> prompt);
  // Picks the next token, then remembers it for the penalties.
  int32_t sample(std::span<const float> logits);
  // The same given a drafted guess (speculative decoding): under greedy decoding the argmax
  // (the draft is accepted when it is the argmax); otherwise the draft with its probability
  // p(draft) under the distribution sample() draws from, else a token drawn from the others
  // in proportion to theirs: rejection sampling against a draft that is certain of its
  // guess, so the token's distribution is exactly sample()'s (the random stream differs).
  int32_t sample(std::span<const float> logits, int32_t draft);
  // The logits as sample() would pick from them next, after the penalties and before
  // temperature / top-k / top-p / min-p (a copy; changes nothing): what a server reports
  // log-probabilities over.
  std::vector<float> penalized(std::span<const float> logits) const;

 private:
  void apply_penalties(std::vector<float>& logits) const;
  int32_t pick(std::span<const float> logits, int32_t draft);  // temperature, top-k, top-p, min-p
  SamplingOptions opt_;
  std::mt19937_64 rng_;
  std::vector<int32_t> seen_;       // prompt + generated (repetition penalty)
  std::vector<int32_t> generated_;  // generated only (presence / frequency)
};

// Speculative decoding by prompt lookup (llama.cpp's lookup decoding, vLLM's n-gram
// proposer): each step looks for the last max_ngram tokens (then fewer, down to one) earlier
// in the prompt and output, drafts the up to draft_tokens tokens that followed there, and
// the model verifies the draft in one forward (one read of the weights for all of them); the
// accepted prefix and the model's own next token come out of it, and the KV positions of the
// rejected tokens are dropped. Greedy output is the same token for token as without it;
// sampled output has the same distribution (Sampler::sample with a draft). It pays where the
// text repeats itself (code, quoting, summaries, loops) and decoding is bound by the weights;
// where drafts are refused whole, drafting pauses for 1, 3, 7, ... 63 steps.
//
// With draft_model, the draft is that model's greedy continuation instead (a smaller or
// quantized model of the same vocabulary, with a KV cache of its own that follows the
// accepted tokens): the same verification, the same output.
struct SpeculativeOptions {
  int64_t draft_tokens = 0;               // 0: off
  int64_t max_ngram = 3;                  // >= 1
  const CausalLM* draft_model = nullptr;  // must outlive the generation; same vocab_size as the target
  // The engine drafts only in steps where at most this many sequences decode: a wider batch
  // is compute-bound, so the drafted positions widen every product while few of them are
  // kept, and a step with drafts cannot take the recorded batched step (CUDA graph). H100,
  // serve --spec ngram, 1B F16, prompts repeating a motif: 1.35-1.38x at 8 streams, 0.71x
  // at 16 and 0.70x at 32 when drafting there (0.98x at 32 with a bound of 16).
  int64_t max_batch = 8;
};

// draft_tokens in [0, 64], max_ngram in [1, 64] and max_batch >= 1 (before any model is
// loaded), and with the
// target, a draft model (if any) of its vocabulary size; else InvalidArgument starting
// "generate:".
void check_speculative_options(const SpeculativeOptions& spec);
void check_speculative_options(const SpeculativeOptions& spec, const CausalLM& target);

// Prompt lookup: the tokens that followed the latest earlier occurrence of history's last n
// tokens (n from max_ngram down to 1), at most `most` of them; none when nothing matches.
std::vector<int32_t> lookup_draft(std::span<const int32_t> history, int64_t max_ngram, int64_t most);

// When one sequence drafts. A draft refused whole costs a wider forward for no token: after
// n such steps in a row, the next 2^n - 1 steps (63 at most) draft nothing; a kept token
// ends the pause.
class DraftPacer {
 public:
  // Whether this step drafts (called once per step; a paused step counts down the pause).
  bool drafting() {
    if (pause_ == 0) return true;
    --pause_;
    return false;
  }
  // After a step that drafted: how many of its drafted tokens were kept.
  void kept(int64_t n) {
    refused_in_a_row_ = n == 0 ? refused_in_a_row_ + 1 : 0;
    pause_ = n == 0 ? (int64_t(1) << std::min<int64_t>(refused_in_a_row_, 6)) - 1 : 0;
  }

 private:
  int64_t refused_in_a_row_ = 0, pause_ = 0;
};

// Streams bytes that may end inside a multi-byte UTF-8 character: push() returns the
// longest prefix ending on a character boundary and holds the rest back for the next call.
// Invalid bytes are passed through (they never complete into a character).
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();  // whatever is held back

 private:
  std::string pending_;
};

}  // namespace wick::models
