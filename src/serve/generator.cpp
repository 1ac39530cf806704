// Generator (wick/serve/generator.h): one request at a time through an Engine of one slot
// and no thread of its own: the caller's thread runs the engine's steps
// (Engine::run_until_idle) and on_token is called there as each token comes, with no
// hand-off between threads per token. A callback that says stop (or throws) cancels the
// request, which ends at the next token boundary.
#include "wick/serve/generator.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

#include "wick/error.h"
#include "wick/serve/engine.h"

namespace wick::serve {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

Generator::Generator(const models::CausalLM& model, const models::SamplingOptions& opt) : model_(&model), opt_(opt) {}
Generator::~Generator() = default;
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;

Generator& Generator::sampling(const models::SamplingOptions& opt) {
  opt_ = opt;
  return *this;
}

Generator& Generator::use_cuda_graph(bool on) {
  if (on != cuda_graphs_) engine_.reset();
  cuda_graphs_ = on;
  return *this;
}

Generator& Generator::speculative(const models::SpeculativeOptions& spec) {
  models::check_speculative_options(spec, *model_);
  if (spec.draft_tokens != spec_.draft_tokens || spec.max_ngram != spec_.max_ngram ||
      spec.draft_model != spec_.draft_model)
    engine_.reset();
  spec_ = spec;
  return *this;
}

Generator& Generator::context(int64_t positions) {
  WICK_CHECK(positions >= 0, InvalidArgument, "generate: context must be >= 0, got ", positions);
  if (positions != context_) engine_.reset();
  context_ = positions;
  return *this;
}

Generator& Generator::grammar(std::optional<text::Grammar> grammar, std::shared_ptr<const text::TokenTable> tokens,
                              std::optional<text::FreePrefix> prefix) {
  WICK_CHECK(!grammar || tokens, InvalidArgument, "generate: a grammar needs the vocabulary's bytes (a TokenTable)");
  WICK_CHECK(!prefix || grammar, InvalidArgument, "generate: a free prefix without a grammar");
  WICK_CHECK(!prefix || !prefix->close.empty(), InvalidArgument, "generate: a free prefix needs a closing marker");
  prefix_ = std::move(prefix);
  if (tokens != tokens_) engine_.reset();  // the engine holds the table
  grammar_ = std::move(grammar);
  tokens_ = std::move(tokens);
  return *this;
}

GenerationStats Generator::run(const std::vector<int32_t>& prompt, int64_t max_new_tokens,
                               const std::function<bool(int32_t)>& on_token, const std::vector<int32_t>& stop_tokens) {
  WICK_CHECK(!prompt.empty(), InvalidArgument, "generate: the prompt must hold at least one token");
  WICK_CHECK(max_new_tokens >= 0, InvalidArgument, "generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  models::check_sampling_options(opt_);
  const auto P = int64_t(prompt.size());
  const int64_t room = context_ > 0 ? std::min(context_, model_->context_length()) : model_->context_length();
  // The last token is sampled, not fed: a prompt must leave at least one position for output.
  const char* bound = context_ > 0 ? "generator's context " : "context length ";
  WICK_CHECK(P < room, InvalidArgument, "generate: prompt of ", P, " tokens exceeds the ", bound, room - 1,
             " it may hold before output");
  GenerationStats st;
  st.prompt_tokens = P;
  if (max_new_tokens == 0) return st;
  const int64_t max_tokens = std::min(max_new_tokens, room - P);
  // The engine's KV memory: the generator's context, or this call's prompt and output.
  const int64_t needed = context_ > 0 ? room : P + max_tokens;
  if (engine_ && engine_->options().ctx_size < needed) engine_.reset();
  if (!engine_) {
    EngineOptions eo;
    eo.parallel = 1;
    eo.max_queue = 1;
    eo.ctx_size = needed;
    // The whole prompt in one forward, as a prefill of its own (no other sequence waits).
    eo.prefill_chunk = eo.max_step_tokens = std::max<int64_t>(needed, 1);
    eo.cuda_graphs = cuda_graphs_;
    eo.speculative = spec_;
    eo.thread = false;  // run by run_until_idle() on the caller's thread
    eo.tokens = tokens_;
    engine_ = std::make_unique<Engine>(*model_, eo);
  }
  Request req;
  req.prompt = prompt;
  req.max_tokens = max_tokens;
  req.sampling = opt_;
  req.stop_tokens = stop_tokens;
  req.grammar = grammar_;
  req.grammar_prefix = prefix_;
  const EngineStats before = engine_->stats();
  bool wanted = true;  // on_token has not asked to stop
  std::exception_ptr thrown;
  TokenEvent last;
  Clock::time_point first_at, last_at;
  bool any = false;
  std::optional<uint64_t> id;
  const auto t0 = Clock::now();
  id = engine_->submit(req, [&](const TokenEvent& ev) {
    last_at = Clock::now();
    if (!any) first_at = last_at;
    any = true;
    const bool final = ev.finish != FinishReason::None;
    // A final Length event carries the last token; Stop, Cancelled and Error carry none.
    if (wanted && !thrown && ev.token >= 0 && (!final || ev.finish == FinishReason::Length)) {
      ++st.generated_tokens;
      try {
        wanted = on_token(ev.token);
      } catch (...) {
        thrown = std::current_exception();
      }
      if ((!wanted || thrown) && !final) engine_->cancel(*id);
    }
    if (final) last = ev;
  });
  WICK_CHECK(id.has_value(), Internal, "generate: the engine refused the request");
  engine_->run_until_idle();
  if (thrown) std::rethrow_exception(thrown);
  if (last.finish == FinishReason::Error) fail(last.error_kind, last.error);
  const EngineStats after = engine_->stats();
  st.cached_tokens = last.cached_tokens;
  st.drafted_tokens = int64_t(after.drafted_tokens - before.drafted_tokens);
  st.accepted_tokens = int64_t(after.accepted_tokens - before.accepted_tokens);
  st.prefill_seconds = std::chrono::duration<double>(first_at - t0).count();
  st.decode_seconds = std::chrono::duration<double>(last_at - first_at).count();
  return st;
}

}  // namespace wick::serve
