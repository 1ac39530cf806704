// Median-of-runs timing with the device synchronized around every run, so the clock
// measures finished work (CUDA launches are asynchronous) without needing CUDA events.
#include <algorithm>
#include <chrono>

#include "bench/bench.h"
#include "wick/tensor.h"

namespace wick::bench {

Timing time_row(const Row& row, const Prepared& prepared, Device device, int min_runs, double min_total_s) {
  using clock = std::chrono::steady_clock;
  constexpr int kWarmups = 2, kMaxRuns = 500;
  for (int i = 0; i < kWarmups; ++i) prepared.run();
  synchronize(device);
  std::vector<double> times;
  double total = 0;
  while (int(times.size()) < min_runs || (total < min_total_s && int(times.size()) < kMaxRuns)) {
    synchronize(device);
    const auto t0 = clock::now();
    prepared.run();
    synchronize(device);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    times.push_back(s);
    total += s;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return {times[times.size() / 2] / double(row.ops_per_run), int(times.size())};
}

}  // namespace wick::bench
