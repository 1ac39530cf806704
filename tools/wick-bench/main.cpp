// wick-bench: the benchmark commands of wick (bench, gpt2-bench, allreduce-bench), a
// program of their own so that `wick` does not carry the benchmark rows. `wick bench ...`
// runs this with argv[0] "wick" (tools/wick/bench_dispatch.cpp): then it names itself wick
// in usage lines and errors, exactly as when the commands were built into wick.
#include <filesystem>

#include "bench_commands.h"
#include "driver.h"
#include "subcommands.h"

int main(int argc, char** argv) {
  using namespace wick::cli;
  const bool via_wick = argc > 0 && std::filesystem::path(argv[0]).filename() == "wick";
  const Program bench{via_wick ? "wick" : "wick-bench",
                      "wick-bench: the benchmark commands of wick",
                      {add_bench, add_gpt2_bench, add_allreduce_bench, add_lm_bench},
                      {}};
  return run_main(bench, argc, argv);
}
