// Running the built `wick` from a test: exit code, stdout and stderr.
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

// Runs `shell_prefix 'wick' args` through /bin/sh (args are shell words: quote paths);
// shell_prefix may set limits first, e.g. "ulimit -f 8; exec ".
inline CliResult run_cli(const std::string& args, const std::string& shell_prefix = "") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = "wick_cli_" + std::to_string(::getpid());
  const fs::path out = dir / (tag + ".out"), err = dir / (tag + ".err");
  const std::string cmd =
      shell_prefix + "'" + WICK_CLI_PATH + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

}  // namespace wick::test
