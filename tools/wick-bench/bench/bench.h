// `wick bench`: benchmark rows, the timer that runs them, and the row lists per device.
// Row names, shapes and args are read by bench/compare_cpu.py and bench/compare_cuda.py,
// which rebuild the same inputs in numpy/PyTorch from `args`, so keep them in step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "wick/device.h"

namespace wick::bench {

// What a row's setup returns: the body to time (inputs already allocated) and an optional
// clean-up run after timing (e.g. restoring the allocator).
struct Prepared {
  std::function<void()> run;
  std::function<void()> teardown;
};

struct Row {
  std::string op, shape, dtype;
  double bytes = 0;  // each input read once + the output written once, per op
  double flops = 0;  // matmul / conv only
  // The sizes the comparison scripts need to rebuild the inputs.
  std::vector<std::pair<std::string, int64_t>> args;
  // How many ops one run performs; the reported time is per op (tiny-op and allocator rows).
  int64_t ops_per_run = 1;
  // Allocates the inputs on the device; called only for rows that pass --filter.
  std::function<Prepared(Device)> setup;
};

struct Timing {
  double seconds = 0;  // median per op
  int runs = 0;
};

// Warm-up, then at least min_runs timed runs (and at least min_total_s of them unless quick);
// each run timed by DeviceEvents around it (CUDA events on a GPU, the host clock on the
// CPU), the device synchronized before it.
Timing time_row(const Row& row, const Prepared& prepared, Device device, int min_runs, double min_total_s);

std::vector<Row> cpu_rows(bool quick);
std::vector<Row> cuda_rows(bool quick);

}  // namespace wick::bench
