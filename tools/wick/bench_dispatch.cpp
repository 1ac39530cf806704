// `wick bench|gpt2-bench|allreduce-bench ...`: exec the wick-bench installed (or built)
// beside wick, so scripts that run `build/tools/wick/wick bench` or `bin/wick bench` keep
// working with the benchmarks in their own program.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "bench_commands.h"
#include "commands.h"

namespace wick::cli {

int exec_wick_bench(int argc, char** argv) {
  namespace fs = std::filesystem;
  // This executable, symlinks resolved; the path it was started by if /proc is missing.
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = argv[0];
  const fs::path bench = self.parent_path() / "wick-bench";
  if (::access(bench.c_str(), X_OK) != 0) {
    std::cerr << "wick: error: '" << argv[1] << "' is in wick-bench, which was not found beside " << self.string()
              << '\n';
    return kExitFailure;
  }
  std::vector<char*> args{const_cast<char*>("wick")};
  args.insert(args.end(), argv + 1, argv + argc);
  args.push_back(nullptr);
  ::execv(bench.c_str(), args.data());
  std::cerr << "wick: error: cannot run " << bench.string() << ": " << std::strerror(errno) << '\n';
  return kExitFailure;
}

}  // namespace wick::cli
