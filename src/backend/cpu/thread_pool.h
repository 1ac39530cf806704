// A small persistent thread pool for CPU kernels. parallel_for splits [0, n) into
// contiguous chunks of at least `grain` items. Calls from inside a worker, or while the
// pool is busy with another caller's loop, run inline on the calling thread, so ops
// issued concurrently from several threads are safe.
#pragma once

#include <cstdint>
#include <functional>

namespace wick::cpu {

int num_threads();
void set_num_threads(int n);  // 1 disables threading; takes effect for later loops

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (n <= grain || num_threads() <= 1) {
    fn(int64_t(0), n);
    return;
  }
  parallel_for_impl(n, grain, std::function<void(int64_t, int64_t)>(std::forward<F>(fn)));
}

// Elements of work below which threading costs more than it saves.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace wick::cpu
