// `wick info`: version, build options, backends (and why CUDA is unavailable, if it is),
// devices with name and memory. `wick info --ops`: the op x dtype x device table that
// docs/ops.md shows (Markdown; each cell lists the backends that run that op on that
// dtype).
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

constexpr DType kDTypes[] = {
#define WICK_DTYPE_ENTRY(e, T, name, cat) DType::e,
    WICK_FOR_EACH_DTYPE(WICK_DTYPE_ENTRY)
#undef WICK_DTYPE_ENTRY
};

// Whether the CUDA backend module is loaded: op_supported answers for CUDA exactly then.
bool cuda_backend_loaded() { return op_supported(DeviceType::CUDA, op_names().front(), DType::F32).has_value(); }

int print_ops() {
  const bool cuda = cuda_backend_loaded();
  std::cout << "| op |";
  for (DType d : kDTypes) std::cout << ' ' << dtype_name(d) << " |";
  std::cout << "\n| --- |";
  for (size_t i = 0; i < std::size(kDTypes); ++i) std::cout << " --- |";
  std::cout << '\n';
  for (const std::string& op : op_names()) {
    std::cout << "| " << op << " |";
    for (DType d : kDTypes) {
      const bool on_cpu = *op_supported(DeviceType::CPU, op, d);
      const bool on_cuda = cuda && *op_supported(DeviceType::CUDA, op, d);
      std::cout << ' ' << (on_cpu && on_cuda ? "cpu cuda" : on_cpu ? "cpu" : on_cuda ? "cuda" : "—") << " |";
    }
    std::cout << '\n';
  }
  if (!cuda) std::cout << "\n(CUDA: " << cuda_backend_status() << ")\n";
  return 0;
}

}  // namespace

int run_info() {
  const BuildInfo& b = build_info();
  std::cout << "wick " << b.version << " (" << b.build_type << ", " << b.compiler << ")\n";
  std::cout << "  cpu kernels:  -march=" << (b.cpu_arch.empty() ? "default" : b.cpu_arch) << ", BLAS " << b.blas
            << '\n';
  const std::string cuda = cuda_backend_status();
  const bool loaded = cuda_backend_loaded();
  std::cout << "  backends:     cpu" << (loaded ? ", cuda (sm_" + b.cuda_archs + ")" : "") << '\n';
  std::cout << "  cuda:         " << (loaded ? "" : "unavailable: ") << cuda << '\n';
  std::cout << "devices:\n";
  for (const DeviceInfo& d : list_devices()) {
    std::cout << "  " << d.device << ": " << d.name;
    if (d.total_memory) std::cout << ", " << gib(d.total_memory) << " total, " << gib(d.free_memory) << " free";
    if (!d.compute_capability.empty()) std::cout << ", compute capability " << d.compute_capability;
    std::cout << '\n';
  }
  if (loaded && !cuda_available()) std::cout << "  (no CUDA device found)\n";
  return 0;
}

Runner add_info(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("info", "Show version, build options, backends and devices");
  auto ops = std::make_shared<bool>(false);
  sub->add_flag("--ops", *ops, "Print which ops run on which dtype and backend (the table of docs/ops.md)");
  return [ops] { return *ops ? print_ops() : run_info(); };
}

}  // namespace wick::cli
