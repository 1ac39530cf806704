// wick: the command-line tool. `wick` alone runs the built-in default job; `wick --help`
// lists the subcommands, and each has its own --help.
#include <iostream>
#include <map>

#include "commands.h"
#include "wick/error.h"

int main(int argc, char** argv) {
  CLI::App app{"wick: run neural networks on CPUs and NVIDIA GPUs"};
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
    return wick::cli::run_default();
  } catch (const wick::Error& e) {
    std::cerr << "wick: error: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "wick: error: " << e.what() << '\n';
    return 1;
  }
}
