// The subcommands of wick-bench; their names and descriptions are in
// tools/wick/bench_commands.h, which `wick --help` lists too.
#pragma once

#include "commands.h"

namespace wick::cli {

Runner add_bench(CLI::App& app);            // cmd_bench.cpp + bench/*.cpp
Runner add_gpt2_bench(CLI::App& app);       // cmd_gpt2_bench.cpp
Runner add_allreduce_bench(CLI::App& app);  // cmd_allreduce_bench.cpp
Runner add_lm_bench(CLI::App& app);         // cmd_lm_bench.cpp
Runner add_batched_bench(CLI::App& app);    // cmd_batched_bench.cpp
Runner add_mask_bench(CLI::App& app);       // cmd_mask_bench.cpp

}  // namespace wick::cli
