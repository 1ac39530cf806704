// wick-bench: the benchmark commands of wick (bench, gpt2-bench, allreduce-bench, lm-bench,
// batched-bench), a program of their own so that `wick` does not carry the benchmark rows.
// `wick bench ...` runs this with argv[0] "wick" (tools/wick/bench_dispatch.cpp): then it names itself wick
// in usage lines and errors, exactly as when the commands were built into wick.
#include <cstring>
#include <filesystem>

#include "bench_commands.h"
#include "driver.h"
#include "subcommands.h"

int main(int argc, char** argv) {
  using namespace wick::cli;
  const bool via_wick = argc > 0 && std::filesystem::path(argv[0]).filename() == "wick";
  const Program bench{via_wick ? "wick" : "wick-bench",
                      "wick-bench: the benchmark commands of wick",
                      {add_bench, add_gpt2_bench, add_allreduce_bench, add_lm_bench, add_batched_bench, add_mask_bench},
                      {}};
  // llama-batched-bench spells its options with one dash (-npp 256), which CLI11 would read
  // as short options; batched-bench takes them as typed for that tool by their -- names.
  static char npp[] = "--npp", ntg[] = "--ntg", npl[] = "--npl";
  for (int i = 1; i < argc; ++i)
    for (char* long_name : {npp, ntg, npl})
      if (std::strcmp(argv[i], long_name + 1) == 0) argv[i] = long_name;
  return run_main(bench, argc, argv);
}
