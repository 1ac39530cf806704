// `wick chat`: a conversation with a chat model. Each line read from standard input (a
// terminal or a pipe) is a user turn; the reply streams to stdout. The whole conversation
// is rendered by the model's chat template every turn and fed whole to one Generator, whose
// engine keeps its KV memory across turns: its prefix cache finds the full blocks of the
// longest prefix the new rendering shares with what was fed before (a template may
// re-render earlier turns differently, e.g. Qwen3 dropping old reasoning), and only the
// rest is computed. --stop STR ends a reply before the first
// stop string (the reply kept in the conversation is the text before it). --grammar /
// --json-schema (and their -file forms) constrain every reply, after the reasoning of a
// thinking template (text::reasoning_prefix). Commands: /reset forgets the conversation,
// /exit (or end of input) quits.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "grammar_args.h"
#include "model_args.h"
#include "wick/text/harmony.h"
#include "wick/text/reasoning.h"
#include "wick/text/stop_text.h"

namespace wick::cli {

namespace {
struct ChatArgs {
  ModelArgs model;
  SamplingArgs sampling;
  std::string system;
  int64_t max_tokens = 512;
  std::vector<std::string> stop;
  GrammarArgs grammar;
};

int run_chat(const ChatArgs& a) {
  std::optional<text::Grammar> grammar;
  as_usage_error([&] {
    grammar = grammar_from_args(a.grammar, "chat");
    models::check_sampling_options(a.sampling.opt);
    check_speculative_args(a.sampling, "chat");
    for (const auto& s : a.stop) WICK_CHECK(!s.empty(), InvalidArgument, "chat: a --stop string is empty");
  });
  as_usage_error(
      [&] { WICK_CHECK(a.max_tokens >= 1, InvalidArgument, "chat: max_tokens must be >= 1, got ", a.max_tokens); });
  check_chat_template(a.model, "chat");
  // The draft first: a usage error in its options comes before the target loads.
  const std::optional<models::LanguageModel> draft = load_draft(a.model, a.sampling, "chat");
  const models::LanguageModel lm = load_model(a.model, "chat");
  const int64_t capacity = std::min(lm.model().context_length(), a.model.ctx_size);
  serve::Generator gen(lm.model(), a.sampling.opt);
  gen.speculative(speculative_options(a.sampling, draft)).context(capacity);
  const auto tokens = grammar ? std::make_shared<const text::TokenTable>(lm.tokenizer()) : nullptr;
  std::vector<text::ChatMessage> messages;
  auto reset = [&] {
    messages.clear();
    if (!a.system.empty()) messages.push_back({"system", a.system});
  };
  reset();
  const bool interactive = isatty(STDIN_FILENO);
  const auto stops = a.sampling.ignore_eos ? std::vector<int32_t>{} : lm.stop_tokens();
  std::string line;
  for (uint64_t turn = 0;; ++turn) {
    if (interactive) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line) || line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      reset();
      continue;
    }
    messages.push_back({"user", line});
    const std::string rendered = lm.render_chat(messages);
    const std::vector<int32_t> ids = lm.encode(rendered, /*add_special=*/false);
    if (grammar) gen.grammar(grammar, tokens, text::reasoning_prefix(lm.chat_template()->source(), rendered));
    WICK_CHECK(int64_t(ids.size()) < capacity, InvalidArgument, "chat: the conversation is ", ids.size(),
               " tokens, the context holds ", capacity, " (--ctx-size; /reset starts over)");
    models::SamplingOptions opt = a.sampling.opt;
    opt.seed += turn;  // reproducible, but not the same draws every turn
    std::vector<int32_t> reply;
    auto stream = lm.tokenizer().decode_stream();
    text::StopText stop(a.stop);
    std::string shown;  // the reply's text as printed (cut before a stop string)
    // gpt-oss's harmony channels printed as <think>reasoning</think>answer (text::HarmonyDecoder).
    std::optional<text::HarmonyDecoder> harmony;
    if (text::template_is_harmony(lm.chat_template()->source())) harmony.emplace();
    auto show = [&](const std::string& t) {
      const std::string s = harmony ? harmony->push(t) : t;
      shown += s;
      print_now(s);
    };
    gen.sampling(opt).generate(
        ids, std::min<int64_t>(a.max_tokens, capacity - int64_t(ids.size())),
        [&](int32_t id) {
          reply.push_back(id);
          show(stop.push(stream.push(id)));
          return !stop.stopped();
        },
        stops);
    show(stop.flush());
    if (harmony) {
      const std::string rest = harmony->flush();
      shown += rest;
      print_now(rest);
    }
    print_now("\n");
    // The conversation goes on from what was said: a reply cut by a stop string ends there
    // (the next rendering shares the cached blocks up to where they differ). A harmony reply
    // goes on as its answer: the template renders the turn's channels itself (and refuses
    // channel tags in the content).
    if (harmony) {
      text::ReasoningSplit split;
      messages.push_back({"assistant", split.push(shown).content + split.flush().content});
    } else {
      messages.push_back({"assistant", stop.stopped() ? shown : lm.tokenizer().decode(reply, /*skip_special=*/true)});
    }
  }
  return 0;
}
}  // namespace

Runner add_chat(CLI::App& app) {
  auto* sub = app.add_subcommand("chat", "Chat with a model: one user turn per input line, replies streamed");
  auto a = std::make_shared<ChatArgs>();
  add_model_options(sub, a->model);
  sub->add_option("--system", a->system, "a system prompt at the start of the conversation");
  sub->add_option("--max-tokens", a->max_tokens, "tokens per reply at most")->capture_default_str();
  sub->add_option("--stop", a->stop, "end a reply before this string (repeatable: the first of them to appear)");
  add_sampling_options(sub, a->sampling);
  add_grammar_options(sub, a->grammar);
  return [a]() -> int { return run_chat(*a); };
}

}  // namespace wick::cli
