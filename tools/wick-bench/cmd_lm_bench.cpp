// `wick lm-bench`: prompt processing and token generation speed of any language model, the
// two tests of llama.cpp's llama-bench, so the same GGUF file can be timed by both:
//   pp N: one forward over N prompt tokens from an empty cache (tokens/s = N / time);
//   tg N: N tokens decoded one at a time after a one-token prompt (tokens/s = N / time),
//         greedy, end tokens ignored, through serve::Generator: the engine's loop that
//         `wick generate`, `chat` and `serve` decode with (on CUDA its recorded step, recorded
//         before the clock starts); the time runs from the first generated token to the last.
// Each test runs once untimed, then --reps times; the mean and standard deviation of the
// tokens/s are printed (llama-bench's "avg ± stdev"), as a table or --json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "bench_commands.h"
#include "commands.h"
#include "subcommands.h"
#include "wick/models/language_model.h"
#include "wick/serve/generator.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

struct Args {
  std::string model, device, dtype, quantize, quant_activation = "q8";
  std::vector<int64_t> pp{512}, tg{128};
  int reps = 5;
  bool no_graph = false, json = false;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Arbitrary but fixed token ids spread over the vocabulary.
Tensor some_ids(int64_t n, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 7919 + 13) % size_t(vocab));
  return Tensor::from_vector(ids, Shape{1, n});
}

double time_pp(const models::CausalLM& m, int64_t n) {
  models::KvCache cache(n);
  const Tensor ids = some_ids(n, m.vocab_size()).to(m.device());
  synchronize(m.device());
  const auto t0 = Clock::now();
  const Tensor logits = m.forward(ids, &cache, /*last_only=*/true);
  synchronize(m.device());
  return seconds_since(t0);
}

double time_tg(serve::Generator& gen, int64_t n, int64_t vocab) {
  const std::vector<int32_t> prompt{int32_t(13 % vocab)};
  return gen.generate(prompt, n + 1, [](int32_t) {}).decode_seconds;  // the n steps after the first token
}

struct Row {
  std::string test;
  int64_t tokens;
  double mean, stdev;
};

Row measure(const std::string& test, int64_t tokens, int reps, const std::function<double()>& once) {
  once();  // warm-up: allocations, kernel loading, autotuning
  std::vector<double> tps;
  for (int r = 0; r < reps; ++r) tps.push_back(double(tokens) / once());
  const double mean = std::accumulate(tps.begin(), tps.end(), 0.0) / double(tps.size());
  double var = 0;
  for (const double v : tps) var += (v - mean) * (v - mean);
  return {test, tokens, mean, tps.size() > 1 ? std::sqrt(var / double(tps.size() - 1)) : 0.0};
}

int run_lm_bench(const Args& a) {
  as_usage_error([&] {
    WICK_CHECK(a.reps >= 1, InvalidArgument, "lm-bench: --reps must be >= 1, got ", a.reps);
    for (const int64_t n : a.pp) WICK_CHECK(n >= 1, InvalidArgument, "lm-bench: -p values must be >= 1, got ", n);
    for (const int64_t n : a.tg) WICK_CHECK(n >= 1, InvalidArgument, "lm-bench: -n values must be >= 1, got ", n);
  });
  models::ModelLoadOptions o;
  o.device = a.device.empty() ? default_device() : Device::parse(a.device);
  if (!a.dtype.empty()) o.dtype = dtype_from_name(a.dtype);
  if (!a.quantize.empty()) as_usage_error([&] { o.quantize = ggml_type_from_name(a.quantize); });
  o.quant_activation = quant_activation_from_name(a.quant_activation);
  const models::LanguageModel lm = models::LanguageModel::load(a.model, o);
  const models::CausalLM& m = lm.model();
  for (const int64_t n : a.pp)
    WICK_CHECK(n <= m.context_length(), InvalidArgument, "lm-bench: -p ", n, " exceeds the context length ",
               m.context_length());
  for (const int64_t n : a.tg)
    WICK_CHECK(n < m.context_length(), InvalidArgument, "lm-bench: -n ", n, " exceeds the context length ",
               m.context_length());

  std::vector<Row> rows;
  for (const int64_t n : a.pp)
    rows.push_back(measure("pp" + std::to_string(n), n, a.reps, [&] { return time_pp(m, n); }));
  serve::Generator gen(m, {});
  if (!a.tg.empty()) gen.use_cuda_graph(!a.no_graph).context(*std::max_element(a.tg.begin(), a.tg.end()) + 2);
  for (const int64_t n : a.tg)
    rows.push_back(measure("tg" + std::to_string(n), n, a.reps, [&] { return time_tg(gen, n, m.vocab_size()); }));

  const std::string dev = m.device().str(), dt(dtype_name(m.dtype()));
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["architecture"] = lm.architecture();
    j["device"] = dev;
    j["dtype"] = dt;
    j["cuda_graph"] = m.device().is_cuda() && !a.no_graph;
    for (const Row& r : rows) j["tests"].push_back({{"test", r.test}, {"tokens_per_s", r.mean}, {"stdev", r.stdev}});
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("| model | arch | device | dtype | test | t/s |\n|---|---|---|---|---|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %s | %s | %s | %.2f ± %.2f |\n", a.model.c_str(), lm.architecture().c_str(), dev.c_str(),
                dt.c_str(), r.test.c_str(), r.mean, r.stdev);
  return kExitOk;
}

}  // namespace

Runner add_lm_bench(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("lm-bench", bench_command_about("lm-bench"));
  sub->add_option("--model,-m", a->model, "a GGUF file or a Hugging Face folder")->required();
  sub->add_option("--device", a->device, "cpu, cuda or cuda:N (default: the best present)");
  sub->add_option("--dtype", a->dtype, "compute dtype f32, f16 or bf16 (default: the model's on CUDA, f32 on CPU)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--quantize", a->quantize, "quantize float weights at load: q8_0, q4_0, q4_K or q6_K");
  add_quant_activation_option(sub, a->quant_activation);
  sub->add_option("-p,--n-prompt", a->pp, "prompt lengths to time (default 512)")->delimiter(',');
  sub->add_option("-n,--n-gen", a->tg, "generation lengths to time (default 128)")->delimiter(',');
  sub->add_option("-r,--reps", a->reps, "timed repetitions of each test (default 5)");
  sub->add_flag("--no-graph", a->no_graph, "decode without the CUDA graph (one launch per op)");
  sub->add_flag("--json", a->json, "print one JSON object instead of the table");
  return [a] { return run_lm_bench(*a); };
}

}  // namespace wick::cli
