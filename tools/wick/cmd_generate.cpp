// `wick generate`: continue a prompt with any supported model (a GGUF file or a Hugging
// Face folder: GPT-2 or the Llama family). Without --model it runs the tiny random-weight
// GPT-2 shipped in assets/gpt2-tiny (real tokenizer, gibberish output): a smoke test of the
// whole path that needs no download. With --chat the prompt is sent as one user turn
// through the model's chat template (--system adds a system turn).
//
// --grammar / --json-schema (and their -file forms) constrain the continuation to a GBNF
// grammar or a JSON Schema's documents; it ends when the text is a sentence nothing can
// continue.
//
// stdout: the continuation, flushed per token (UTF-8 characters split across tokens are
// held back until complete), cut before the first --stop string if one comes (text that could
// still become one is held back until it does or cannot). stderr: the prompt and generated token counts and tokens/s of
// prefill and decode.
#include <cstdio>
#include <iostream>

#include "grammar_args.h"
#include "model_args.h"
#include "wick/text/harmony.h"
#include "wick/text/reasoning.h"
#include "wick/text/stop_text.h"

namespace wick::cli {

namespace {
struct GenerateArgs {
  ModelArgs model;
  SamplingArgs sampling;
  GrammarArgs grammar;
  std::string prompt = "Hello, I am", system;
  std::vector<std::string> stop;
  int64_t max_tokens = 32;
  bool chat = false;
};

double per_second(int64_t n, double s) { return s > 0 ? double(n) / s : 0.0; }

int run_generate(const GenerateArgs& a) {
  // Every option is checked before the weights load (seconds for a real checkpoint); the
  // length bound needs the context size, which the configuration alone says.
  const std::filesystem::path path = model_path(a.model, "generate");
  const int64_t context = std::min(models::LanguageModel::context_length_of(path), a.model.ctx_size);
  std::optional<text::Grammar> grammar;
  as_usage_error([&] {
    grammar = grammar_from_args(a.grammar, "generate");
    models::check_generation_options(a.sampling.opt, a.max_tokens, context);
    for (const auto& s : a.stop) WICK_CHECK(!s.empty(), InvalidArgument, "generate: a --stop string is empty");
    check_speculative_args(a.sampling, "generate");
  });
  if (a.chat) check_chat_template(a.model, "generate");
  // The draft first: a usage error in its options comes before the target loads.
  const std::optional<models::LanguageModel> draft = load_draft(a.model, a.sampling, "generate");
  const models::LanguageModel lm = load_model(a.model, "generate");
  const models::CausalLM& model = lm.model();
  std::string text = a.prompt;
  if (a.chat) {
    std::vector<text::ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    text = lm.render_chat(messages);
  }
  // A rendered chat already holds its special tokens (BOS among them).
  const std::vector<int32_t> prompt = lm.encode(text, /*add_special=*/!a.chat);
  WICK_CHECK(!prompt.empty(), InvalidArgument, "generate: the prompt is empty (give --prompt TEXT)");

  serve::Generator gen(model, a.sampling.opt);
  gen.speculative(speculative_options(a.sampling, draft));
  // With --chat, a thinking template's reasoning comes before the constrained answer.
  if (grammar)
    gen.grammar(grammar, std::make_shared<const text::TokenTable>(lm.tokenizer()),
                a.chat ? text::reasoning_prefix(lm.chat_template()->source(), text) : std::nullopt);
  // KV memory for the prompt and the output, within --ctx-size.
  gen.context(std::min<int64_t>(context, int64_t(prompt.size()) + a.max_tokens));
  auto stream = lm.tokenizer().decode_stream();
  text::StopText stop(a.stop);
  // With --chat, gpt-oss's harmony channels print as <think>reasoning</think>answer.
  std::optional<text::HarmonyDecoder> harmony;
  if (a.chat && text::template_is_harmony(lm.chat_template()->source())) harmony.emplace();
  auto show = [&](const std::string& t) { print_now(harmony ? harmony->push(t) : t); };
  const auto st = gen.generate(
      prompt, a.max_tokens,
      [&](int32_t id) {
        show(stop.push(stream.push(id)));
        return !stop.stopped();
      },
      a.sampling.ignore_eos ? std::vector<int32_t>{} : lm.stop_tokens());
  show(stop.flush());
  print_now((harmony ? harmony->flush() : std::string()) + "\n");
  // The first generated token comes out of the prefill pass; decode covers the rest.
  const int64_t decoded = std::max<int64_t>(st.generated_tokens - 1, 0);
  std::fprintf(stderr, "model %s (%s) on %s (%s)\n", a.model.model.empty() ? "gpt2-tiny" : a.model.model.c_str(),
               lm.architecture().c_str(), model.device().str().c_str(), dtype_name(model.dtype()).data());
  std::fprintf(stderr, "prompt: %lld tokens, prefill %.3f s (%.1f tokens/s)\n", (long long)st.prompt_tokens,
               st.prefill_seconds, per_second(st.prompt_tokens, st.prefill_seconds));
  std::fprintf(stderr, "generated: %lld tokens, decode %.3f s (%.1f tokens/s)\n", (long long)st.generated_tokens,
               st.decode_seconds, per_second(decoded, st.decode_seconds));
  if (st.drafted_tokens > 0)
    std::fprintf(stderr, "speculative (%s): %lld drafted, %lld accepted (%.1f%%)\n", a.sampling.spec.c_str(),
                 (long long)st.drafted_tokens, (long long)st.accepted_tokens,
                 100.0 * double(st.accepted_tokens) / double(st.drafted_tokens));
  return 0;
}
}  // namespace

Runner add_generate(CLI::App& app) {
  auto* sub = app.add_subcommand("generate", "Continue a prompt with a language model (streams the text to stdout)");
  auto a = std::make_shared<GenerateArgs>();
  add_model_options(sub, a->model);
  sub->add_option("--prompt", a->prompt, "the text to continue")->capture_default_str();
  sub->add_flag("--chat", a->chat, "send the prompt as a user turn through the model's chat template");
  sub->add_option("--system", a->system, "with --chat: a system turn before it");
  sub->add_option("--max-tokens", a->max_tokens, "tokens to generate at most, 1 to the context")->capture_default_str();
  sub->add_option("--stop", a->stop, "end the text before this string (repeatable: the first of them to appear)");
  add_sampling_options(sub, a->sampling);
  add_grammar_options(sub, a->grammar);
  return [a]() -> int { return run_generate(*a); };
}

}  // namespace wick::cli
