// Autoregressive text generation with a GPT-2 model: greedy decoding or sampling with
// temperature, top-k and top-p (nucleus), reproducible from a seed. Sampling runs on the
// CPU over the last logits row converted to f32 (vocab-sized work per token: negligible
// next to the forward pass, and identical on every device).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wick/models/gpt2.h"

namespace wick::models {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (argmax); otherwise logits are divided by it
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all
  double top_p = 1.0;        // keep the smallest set whose probability reaches top_p; 1: all
  uint64_t seed = 0;
};

// The smallest temperature other than 0 that sampling accepts. Below it 1/T is so large
// that the weights exp((logit - max) / T) are 0 for every token but the most likely one
// (greedy in all but name), and near 1e-308 1/T overflows to infinity and the weights turn
// into NaN. A smaller value is rejected rather than silently treated as greedy: 0 says so.
inline constexpr double kMinTemperature = 1e-4;

// Checks sampling options and a generation length, once, before any work: temperature is 0
// (greedy) or finite and >= kMinTemperature; top_k >= 0; top_p in (0, 1]; max_new_tokens in
// [1, context] where context is the model's n_positions (more could never be produced).
// NaN fails every check. Throws ErrorKind::InvalidArgument with a message that starts with
// "generate:" and names the option and the bounds.
void check_sampling_options(const SamplingOptions& opt);
void check_generation_options(const SamplingOptions& opt, int64_t max_new_tokens, int64_t context);

// Picks token ids from logits rows. Order as in Hugging Face: temperature, top-k, top-p.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& opt);
  int32_t sample(std::span<const float> logits);

 private:
  SamplingOptions opt_;
  std::mt19937_64 rng_;
};

struct GenerationStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // decode: every step after the first token
  size_t graph_nodes = 0;                          // kernels etc. in the recorded decode step (0: no CUDA graph used)
};

class Generator {
 public:
  Generator(const Gpt2Model& model, const SamplingOptions& opt) : model_(model), opt_(opt) {}
  // On CUDA the decode step is recorded once as a CUDA graph and replayed (one launch per
  // token instead of hundreds); off, every step launches its ops directly. On by default;
  // the tokens are the same either way.
  Generator& use_cuda_graph(bool on) {
    cuda_graph_ = on;
    return *this;
  }
  // Runs the prompt through the model once (prefill), then generates up to max_new_tokens
  // one at a time with a KV cache, calling on_token with each id as it is produced. Stops
  // early at stop_token (not passed to on_token) or when the context (n_positions) is full.
  GenerationStats generate(const std::vector<int32_t>& prompt, int64_t max_new_tokens,
                           const std::function<void(int32_t)>& on_token,
                           std::optional<int32_t> stop_token = std::nullopt) const;

 private:
  const Gpt2Model& model_;
  SamplingOptions opt_;
  bool cuda_graph_ = true;
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
