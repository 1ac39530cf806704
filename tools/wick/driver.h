// The main() that the `wick` and `wick-bench` commands share: CLI11 parsing, the chosen
// subcommand's run, and the conventions of commands.h (as git and curl): --help and
// --version print to stdout and exit 0; a wrong command line prints "<name>: error: ..."
// and exits 2; a failure while working prints "<name>: error: ..." and exits 1, and so
// does a write error on standard output (checked once, at the end, so `wick info >
// /dev/full` does not report success).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "commands.h"

namespace wick::cli {

// Registers one subcommand on the app and returns the function that runs it.
using Adder = std::function<Runner(CLI::App&)>;

struct Program {
  std::string name;   // in the usage lines and the error messages
  std::string about;  // the first line of --help
  std::vector<Adder> subcommands;
  Runner run_without_subcommand;  // empty: a subcommand is required
};

int run_main(const Program& program, int argc, char** argv);

}  // namespace wick::cli
