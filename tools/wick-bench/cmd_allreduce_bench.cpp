// `wick allreduce-bench`: all_reduce bandwidth over all visible GPUs, one
// thread per GPU through Communicator::init_local. For each size it reports the median
// time of one all_reduce (sum, f32) and the bus bandwidth as nccl-tests defines it,
// busbw = bytes * 2(n-1)/n / time, so figures compare with nccl-tests and with
// bench/allreduce_h200.py (the same sizes through torch.distributed).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_commands.h"
#include "commands.h"
#include "output_file.h"
#include "subcommands.h"
#include "wick/distributed.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

struct Args {
  std::string sizes = "1M..1G";
  std::string json;
  int reps = 20;  // timed repetitions (the median is reported)
  int iters = 5;  // back-to-back all_reduces per repetition (amortizes the host sync)
};

// "64K", "1M", "1G" or plain bytes.
size_t parse_bytes(const std::string& s) {
  WICK_CHECK(!s.empty(), InvalidArgument, "allreduce-bench: empty size");
  size_t pos = 0;
  const unsigned long long v = std::stoull(s, &pos);
  const std::string unit = s.substr(pos);
  if (unit.empty()) return v;
  if (unit == "K" || unit == "k") return v << 10;
  if (unit == "M" || unit == "m") return v << 20;
  if (unit == "G" || unit == "g") return v << 30;
  fail(ErrorKind::InvalidArgument, "allreduce-bench: bad size '", s, "' (use e.g. 1M, 256M, 1G)");
}

// "A..B": A, 4A, 16A, ... up to B; or a comma-separated list.
std::vector<size_t> parse_sizes(const std::string& spec) {
  std::vector<size_t> out;
  if (const size_t dots = spec.find(".."); dots != std::string::npos) {
    const size_t lo = parse_bytes(spec.substr(0, dots)), hi = parse_bytes(spec.substr(dots + 2));
    WICK_CHECK(lo > 0 && lo <= hi, InvalidArgument, "allreduce-bench: bad range '", spec, "'");
    for (size_t s = lo; s <= hi; s *= 4) out.push_back(s);
  } else {
    size_t start = 0;
    while (start <= spec.size()) {
      const size_t comma = std::min(spec.find(',', start), spec.size());
      out.push_back(parse_bytes(spec.substr(start, comma - start)));
      start = comma + 1;
    }
  }
  return out;
}

struct Row {
  size_t bytes;
  double median_us, algbw_gbs, busbw_gbs;
};

int run_allreduce_bench(const Args& a) {
  const int n = cuda_device_count();
  WICK_CHECK(n >= 1, Unsupported, "allreduce-bench: needs at least one CUDA device (", n, " present)");
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(Device::cuda(i));
  std::vector<Communicator> comms = Communicator::init_local(devices);
  const std::vector<size_t> sizes = parse_sizes(a.sizes);
  OutputFile json_file(a.json, "allreduce-bench");  // before the run: an unwritable path fails now
  const int reps = std::max(1, a.reps), iters = std::max(1, a.iters);

  // times[rank][size][rep] in seconds per all_reduce; a repetition's time is the slowest
  // rank's, as the collective finishes when the last rank does.
  std::vector<std::vector<std::vector<double>>> times(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::barrier sync(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Communicator& c = comms[size_t(r)];
      bool failed = false;
      for (size_t bytes : sizes) {
        std::vector<double> t(size_t(reps), 0.0);
        int arrived = 0;  // barrier phases this rank has joined for this size
        try {
          if (!failed) {
            Tensor x = full({int64_t(bytes / 4)}, Scalar(1.0), DType::F32, c.device());
            for (int w = 0; w < 3; ++w) c.all_reduce(x, ReduceKind::Sum);  // warm-up (connects)
            synchronize(c.device());
            for (int rep = 0; rep < reps; ++rep) {
              sync.arrive_and_wait();
              ++arrived;
              const auto t0 = std::chrono::steady_clock::now();
              for (int i = 0; i < iters; ++i) c.all_reduce(x, ReduceKind::Sum);
              synchronize(c.device());
              t[size_t(rep)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
            }
          }
        } catch (const std::exception& e) {
          errors[size_t(r)] = e.what();
          failed = true;
        }
        // A failed rank keeps joining the barrier so the others are not left waiting on
        // it (they may still hang inside NCCL; the error is reported if they return).
        for (; failed && arrived < reps; ++arrived) sync.arrive_and_wait();
        times[size_t(r)].push_back(std::move(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    WICK_CHECK(errors[size_t(r)].empty(), Device, "allreduce-bench: rank ", r, ": ", errors[size_t(r)]);

  std::vector<Row> rows;
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<double> per_rep(size_t(reps), 0.0);
    for (int rep = 0; rep < reps; ++rep)
      for (int r = 0; r < n; ++r)
        per_rep[size_t(rep)] = std::max(per_rep[size_t(rep)], times[size_t(r)][s][size_t(rep)]);
    std::sort(per_rep.begin(), per_rep.end());
    const double med =
        reps % 2 ? per_rep[size_t(reps / 2)] : 0.5 * (per_rep[size_t(reps / 2 - 1)] + per_rep[size_t(reps / 2)]);
    const double algbw = double(sizes[s]) / med / 1e9;
    rows.push_back({sizes[s], med * 1e6, algbw, algbw * 2.0 * (n - 1) / n});
  }

  std::printf("all_reduce sum f32 over %d GPU(s), median of %d x %d calls\n", n, reps, iters);
  std::printf("%14s %12s %14s %14s\n", "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)");
  for (const Row& row : rows)
    std::printf("%14zu %12.1f %14.2f %14.2f\n", row.bytes, row.median_us, row.algbw_gbs, row.busbw_gbs);
  if (!a.json.empty()) {
    nlohmann::json j;
    j["library"] = "wick";
    j["op"] = "all_reduce";
    j["dtype"] = "f32";
    j["world_size"] = n;
    j["reps"] = reps;
    j["iters"] = iters;
    for (const Row& row : rows)
      j["results"].push_back({{"bytes", row.bytes},
                              {"time_us", row.median_us},
                              {"algbw_gbs", row.algbw_gbs},
                              {"busbw_gbs", row.busbw_gbs}});
    json_file.write(j.dump(2) + '\n');
  }
  return 0;
}

}  // namespace

Runner add_allreduce_bench(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("allreduce-bench", bench_command_about("allreduce-bench"));
  sub->add_option("--sizes", a->sizes, "byte range A..B (x4 steps) or list, e.g. 1M..1G or 1M,64M (default 1M..1G)");
  sub->add_option("--json", a->json, "also write the results as JSON to this file");
  sub->add_option("--reps", a->reps, "timed repetitions per size (default 20)");
  sub->add_option("--iters", a->iters, "all_reduces per repetition (default 5)");
  return [a] { return run_allreduce_bench(*a); };
}

}  // namespace wick::cli
