// The subcommands of the `wick` command and what they share with wick-bench's
// (tools/wick-bench). Each registers its options on the app and returns the function that
// runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "wick/error.h"

namespace wick::cli {

using Runner = std::function<int()>;

// Exit codes (README "Exit codes"): 0 done, 1 the work failed (a bad file, a device error,
// a write error), 2 the command line is wrong (CLI11's parse errors, and the checks below).
inline constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

// A mistake in the command line found after parsing (an option value out of range, no
// input given): main prints it like CLI11's own errors and exits with kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Runs a check that throws wick::Error and reports its failure as a UsageError: for
// library validation (e.g. models::check_generation_options) applied to command-line values.
template <class Check>
void as_usage_error(Check&& check) {
  try {
    check();
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// --quant-activation, shared by the commands that load a language model (value: f32 or q8,
// parsed by wick::quant_activation_from_name).
inline void add_quant_activation_option(CLI::App* sub, std::string& value) {
  sub->add_option("--quant-activation", value,
                  "how quantized weights multiply activations: q8 (rounded to q8_0 blocks as llama.cpp does, "
                  "integer dot products) or f32 (exact)")
      ->check(CLI::IsMember({"f32", "q8"}))
      ->capture_default_str();
}

Runner add_info(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_demo(CLI::App& app);
Runner add_convert(CLI::App& app);     // cmd_convert.cpp (GGUF -> safetensors)
Runner add_tokenize(CLI::App& app);    // cmd_tokenize.cpp
Runner add_detokenize(CLI::App& app);  // cmd_tokenize.cpp
Runner add_embed(CLI::App& app);
Runner add_generate(CLI::App& app);  // cmd_generate.cpp (text generation, any model)
Runner add_chat(CLI::App& app);      // cmd_chat.cpp (a conversation through the chat template)
Runner add_serve(CLI::App& app);     // cmd_serve.cpp (the OpenAI-compatible HTTP server)
int run_embed(const std::vector<std::string>& texts, const std::string& model_dir, const std::string& device,
              const std::string& dtype, bool json, bool similarity);

int run_info();
int run_demo(const std::string& device);

// Runs the default job (no subcommand).
int run_default();

}  // namespace wick::cli
