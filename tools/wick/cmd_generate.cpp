// `wick generate`: continue a prompt with a GPT-2 checkpoint (Hugging Face folder:
// config.json, model.safetensors, vocab.json, merges.txt). Without --model it runs the tiny
// random-weight GPT-2 shipped in assets/gpt2-tiny (real tokenizer, gibberish output): a
// smoke test of the whole path that needs no download.
//
// stdout: the continuation, flushed per token (UTF-8 characters split across tokens are
// held back until complete). stderr: the prompt and generated token counts and tokens/s of
// prefill and decode.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "progress.h"
#include "wick/models/generate.h"
#include "wick/models/gpt2.h"
#include "wick/text/gpt2_tokenizer.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {
struct GenerateArgs {
  std::string model, prompt = "Hello, I am", device, dtype = "f32";
  int64_t max_tokens = 32, top_k = 0;
  double temperature = 0.0, top_p = 1.0;
  uint64_t seed = 0;
  bool ignore_eos = false;
};

// The shipped tiny model: next to the executable once installed (bin/../share/wick/assets),
// else in the source tree this binary was built from (WICK_ASSETS_DIR).
std::filesystem::path default_model_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "wick" / "assets" / "gpt2-tiny");
#ifdef WICK_ASSETS_DIR
  candidates.push_back(fs::path(WICK_ASSETS_DIR) / "gpt2-tiny");
#endif
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json", ec)) return c;
  fail(ErrorKind::Io, "generate: no --model given and the shipped assets/gpt2-tiny was not found (looked in ",
       candidates.empty() ? std::string("nothing") : candidates.front().string(), ")");
}

double per_second(int64_t n, double s) { return s > 0 ? double(n) / s : 0.0; }
}  // namespace

models::SamplingOptions sampling_options(const GenerateArgs& a) {
  models::SamplingOptions opt;
  opt.temperature = a.temperature;
  opt.top_k = a.top_k;
  opt.top_p = a.top_p;
  opt.seed = a.seed;
  return opt;
}

int run_generate(const GenerateArgs& a) {
  const std::filesystem::path dir = a.model.empty() ? default_model_dir() : std::filesystem::path(a.model);
  const models::SamplingOptions opt = sampling_options(a);
  // Every option is checked before the weights load (seconds for a real checkpoint); the
  // length bound needs the context size, so config.json is read first.
  const int64_t context = models::Gpt2Config::from_json_file(dir / "config.json").n_positions;
  as_usage_error([&] { models::check_generation_options(opt, a.max_tokens, context); });
  const Device dev = a.device.empty() ? default_device() : Device::parse(a.device);
  // The tokenizer first: a folder without one fails before any weight is read.
  const text::Gpt2Tokenizer tok(dir.string());
  std::fprintf(stderr, "loading %s\n", dir.string().c_str());
  const auto model = models::Gpt2Model::load(dir, dev, dtype_from_name(a.dtype),
                                             [](size_t done, size_t total) { progress(done, total, "weights"); });
  const std::vector<int32_t> prompt = tok.encode(a.prompt);
  WICK_CHECK(!prompt.empty(), InvalidArgument, "generate: the prompt is empty (give --prompt TEXT)");

  const models::Generator gen(model, opt);
  models::Utf8Stream stream;
  const auto st = gen.generate(
      prompt, a.max_tokens,
      [&](int32_t id) {
        const std::string bytes = stream.push(tok.decode(std::span<const int32_t>(&id, 1)));
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
      },
      a.ignore_eos || !tok.end_of_text_id() ? std::vector<int32_t>{} : std::vector<int32_t>{*tok.end_of_text_id()});
  const std::string rest = stream.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  // The first generated token comes out of the prefill pass; decode covers the rest.
  const int64_t decoded = std::max<int64_t>(st.generated_tokens - 1, 0);
  std::fprintf(stderr, "model %s on %s (%s)\n", dir.string().c_str(), dev.str().c_str(), a.dtype.c_str());
  std::fprintf(stderr, "prompt: %lld tokens, prefill %.3f s (%.1f tokens/s)\n", (long long)st.prompt_tokens,
               st.prefill_seconds, per_second(st.prompt_tokens, st.prefill_seconds));
  std::fprintf(stderr, "generated: %lld tokens, decode %.3f s (%.1f tokens/s)\n", (long long)st.generated_tokens,
               st.decode_seconds, per_second(decoded, st.decode_seconds));
  if (st.graph_nodes) std::fprintf(stderr, "decode step: one CUDA graph of %zu nodes per token\n", st.graph_nodes);
  return 0;
}

Runner add_generate(CLI::App& app) {
  auto* sub = app.add_subcommand("generate", "Continue a prompt with a GPT-2 model (streams the text to stdout)");
  auto a = std::make_shared<GenerateArgs>();
  sub->add_option("--model", a->model, "Hugging Face GPT-2 folder (default: the shipped tiny random-weight model)");
  sub->add_option("--prompt", a->prompt, "the text to continue")->capture_default_str();
  // The bounds are checked by models::check_generation_options (one place for the CLI, the
  // library and the fuzz target), not by CLI11 validators.
  sub->add_option("--max-tokens", a->max_tokens, "tokens to generate at most, 1 to the model's context")
      ->capture_default_str();
  sub->add_option("--temperature", a->temperature,
                  "0: greedy; otherwise (at least 1e-4) sample from softmax(logits / T)")
      ->capture_default_str();
  sub->add_option("--top-k", a->top_k, "sample among the k most likely tokens (0: all)")->capture_default_str();
  sub->add_option("--top-p", a->top_p, "sample among the most likely tokens totalling probability p, in (0, 1]")
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "random seed for sampling")->capture_default_str();
  sub->add_flag("--ignore-eos", a->ignore_eos, "keep going past <|endoftext|> (benchmarks: always --max-tokens)");
  sub->add_option("--device", a->device, "cpu, cuda or cuda:N (default: the best present)");
  sub->add_option("--dtype", a->dtype, "f32, f16 or bf16")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  return [a]() -> int { return run_generate(*a); };
}

}  // namespace wick::cli
