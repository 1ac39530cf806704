// libFuzzer target: `wick generate`'s sampling and length options. The input is split at
// NUL bytes into an argv, parsed by CLI11 into the option types cmd_generate.cpp uses
// (int64 --max-tokens and --top-k, double --temperature and --top-p), then checked by
// models::check_generation_options, the one check the CLI runs before loading a model.
// Either CLI11 rejects the text (CLI::ParseError) or the check accepts or raises
// wick::Error; nothing else may be thrown. Options the check accepts must be usable: they
// satisfy the documented bounds, and a Sampler built from them returns a valid token id
// (the bug this guards against: a tiny temperature made 1/T infinite and every weight NaN).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "wick/error.h"
#include "wick/models/generate.h"

namespace {

constexpr int64_t kContext = 1024;  // GPT-2's n_positions

void check_accepted(const wick::models::SamplingOptions& opt, int64_t max_tokens) {
  using wick::models::kMinTemperature;
  const bool temperature_ok =
      opt.temperature == 0 || (opt.temperature >= kMinTemperature && std::isfinite(opt.temperature));
  if (!temperature_ok || opt.top_k < 0 || !(opt.top_p > 0 && opt.top_p <= 1) || max_tokens < 1 || max_tokens > kContext)
    __builtin_trap();
  // Logits with a clear winner, a tie and a masked entry. The mask is -inf, not a large
  // negative number: at a huge (accepted) temperature such as 4e61, softmax(-1e30 / T) is
  // as large as any other weight, correctly, and the fuzzer found that once.
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -std::numeric_limits<float>::infinity(), 0.5f};
  wick::models::Sampler sampler(opt);
  for (int i = 0; i < 4; ++i) {
    const int32_t id = sampler.sample(logits);
    if (id < 0 || id >= int32_t(logits.size()) || id == 3) __builtin_trap();  // id 3 has weight 0
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"generate"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(data[i]));
    }
  }
  args.push_back(cur);
  if (args.size() > 16) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());

  CLI::App app{"generate"};
  int64_t max_tokens = 32, top_k = 0;
  double temperature = 0.0, top_p = 1.0;
  uint64_t seed = 0;
  app.add_option("--max-tokens", max_tokens);
  app.add_option("--temperature", temperature);
  app.add_option("--top-k", top_k);
  app.add_option("--top-p", top_p);
  app.add_option("--seed", seed);
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;  // the CLI reports it as a usage error (exit 2)
  }
  wick::models::SamplingOptions opt;
  opt.temperature = temperature;
  opt.top_k = top_k;
  opt.top_p = top_p;
  opt.seed = seed;
  try {
    wick::models::check_generation_options(opt, max_tokens, kContext);
  } catch (const wick::Error&) {
    return 0;
  }
  check_accepted(opt, max_tokens);
  return 0;
}
