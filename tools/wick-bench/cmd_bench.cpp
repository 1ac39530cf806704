// `wick bench`: times the benchmark rows of a device (tools/wick-bench/bench) and prints a table
// of median time and throughput; --json writes the rows for bench/compare_*.py.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "bench/bench.h"
#include "bench_commands.h"
#include "commands.h"
#include "output_file.h"
#include "subcommands.h"
#include "wick/threads.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

struct BenchOptions {
  std::string device, json, filter;  // device "": the best present, as the other commands
  bool quick = false;
};

std::string format_time(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

// GFLOP/s or TFLOP/s for rows with flops, GB/s for rows with bytes, "-" for per-op rows.
std::string format_rate(const bench::Row& row, double s) {
  char buf[32];
  if (row.flops > 0) {
    const double g = row.flops / s / 1e9;
    if (g >= 1000)
      std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", g / 1e3);
    else
      std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", g);
  } else if (row.bytes > 0) {
    std::snprintf(buf, sizeof buf, "%.1f GB/s", row.bytes / s / 1e9);
  } else {
    return "-";
  }
  return buf;
}

int run_bench(const BenchOptions& o) {
  const Device device = o.device.empty() ? default_device() : Device::parse(o.device);
  OutputFile json_file(o.json, "bench");  // before the run: an unwritable path fails now
  WICK_CHECK(!device.is_cuda() || cuda_available(), Unsupported,
             "bench: device " + device.str() + " requested but no CUDA device is available");
  std::vector<bench::Row> rows = device.is_cuda() ? bench::cuda_rows(o.quick) : bench::cpu_rows(o.quick);
  const int threads = device.is_cpu() ? cpu_num_threads() : 0;
  std::printf("wick bench on %s%s%s: median of >= 20 runs after warm-up\n", device.str().c_str(),
              device.is_cpu() ? (" (" + std::to_string(threads) + " threads)").c_str() : "",
              o.quick ? ", quick sizes" : "");
  std::printf("%-20s %-32s %-9s %12s %14s\n", "op", "shape", "dtype", "time", "throughput");
  std::fflush(stdout);
  manual_seed(0);
  nlohmann::json out = nlohmann::json::array();
  std::regex filter;
  try {
    filter = std::regex(o.filter);
  } catch (const std::regex_error& e) {
    fail(ErrorKind::InvalidArgument, "bench: --filter '", o.filter, "' is not a regular expression (", e.what(), ")");
  }
  for (const bench::Row& row : rows) {
    const std::string id = row.op + " " + row.shape + " " + row.dtype;
    if (!o.filter.empty() && !std::regex_search(id, filter)) continue;
    bench::Prepared prepared = row.setup(device);
    const bench::Timing t = bench::time_row(row, prepared, device, 20, o.quick ? 0.0 : 0.2);
    if (prepared.teardown) prepared.teardown();
    prepared = {};  // frees the inputs before the next row allocates
    std::printf("%-20s %-32s %-9s %12s %14s\n", row.op.c_str(), row.shape.c_str(), row.dtype.c_str(),
                format_time(t.seconds).c_str(), format_rate(row, t.seconds).c_str());
    std::fflush(stdout);
    nlohmann::json args = nlohmann::json::object();
    for (const auto& [k, v] : row.args) args[k] = v;
    out.push_back({{"op", row.op},
                   {"shape", row.shape},
                   {"dtype", row.dtype},
                   {"device", device.str()},
                   {"seconds", t.seconds},
                   {"runs", t.runs},
                   {"bytes", row.bytes},
                   {"flops", row.flops},
                   {"gbps", row.bytes > 0 ? row.bytes / t.seconds / 1e9 : 0.0},
                   {"tflops", row.flops > 0 ? row.flops / t.seconds / 1e12 : 0.0},
                   {"ops_per_run", row.ops_per_run},
                   {"threads", threads},
                   {"args", args}});
  }
  if (!o.json.empty()) json_file.write(out.dump(1) + '\n');
  return 0;
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto opt = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", bench_command_about("bench"));
  sub->add_option("--device", opt->device, "cpu, cuda or cuda:N (default: the best present)");
  sub->add_option("--json", opt->json, "Also write the rows as JSON to this file");
  sub->add_option("--filter", opt->filter,
                  "Only rows whose \"op shape dtype\" matches this regular expression (a plain substring works)");
  sub->add_flag("--quick", opt->quick, "Small sizes (a few seconds; for CI smoke runs)");
  return [opt] { return run_bench(*opt); };
}

}  // namespace wick::cli
