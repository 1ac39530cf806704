// wick: the command-line tool. `wick` alone runs the built-in default job; `wick --help`
// lists the subcommands, and each has its own --help. The conventions (exit codes, error
// lines, write errors on stdout) are driver.h's, shared with wick-bench.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "bench_commands.h"
#include "commands.h"
#include "driver.h"
#include "wick/blas.h"

int main(int argc, char** argv) {
  using namespace wick::cli;
  // OpenBLAS picks its kernels when it is loaded, from OPENBLAS_CORETYPE: where its own pick
  // is known to be slow (wick/blas.h), start again with the better one (before any thread or
  // file of ours exists; wick-bench, exec'd below, inherits it). If exec fails, go on as is.
  if (const auto core = wick::preferred_openblas_coretype()) {
    ::setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
    ::execv("/proc/self/exe", argv);
  }
  // The benchmark commands are wick-bench's: hand it the whole command line, --help too.
  for (const BenchCommand& c : kBenchCommands)
    if (argc > 1 && std::strcmp(argv[1], c.name) == 0) return exec_wick_bench(argc, argv);
  Program wick{"wick",
               "wick: run neural networks on CPUs and NVIDIA GPUs",
               {add_info, add_inspect, add_demo, add_convert, add_tokenize, add_detokenize, add_embed, add_generate,
                add_chat, add_serve},
               run_default};
  // Listed in `wick --help` under their own heading; never parsed here (exec'd above).
  for (const BenchCommand& c : kBenchCommands)
    wick.subcommands.push_back([&c, argc, argv](CLI::App& app) -> Runner {
      app.add_subcommand(c.name, c.about)->group(kBenchGroup)->allow_extras();
      return [argc, argv] { return exec_wick_bench(argc, argv); };
    });
  return run_main(wick, argc, argv);
}
