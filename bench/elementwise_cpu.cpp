// Hand-run CPU benchmark of the elementwise family (not built by CMake, not a test):
//   ninja -C build wick && g++ -std=c++20 -O3 -march=x86-64-v3 -Iinclude bench/elementwise_cpu.cpp \
//       -Lbuild/src -lwick -Wl,-rpath,$PWD/build/src -o /tmp/ew_bench && WICK_NUM_THREADS=1 /tmp/ew_bench
//   python3 bench/elementwise_numpy.py      # the same shapes in numpy, for the ratio
// GB/s counts bytes read + written; best of 7 runs after a warm-up.
#include <chrono>
#include <cstdio>
#include <functional>

#include "wick/wick.h"
using namespace wick;
static double best_ms(const std::function<void()>& f, int reps = 7) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
int main() {
  const int64_t n = 1 << 24;
  Tensor a = rand(Shape{n}), b = rand(Shape{n});
  Tensor m = rand(Shape{4096, 4096}), r = rand(Shape{4096});
  auto report = [](const char* name, double ms, double bytes) {
    std::printf("%-28s %8.2f ms  %7.2f GB/s\n", name, ms, bytes / ms / 1e6);
  };
  report("add f32 2^24", best_ms([&] { add(a, b); }), 3.0 * 4 * n);
  report("exp f32 2^24", best_ms([&] { exp(a); }), 2.0 * 4 * n);
  report("gelu f32 2^24", best_ms([&] { gelu(a); }), 2.0 * 4 * n);
  report("add row-bcast 4096x4096", best_ms([&] { add(m, r); }), 2.0 * 4 * 4096 * 4096);
  report("add col-bcast 4096x4096", best_ms([&] { add(m, r.reshape({4096, 1})); }), 2.0 * 4 * 4096 * 4096);
  report("add transposed 4096x4096", best_ms([&] { add(m.t(), m); }), 3.0 * 4 * 4096 * 4096);
}
