// Command-line options that `wick generate`, `wick chat` (and later `wick serve`) share:
// which model, where, in which dtype, and how to sample. One definition so that the
// commands cannot drift apart.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "commands.h"
#include "progress.h"
#include "wick/models/generate.h"
#include "wick/models/language_model.h"
#include "wick/serve/generator.h"

namespace wick::cli {

struct ModelArgs {
  std::string model, device, dtype, quantize, quant_activation = "q8", chat_template_file;
  int64_t ctx_size = 4096;
};

struct SamplingArgs {
  models::SamplingOptions opt;
  bool ignore_eos = false;
  std::string spec = "none";  // speculative decoding: none, ngram (prompt lookup) or draft (--draft-model)
  std::string draft_model, draft_quantize;  // --spec draft: the draft's file or folder, its load-time quantization
  models::SpeculativeOptions spec_opt{.draft_tokens = 8, .max_ngram = 3};
  // The speculative options the flags ask for (draft_tokens 0: off).
  models::SpeculativeOptions speculative() const { return spec != "none" ? spec_opt : models::SpeculativeOptions{}; }
};

inline void add_model_options(CLI::App* sub, ModelArgs& a) {
  sub->add_option("--model", a.model,
                  "a GGUF file or a Hugging Face folder (default: the shipped tiny random-weight GPT-2)");
  sub->add_option("--device", a.device, "cpu, cuda or cuda:N (default: the best present)");
  sub->add_option("--dtype", a.dtype, "compute dtype f32, f16 or bf16 (default: f32 on the CPU, f16 on CUDA)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--quantize", a.quantize, "quantize float weights at load: q8_0, q4_0, q4_K or q6_K");
  add_quant_activation_option(sub, a.quant_activation);
  sub->add_option("--ctx-size", a.ctx_size, "positions the KV cache holds at most (clamped to the model's context)")
      ->capture_default_str();
  sub->add_option("--chat-template-file", a.chat_template_file,
                  "a Jinja chat template used instead of the model's (one with tools or reasoning, or one it lacks)");
}

// The whole of a file an option names (InvalidArgument naming the option when unreadable).
std::string read_option_file(const std::string& path, const char* option, const char* command);

// --spec and its options (draft_model: also --spec draft, --draft-model, --draft-quantize).
inline void add_speculative_options(CLI::App* sub, SamplingArgs& a, bool draft_model) {
  sub->add_option("--spec", a.spec,
                  std::string("speculative decoding: ngram drafts the tokens that followed the last n-gram earlier in "
                              "the prompt and output") +
                      (draft_model ? ", draft those of --draft-model" : "") +
                      "; drafts are verified in one forward (same output)")
      ->check(draft_model ? CLI::IsMember({"none", "ngram", "draft"}) : CLI::IsMember({"none", "ngram"}))
      ->capture_default_str();
  if (draft_model) {
    sub->add_option("--draft-model", a.draft_model,
                    "--spec draft: a smaller or quantized model of the same vocabulary (GGUF file or folder), "
                    "loaded on the same device");
    sub->add_option("--draft-quantize", a.draft_quantize, "--spec draft: quantize the draft model at load (q4_0, ...)");
  }
  sub->add_option("--draft-tokens", a.spec_opt.draft_tokens, "--spec: tokens drafted per step at most, [1, 64]")
      ->capture_default_str();
  sub->add_option("--spec-ngram", a.spec_opt.max_ngram, "--spec ngram: the longest n-gram looked up, [1, 64]")
      ->capture_default_str();
  sub->add_option("--spec-max-batch", a.spec_opt.max_batch,
                  "--spec: draft only in steps where at most this many sequences decode (wider batches are "
                  "compute-bound), >= 1")
      ->capture_default_str();
}

inline void add_sampling_options(CLI::App* sub, SamplingArgs& a) {
  // The bounds are checked by models::check_sampling_options (one place for the CLI, the
  // library and the fuzz target), not by CLI11 validators.
  auto& o = a.opt;
  sub->add_option("--temperature", o.temperature,
                  "0: greedy; otherwise (at least 1e-4) sample from softmax(logits / T)")
      ->capture_default_str();
  sub->add_option("--top-k", o.top_k, "sample among the k most likely tokens (0: all)")->capture_default_str();
  sub->add_option("--top-p", o.top_p, "sample among the most likely tokens totalling probability p, in (0, 1]")
      ->capture_default_str();
  sub->add_option("--min-p", o.min_p, "drop tokens less likely than p x the most likely, in [0, 1]")
      ->capture_default_str();
  sub->add_option("--repeat-penalty", o.repetition_penalty,
                  "divide the logits of tokens seen in prompt and output by this (1: off)")
      ->capture_default_str();
  sub->add_option("--presence-penalty", o.presence_penalty, "subtract from generated tokens' logits, in [-2, 2]")
      ->capture_default_str();
  sub->add_option("--frequency-penalty", o.frequency_penalty, "subtract per occurrence in the output, in [-2, 2]")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "random seed for sampling")->capture_default_str();
  sub->add_flag("--ignore-eos", a.ignore_eos, "keep going past end-of-generation tokens (benchmarks)");
  add_speculative_options(sub, a, /*draft_model=*/true);
}

// The shipped tiny model: next to the executable once installed (bin/../share/wick/assets),
// else in the source tree this binary was built from (WICK_ASSETS_DIR).
std::filesystem::path default_model_dir(const char* command);

// Text on stdout at once (generated text streams token by token).
inline void print_now(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The path --model names, or the shipped tiny model.
std::filesystem::path model_path(const ModelArgs& a, const char* command);

// Loads the model the options name, with a progress bar on stderr.
models::LanguageModel load_model(const ModelArgs& a, const char* command);
// --spec draft: the draft model (--draft-model, loaded as the target is, on its device, with
// --draft-quantize), else nothing; usage errors when --spec draft and --draft-model do not
// go together.
std::optional<models::LanguageModel> load_draft(const ModelArgs& a, const SamplingArgs& s, const char* command);
// --draft-tokens >= 1 with --spec, and models::check_speculative_options (InvalidArgument).
void check_speculative_args(const SamplingArgs& s, const char* command);
// The speculative options of s with the draft model, if any, set.
models::SpeculativeOptions speculative_options(const SamplingArgs& s,
                                               const std::optional<models::LanguageModel>& draft);
// Fails (Unsupported, naming the model) when the model has no chat template, before any
// weight is loaded.
void check_chat_template(const ModelArgs& a, const char* command);

}  // namespace wick::cli
