#include "driver.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

#include "wick/build_info.h"

namespace wick::cli {

namespace {

// The subcommand a failed command line was for, to point at its --help ("" if none).
std::string subcommand_named_in(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[i]) return sub->get_name();
  return "";
}

int usage_error(const std::string& name, const std::string& message, const std::string& subcommand) {
  std::cerr << name << ": error: " << message << "; see '" << name << ' '
            << (subcommand.empty() ? "" : subcommand + " ") << "--help'\n";
  return kExitUsage;
}

// Standard output is buffered: a full disk or /dev/full shows only when it is flushed. The
// caller clears errno just before the writes whose failure this reports, so that the reason
// printed is theirs (a write that failed long before is reported without one).
int check_stdout(const std::string& name, int rc) {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && std::cout && !std::ferror(stdout)) return rc;
  const int err = errno;
  std::fprintf(stderr, "%s: error: cannot write to standard output%s%s\n", name.c_str(), err ? ": " : "",
               err ? std::strerror(err) : "");
  return kExitFailure;
}

}  // namespace

int run_main(const Program& program, int argc, char** argv) {
  const std::string& name = program.name;
  CLI::App app{program.about};
  app.name(name);  // the usage line says `wick`, not the path it was started from
  app.set_version_flag("--version", name + " " + build_info().version);
  if (program.run_without_subcommand)
    app.require_subcommand(0, 1);
  else
    app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  for (const Adder& add : program.subcommands) {
    const size_t before = app.get_subcommands({}).size();
    Runner r = add(app);
    runners[app.get_subcommands({})[before]] = std::move(r);
  }
  // No positional arguments of its own: a first word that is not an option must name a
  // subcommand (CLI11 would say "arguments were not expected").
  if (argc > 1 && argv[1][0] != '-' && subcommand_named_in(app, 2, argv).empty())
    return usage_error(name, std::string("unknown command '") + argv[1] + "'", "");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      errno = 0;
      return check_stdout(name, app.exit(e));
    }
    return usage_error(name, e.what(), subcommand_named_in(app, argc, argv));
  }
  int rc = kExitFailure;
  try {
    rc = [&] {
      for (auto& [sub, run] : runners)
        if (sub->parsed()) return run();
      return program.run_without_subcommand();
    }();
  } catch (const UsageError& e) {
    return usage_error(name, e.what(), subcommand_named_in(app, argc, argv));
  } catch (const std::exception& e) {  // wick::Error and the standard library's
    std::cout.flush();                 // what was printed before the error stays before it
    std::cerr << name << ": error: " << e.what() << '\n';
    return kExitFailure;
  }
  errno = 0;
  return check_stdout(name, rc);
}

}  // namespace wick::cli
