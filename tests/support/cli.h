// Running the built `wick` (or another program, e.g. wick-bench) from a test: exit code,
// stdout and stderr. The one runner every CLI test uses.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace wick::test {

struct CliResult {
  int code;  // the exit status, -1 if killed by a signal
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// How to run it: `shell_prefix` comes before the command (limits or the environment, e.g.
// "ulimit -f 8; exec " or "env -u X PATH=..."), standard input is read from `stdin_from`,
// and standard output goes to `stdout_to` when it is given (then `out` stays empty);
// `program` is the executable run.
struct CliRun {
  std::string shell_prefix;
  std::string stdin_from = "/dev/null";
  std::string stdout_to;
  std::string program = WICK_CLI_PATH;
};

// Runs `program args` (wick by default) through /bin/sh (args are shell words: quote paths).
inline CliResult run_cli(const std::string& args, const CliRun& how = {}) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = "wick_cli_" + std::to_string(::getpid());
  const fs::path out = dir / (tag + ".out"), err = dir / (tag + ".err");
  const std::string cmd = how.shell_prefix + " '" + how.program + "' " + args + " <'" + how.stdin_from + "' >'" +
                          (how.stdout_to.empty() ? out.string() : how.stdout_to) + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, how.stdout_to.empty() ? slurp(out) : "", slurp(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

}  // namespace wick::test
