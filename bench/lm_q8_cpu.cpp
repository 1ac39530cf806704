// Hand-run probe (not built): lm-bench's pp and tg tests (tools/wick-bench/cmd_lm_bench.cpp,
// eager CPU loop) for a GGUF quantized at load, with a chosen QuantActivation, which
// `wick lm-bench` has no option for (it loads with the default, f32 activations).
//   g++ -O2 -std=c++20 -Iinclude bench/lm_q8_cpu.cpp -Lbuild/src -lwick -Wl,-rpath,build/src -o /tmp/lm_q8
//   WICK_NUM_THREADS=2 /tmp/lm_q8 MODEL.gguf q8_0|q4_0|q4_K|q6_K q8|f32 PP TG REPS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/models/llama.h"
#include "wick/wick.h"

using namespace wick;
using Clock = std::chrono::steady_clock;

static Tensor some_ids(int64_t n, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 7919 + 13) % size_t(vocab));
  return Tensor::from_vector(ids, Shape{1, n});
}

int main(int argc, char** argv) {
  if (argc < 7) return std::fprintf(stderr, "usage: MODEL TYPE q8|f32 PP TG REPS\n"), 2;
  models::LlamaLoadOptions o;
  o.quantize = ggml_type_from_name(argv[2]);
  o.quant_activation = std::string(argv[3]) == "q8" ? QuantActivation::Q8 : QuantActivation::F32;
  const auto m = models::LlamaModel::load(argv[1], o);
  const int64_t pp = std::atoll(argv[4]), tg = std::atoll(argv[5]);
  const int reps = std::atoi(argv[6]);
  auto secs = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto time_pp = [&] {
    models::KvCache cache(pp);
    const auto t0 = Clock::now();
    m.forward(some_ids(pp, m.vocab_size()), &cache, true);
    return secs(t0);
  };
  auto time_tg = [&] {
    models::KvCache cache(tg + 1);
    Tensor ids = some_ids(1, m.vocab_size());
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < tg; ++i) {
      const Tensor logits = m.forward(ids, &cache, true);
      ids = Tensor::from_vector(std::vector<int64_t>{argmax(logits.reshape({-1}), 0).to_vector<int64_t>()[0]},
                                Shape{1, 1});
    }
    return secs(t0);
  };
  for (auto [name, n, f] : {std::tuple{"pp", pp, std::function<double()>(time_pp)},
                            std::tuple{"tg", tg, std::function<double()>(time_tg)}}) {
    if (n <= 0) continue;
    if (std::string(name) == "pp") f();  // warm-up (tg's first steps are its own warm-up)
    double best = 0, sum = 0;
    for (int r = 0; r < reps; ++r) {
      const double tps = double(n) / f();
      sum += tps;
      best = std::max(best, tps);
    }
    std::printf("%s %s %s%lld: mean %.2f tok/s, best %.2f (%d reps)\n", argv[2], argv[3], name, (long long)n,
                sum / reps, best, reps);
  }
}
