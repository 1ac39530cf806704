// `wick info`: version, build options, compiled backends, devices with name and memory.
#include <iostream>

#include "commands.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {
std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
  return buf;
}
}  // namespace

int run_info() {
  const BuildInfo& b = build_info();
  std::cout << "wick " << b.version << " (" << b.build_type << ", " << b.compiler << ")\n";
  std::cout << "  cpu kernels:  -march=" << (b.cpu_arch.empty() ? "default" : b.cpu_arch) << ", BLAS " << b.blas
            << '\n';
  std::cout << "  backends:     cpu" << (b.cuda ? ", cuda (sm_" + b.cuda_archs + ")" : "")
            << (b.cuda ? "" : "  (CUDA backend not compiled: nvcc was not found at build time)") << '\n';
  std::cout << "devices:\n";
  for (const DeviceInfo& d : list_devices()) {
    std::cout << "  " << d.device << ": " << d.name;
    if (d.total_memory) std::cout << ", " << gib(d.total_memory) << " total, " << gib(d.free_memory) << " free";
    if (!d.compute_capability.empty()) std::cout << ", compute capability " << d.compute_capability;
    std::cout << '\n';
  }
  if (b.cuda && !cuda_available()) std::cout << "  (no CUDA device found)\n";
  return 0;
}

Runner add_info(CLI::App& app) {
  app.add_subcommand("info", "Show version, build options, backends and devices");
  return run_info;
}

}  // namespace wick::cli
