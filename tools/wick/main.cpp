// wick: the command-line tool. `wick` alone runs the built-in default job; `wick --help`
// lists the subcommands, and each has its own --help.
//
// Conventions (as git and curl): --help and --version print to stdout and exit 0; a wrong
// command line prints "wick: error: ..." and exits 2; a failure while working prints
// "wick: error: ..." and exits 1, and so does a write error on standard output (checked
// once, at the end, so `wick info > /dev/full` does not report success).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

#include "commands.h"
#include "wick/build_info.h"
#include "wick/error.h"

namespace {

using wick::cli::kExitFailure;
using wick::cli::kExitUsage;

// The subcommand a failed command line was for, to point at its --help ("" if none).
std::string subcommand_named_in(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[i]) return sub->get_name();
  return "";
}

int usage_error(const std::string& message, const std::string& subcommand) {
  std::cerr << "wick: error: " << message << "; see 'wick " << (subcommand.empty() ? "" : subcommand + " ")
            << "--help'\n";
  return kExitUsage;
}

// Standard output is buffered: a full disk or /dev/full shows only when it is flushed. The
// caller clears errno just before the writes whose failure this reports, so that the reason
// printed is theirs (a write that failed long before is reported without one).
int check_stdout(int rc) {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && std::cout && !std::ferror(stdout)) return rc;
  const int err = errno;
  std::fprintf(stderr, "wick: error: cannot write to standard output%s%s\n", err ? ": " : "",
               err ? std::strerror(err) : "");
  return kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wick: run neural networks on CPUs and NVIDIA GPUs"};
  app.name("wick");  // the usage line says `wick`, not the path it was started from
  app.set_version_flag("--version", std::string("wick ") + wick::build_info().version);
  app.require_subcommand(0, 1);
  std::map<CLI::App*, wick::cli::Runner> runners;
  auto add = [&](auto adder) {
    const size_t before = app.get_subcommands({}).size();
    wick::cli::Runner r = adder(app);
    runners[app.get_subcommands({})[before]] = std::move(r);
  };
  add(wick::cli::add_info);
  add(wick::cli::add_inspect);
  add(wick::cli::add_demo);
  add(wick::cli::add_convert);
  add(wick::cli::add_tokenize);
  add(wick::cli::add_embed);
  add(wick::cli::add_bench);
  add(wick::cli::add_generate);
  add(wick::cli::add_allreduce_bench);
  add(wick::cli::add_gpt2_bench);
  // wick takes no positional arguments of its own: a first word that is not an option must
  // name a subcommand (CLI11 would say "arguments were not expected").
  if (argc > 1 && argv[1][0] != '-' && subcommand_named_in(app, 2, argv).empty())
    return usage_error(std::string("unknown command '") + argv[1] + "'", "");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      errno = 0;
      return check_stdout(app.exit(e));
    }
    return usage_error(e.what(), subcommand_named_in(app, argc, argv));
  }
  int rc = kExitFailure;
  try {
    rc = [&] {
      for (auto& [sub, run] : runners)
        if (sub->parsed()) return run();
      return wick::cli::run_default();
    }();
  } catch (const wick::cli::UsageError& e) {
    return usage_error(e.what(), subcommand_named_in(app, argc, argv));
  } catch (const std::exception& e) {  // wick::Error and the standard library's
    std::cout.flush();                 // what was printed before the error stays before it
    std::cerr << "wick: error: " << e.what() << '\n';
    return kExitFailure;
  }
  errno = 0;
  return check_stdout(rc);
}
