// Generation of one sequence at a time with any CausalLM (GPT-2, the Llama family), for
// programs that want tokens, not a server: `wick generate`, `wick chat`, the examples.
// It drives the same engine as `wick serve` (serve::Engine, one slot): the same paged KV
// cache, batched forward, recorded CUDA-graph decode step, sampling, speculative decoding
// and stop tokens, so a prompt gives the same tokens here as through the server.
//
// The engine (its KV memory and recorded steps) is made on the first call and kept while
// later calls fit in it, so a conversation fed whole every turn recomputes only what the
// engine's prefix cache does not hold: the full KV blocks of the longest prefix it shares
// with what was fed before.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "wick/models/generate.h"
#include "wick/text/grammar.h"

namespace wick::serve {

class Engine;

struct GenerationStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t cached_tokens = 0;                        // prompt tokens reused from the prefix cache
  int64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative decoding: proposed, and kept
  double prefill_seconds = 0, decode_seconds = 0;   // decode: every step after the first token
};

class Generator {
 public:
  Generator(const models::CausalLM& model, const models::SamplingOptions& opt);
  ~Generator();
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;

  // The sampling options of the next calls (checked by check_sampling_options then).
  Generator& sampling(const models::SamplingOptions& opt);
  // On CUDA the decode step is recorded once as a CUDA graph and replayed (one launch per
  // token instead of hundreds); off, every step launches its ops directly. On by default;
  // the tokens are the same either way.
  Generator& use_cuda_graph(bool on);
  // Speculative decoding (SpeculativeOptions, checked by check_speculative_options).
  Generator& speculative(const models::SpeculativeOptions& spec);
  // The positions (prompt + output) the KV cache holds, for a conversation that grows over
  // several calls: set once, it is allocated once and reused. 0 (the default): each call's
  // prompt + max_new_tokens, the memory made again when a call needs more.
  Generator& context(int64_t positions);
  // Constrained decoding (text/grammar.h) for the next calls: every token one the grammar
  // allows, and the generation ends once the output is a sentence nothing can continue;
  // `tokens` is the vocabulary's bytes (text::TokenTable of the model's tokenizer). nullopt:
  // unconstrained. prefix: free text before the sentence (a thinking model's reasoning,
  // text::reasoning_prefix), as Request::grammar_prefix.
  Generator& grammar(std::optional<text::Grammar> grammar, std::shared_ptr<const text::TokenTable> tokens,
                     std::optional<text::FreePrefix> prefix = std::nullopt);

  // Runs the prompt through the model (prefill), then generates up to max_new_tokens one at a
  // time, calling on_token with each id as it is produced, on the calling thread. Stops early
  // at any of stop_tokens (not passed to on_token), when the context is full, or when
  // on_token returns false (it may return void: never stop; bool: e.g. a stop string was
  // seen). An exception from on_token ends the generation and propagates.
  template <class OnToken>
  GenerationStats generate(const std::vector<int32_t>& prompt, int64_t max_new_tokens, OnToken&& on_token,
                           const std::vector<int32_t>& stop_tokens = {}) {
    if constexpr (std::is_void_v<std::invoke_result_t<OnToken&, int32_t>>)
      return run(
          prompt, max_new_tokens,
          [&](int32_t id) {
            on_token(id);
            return true;
          },
          stop_tokens);
    else
      return run(prompt, max_new_tokens, on_token, stop_tokens);
  }

 private:
  GenerationStats run(const std::vector<int32_t>& prompt, int64_t max_new_tokens,
                      const std::function<bool(int32_t)>& on_token, const std::vector<int32_t>& stop_tokens);
  const models::CausalLM* model_;
  models::SamplingOptions opt_;
  models::SpeculativeOptions spec_;
  bool cuda_graphs_ = true;
  int64_t context_ = 0;
  std::optional<text::Grammar> grammar_;
  std::shared_ptr<const text::TokenTable> tokens_;
  std::optional<text::FreePrefix> prefix_;
  std::unique_ptr<Engine> engine_;  // made by run() when missing or too small
};

}  // namespace wick::serve
