// The benchmark commands live in their own program, wick-bench (tools/wick-bench), so that
// `wick` does not carry the benchmark rows; `wick bench ...` hands its command line to the
// wick-bench beside it (bench_dispatch.cpp). Their names and one-line descriptions, for the
// help of both programs.
#pragma once

#include <string_view>

namespace wick::cli {

struct BenchCommand {
  const char* name;
  const char* about;
};
inline constexpr BenchCommand kBenchCommands[] = {
    {"bench", "Time the benchmark ops (median of >= 20 runs) on a device"},
    {"gpt2-bench", "GPT-2 forward time on one GPU or tensor-parallel over several"},
    {"allreduce-bench", "all_reduce bandwidth over all local GPUs (NCCL)"},
    {"lm-bench", "Prompt processing and generation tokens/s of a language model (llama-bench's pp/tg)"},
    {"batched-bench", "Batched decoding throughput per parallel sequence count (as llama-batched-bench)"},
    {"mask-bench", "Constrained decoding: JSON Schema compile time and per-token mask time over a corpus"},
};
// Their heading in `wick --help`.
inline constexpr const char* kBenchGroup = "Benchmarks (run by wick-bench, beside wick)";

// The description of the benchmark command `name` ("" for another name).
inline const char* bench_command_about(std::string_view name) {
  for (const BenchCommand& c : kBenchCommands)
    if (name == c.name) return c.about;
  return "";
}

// Runs the wick-bench beside this executable (/proc/self/exe's folder) on argv[1..]; its
// argv[0] is "wick", which makes it name itself wick in its messages, as the command was
// typed. Returns only if that fails, having printed why: kExitFailure.
int exec_wick_bench(int argc, char** argv);

}  // namespace wick::cli
