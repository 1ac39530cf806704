// Median-of-runs timing by device events around every run (CUDA events on the GPU, as
// PyTorch's side of the comparison is timed; the host clock on the CPU), the device
// synchronized before each run so runs do not overlap. Host-clock timing around a
// synchronize would add the synchronize's own cost (~10 us on the H200 machine) to rows
// of a few microseconds.
#include <algorithm>

#include "bench/bench.h"
#include "wick/event.h"
#include "wick/tensor.h"

namespace wick::bench {

Timing time_row(const Row& row, const Prepared& prepared, Device device, int min_runs, double min_total_s) {
  constexpr int kWarmups = 2, kMaxRuns = 500;
  for (int i = 0; i < kWarmups; ++i) prepared.run();
  synchronize(device);
  std::vector<double> times;
  double total = 0;
  while (int(times.size()) < min_runs || (total < min_total_s && int(times.size()) < kMaxRuns)) {
    synchronize(device);
    const DeviceEvent start = DeviceEvent::record(device);
    prepared.run();
    const double s = start.seconds_until(DeviceEvent::record(device));
    times.push_back(s);
    total += s;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return {times[times.size() / 2] / double(row.ops_per_run), int(times.size())};
}

}  // namespace wick::bench
