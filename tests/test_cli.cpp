// The `wick` command's conventions, run as a user would (WICK_CLI_PATH): exit codes (0 ok,
// 1 runtime error, 2 usage error), the `wick: error:` prefix, --help/--version, write
// errors on stdout and output files, the text inputs of tokenize/embed (TEXT..., --file,
// -), the generate option checks (before the model loads), and the default job without
// python3 on PATH, the benchmark commands run through wick-bench. Also
// models::check_generation_options directly.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/build_info.h"
#include "wick/device.h"
#include "wick/error.h"
#include "wick/models/generate.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"
#include "wick/models/sentence_embedder.h"
#include "wick/serve/generator.h"
#include "wick/text/tokenizer.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

using test::CliResult;
using test::slurp;

// A fresh temporary folder per test, removed afterwards.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_test_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }

  // Runs `env wick args`; stdin from `input` (a file in dir_), stdout to `stdout_to` when
  // given (else captured).
  CliResult run(const std::string& args, const std::string& env = "", const std::string& input = "",
                const std::string& stdout_to = "") {
    const fs::path in = input.empty() ? fs::path("/dev/null") : write("cli.in", input);
    return test::run_cli(args, {.shell_prefix = env, .stdin_from = in.string(), .stdout_to = stdout_to});
  }

  fs::path dir_;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// ---- exit codes, the error prefix, --help and --version ----------------------------------

TEST_F(Cli, UsageErrorsExitWithTwoAndOneErrorLine) {
  // An unknown option, a missing required option, a value that is not a number: CLI11's
  // own errors (they exited with 109, 106 and 105 before).
  for (const std::string args : {"generate --bogus", "tokenize 'x'", "generate --top-k many"}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_TRUE(starts_with(r.err, "wick: error: ")) << args << ": " << r.err;
    const std::string sub = args.substr(0, args.find(' '));
    EXPECT_NE(r.err.find("; see 'wick " + sub + " --help'\n"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const CliResult r = run("generate --bogus");
  EXPECT_EQ(r.err, "wick: error: The following argument was not expected: --bogus; see 'wick generate --help'\n");
}

TEST_F(Cli, UnknownCommandSaysSo) {
  const CliResult r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "wick: error: unknown command 'frobnicate'; see 'wick --help'\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(Cli, RuntimeErrorsExitWithOne) {
  const CliResult r = run("inspect '" + (dir_ / "missing.safetensors").string() + "'");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(starts_with(r.err, "wick: error: ")) << r.err;
}

TEST_F(Cli, HelpAndVersionGoToStdoutAndExitZero) {
  const CliResult help = run("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_EQ(help.err, "");
  // The usage line names the program `wick`, not the path it was started from.
  EXPECT_NE(help.out.find("Usage: wick [OPTIONS] [SUBCOMMAND]"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find(WICK_CLI_PATH), std::string::npos) << help.out;
  const CliResult sub = run("generate --help");
  EXPECT_EQ(sub.code, 0);
  EXPECT_NE(sub.out.find("Usage: wick generate [OPTIONS]"), std::string::npos) << sub.out;

  const CliResult v = run("--version");
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(v.out, "wick " + build_info().version + "\n");
  EXPECT_EQ(v.err, "");
}

// ---- write errors ------------------------------------------------------------------------

TEST_F(Cli, AWriteErrorOnStdoutExitsWithOne) {
  for (const std::string args : {"info", "--help", "--version"}) {
    const CliResult r = run(args, "", "", "/dev/full");
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(r.err, "wick: error: cannot write to standard output: No space left on device\n") << args;
  }
}

TEST_F(Cli, BenchJsonIsCheckedBeforeTheRunAndAfterWriting) {
  // No such folder: fails at once, before the header line of the table is printed.
  const fs::path bad = dir_ / "no_such_dir" / "rows.json";
  const CliResult r = run("bench --quick --filter no-such-row --json '" + bad.string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "wick: error: bench: cannot write '" + bad.string() + "': No such file or directory\n");
  EXPECT_EQ(r.out, "");
  // A full device: the write itself fails at the end.
  const CliResult full = run("bench --quick --filter no-such-row --json /dev/full");
  EXPECT_EQ(full.code, 1);
  EXPECT_EQ(full.err, "wick: error: bench: writing '/dev/full' failed: No space left on device\n");
  // A good path gets the (here empty) row list.
  const CliResult ok = run("bench --quick --filter no-such-row --json '" + (dir_ / "rows.json").string() + "'");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(slurp(dir_ / "rows.json"), "[]\n");
}

TEST_F(Cli, BenchRunsOnTheBestDeviceByDefault) {
  const CliResult r = run("bench --quick --filter no-such-row");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(starts_with(r.out, "wick bench on " + default_device().str())) << r.out;
}

// ---- the benchmark commands: wick-bench's, reached through `wick` -----------------------

const std::vector<std::string> kBenchCommands = {"bench", "gpt2-bench", "allreduce-bench", "lm-bench", "batched-bench"};

TEST_F(Cli, BenchCommandsRunTheWickBenchBesideWick) {
  // `wick bench --help` is wick-bench's help, under the name the user typed.
  const CliResult help = run("bench --help");
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_EQ(help.err, "");
  EXPECT_NE(help.out.find("Usage: wick bench [OPTIONS]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--filter"), std::string::npos) << help.out;
  // The arguments go through: a usage error is reported as wick's own were.
  const CliResult usage = run("gpt2-bench --batch 2");
  EXPECT_EQ(usage.code, 2);
  EXPECT_EQ(usage.err, "wick: error: --model is required; see 'wick gpt2-bench --help'\n");
}

TEST_F(Cli, WickHelpListsTheBenchCommandsUnderTheirOwnHeading) {
  const CliResult help = run("--help");
  ASSERT_EQ(help.code, 0) << help.err;
  const size_t heading = help.out.find("Benchmarks (run by wick-bench, beside wick):\n");
  ASSERT_NE(heading, std::string::npos) << help.out;
  for (const std::string& name : kBenchCommands)
    EXPECT_NE(help.out.find("\n  " + name + " ", heading), std::string::npos) << name << "\n" << help.out;
}

TEST_F(Cli, BenchCommandsSayWhenWickBenchIsMissing) {
  // wick alone in a folder: the benchmark commands fail with where wick-bench was looked for.
  const fs::path alone = dir_ / "wick";
  fs::copy_file(WICK_CLI_PATH, alone);
  test::CliRun wick_alone;
  wick_alone.program = alone.string();
  for (const std::string& name : kBenchCommands) {
    const CliResult r = test::run_cli(name + " --help", wick_alone);
    EXPECT_EQ(r.code, 1) << name;
    EXPECT_EQ(r.err, "wick: error: '" + name + "' is in wick-bench, which was not found beside " +
                         fs::canonical(alone).string() + "\n");
    EXPECT_EQ(r.out, "");
  }
  // The rest of wick does not need it.
  const CliResult v = test::run_cli("--version", wick_alone);
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(v.out, "wick " + build_info().version + "\n");
}

// mask-bench on a small vocabulary: every document is taken, the JSON holds each case's
// tokens and times, and a second pass (fragments cached) is reported apart.
TEST_F(Cli, MaskBenchTakesEveryDocumentAndReportsEachPass) {
  test::CliRun bench;
  bench.program = WICK_BENCH_CLI_PATH;
  const std::string dir = ::testing::TempDir();
  const std::string cases = dir + "/wick_mask_cases.json", out = dir + "/wick_mask_out.json";
  std::ofstream(cases) << R"([{"name": "s", "schema": {"type": "string", "maxLength": 8}, "doc": "\"abc\""},
    {"name": "o", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
     "doc": "{\"n\": 12}"}])";
  const CliResult r = test::run_cli("mask-bench --tokenizer '" + test::data_path("tokenizers/llama3") + "' --cases " +
                                        cases + " --passes 2 --json " + out,
                                    bench);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 cases (0 rejected)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass 2 (fragments cached"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(test::slurp(out));
  ASSERT_EQ(j.at("cases").size(), 2u);
  for (const auto& c : j.at("cases")) {
    EXPECT_TRUE(c.at("accepted").get<bool>()) << c.dump();
    EXPECT_EQ(c.at("ids").size(), c.at("mask_us").size()) << c.dump();
  }
  EXPECT_EQ(test::run_cli("mask-bench --tokenizer x --cases y --passes 0", bench).code, 2);
}

TEST_F(Cli, WickBenchRunDirectlyNamesItself) {
  test::CliRun bench;
  bench.program = WICK_BENCH_CLI_PATH;
  const CliResult help = test::run_cli("--help", bench);
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("Usage: wick-bench [OPTIONS] SUBCOMMAND"), std::string::npos) << help.out;
  for (const std::string& name : kBenchCommands)
    EXPECT_NE(help.out.find("\n  " + name + " "), std::string::npos) << name << "\n" << help.out;
  const CliResult none = test::run_cli("", bench);
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err, "wick-bench: error: A subcommand is required; see 'wick-bench --help'\n");
  const CliResult v = test::run_cli("--version", bench);
  EXPECT_EQ(v.out, "wick-bench " + build_info().version + "\n");
  // The table is the same as through `wick bench`.
  const CliResult r = test::run_cli("bench --quick --filter no-such-row", bench);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(starts_with(r.out, "wick bench on " + default_device().str())) << r.out;
}

// ---- text inputs: TEXT..., --file, - -----------------------------------------------------

std::string ids_line(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "\n";
}

TEST_F(Cli, TokenizeTakesSeveralTextsFilesAndStandardInput) {
  const std::string model = test::data_path("gpt2-tokenizer");
  const text::Tokenizer tok = text::Tokenizer::from_folder(model);
  const std::string m = "tokenize --model '" + model + "' ";
  // One line of ids per text, in the order given: arguments, then files.
  const fs::path lines = write("lines.txt", "first line\r\nsecond line\n");
  const CliResult r = run(m + "'Hello world' ' again' --file '" + lines.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, ids_line(tok.encode("Hello world")) + ids_line(tok.encode(" again")) +
                       ids_line(tok.encode("first line")) + ids_line(tok.encode("second line")));
  // "-": all of standard input as one text, byte for byte; 300 KB is more than one
  // command-line argument may hold (MAX_ARG_STRLEN, 128 KiB).
  std::string big;
  while (big.size() < 300'000) big += "The quick brown fox jumps over the lazy dog.\n";
  const CliResult in = run(m + "-", "", big);
  ASSERT_EQ(in.code, 0) << in.err;
  EXPECT_EQ(in.out, ids_line(tok.encode(big)));
  // "--file -": the lines of standard input.
  const CliResult in_lines = run(m + "--file -", "", "a b\nc\n");
  ASSERT_EQ(in_lines.code, 0) << in_lines.err;
  EXPECT_EQ(in_lines.out, ids_line(tok.encode("a b")) + ids_line(tok.encode("c")));
}

TEST_F(Cli, TextInputErrorsSayWhatIsWrong) {
  const std::string model = test::data_path("gpt2-tokenizer");
  for (const std::string cmd : {"tokenize --model '" + model + "'", std::string("embed --model /nonexistent")}) {
    const std::string name = cmd.substr(0, cmd.find(' '));
    const CliResult dir = run(cmd + " --file '" + dir_.string() + "'");
    EXPECT_EQ(dir.code, 1) << dir.err;
    EXPECT_EQ(dir.err, "wick: error: " + name + ": --file '" + dir_.string() +
                           "' is a directory; give a text file with one input per line\n");
    const fs::path missing = dir_ / "missing.txt";
    const CliResult nofile = run(cmd + " --file '" + missing.string() + "'");
    EXPECT_EQ(nofile.code, 1);
    EXPECT_EQ(nofile.err,
              "wick: error: " + name + ": cannot open --file '" + missing.string() + "': No such file or directory\n");
    const CliResult none = run(cmd);
    EXPECT_EQ(none.code, 2);
    EXPECT_EQ(none.err, "wick: error: " + name +
                            ": no texts given (pass TEXT..., --file F, or - for standard input); "
                            "see 'wick " +
                            name + " --help'\n");
    const CliResult twice = run(cmd + " - --file -", "", "x\n");
    EXPECT_EQ(twice.code, 2);
    EXPECT_NE(twice.err.find(name + ": standard input ('-') can be read only once"), std::string::npos) << twice.err;
  }
}

// The installed all-MiniLM-L6-v2, or "" (those tests are skipped without it).
std::string installed_minilm() {
  try {
    return models::SentenceEmbedder::find_installed_minilm().string();
  } catch (const Error&) {
    return "";
  }
}

TEST_F(Cli, EmbedJsonReplacesInvalidUtf8) {
  const std::string model = installed_minilm();
  if (model.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 is not installed";
  // "caf\xE9" is Latin-1, not UTF-8: written as U+FFFD (EF BF BD) instead of failing.
  const CliResult r = run("embed --device cpu --json --model '" + model + "' --file -", "", "ok\ncaf\xE9\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"text\":\"caf\xEF\xBF\xBD\""), std::string::npos) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("\"text\":\"ok\""), std::string::npos);
}

// --max-length means the same whichever tokenizer the folder gives: all-MiniLM-L6-v2's
// tokenizer.json cuts where its WordPiece vocab.txt does ([CLS] + 254 ids + [SEP]), which the
// embedder uses and tests/test_minilm.cpp checks against sentence-transformers.
TEST_F(Cli, TokenizeMaxLengthCutsEveryTokenizer) {
  const std::string model = installed_minilm();
  if (model.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 is not installed";
  std::string text;
  while (text.size() < 2000) text += "the quick brown fox jumps over the lazy dog ";
  const std::string m = "tokenize --model '" + model + "' ";
  const CliResult json = run(m + "--max-length 256 -", "", text);
  const CliResult vocab = run(m + "--wordpiece --max-length 256 -", "", text);
  const CliResult whole = run(m + "-", "", text);
  ASSERT_EQ(json.code, 0) << json.err;
  ASSERT_EQ(vocab.code, 0) << vocab.err;
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(json.out, vocab.out);
  EXPECT_EQ(std::count(json.out.begin(), json.out.end(), ' '), 255) << json.out;
  EXPECT_TRUE(json.out.starts_with("101 ") && json.out.ends_with(" 102\n")) << json.out;
  EXPECT_GT(std::count(whole.out.begin(), whole.out.end(), ' '), 400);
  EXPECT_TRUE(whole.out.starts_with(json.out.substr(0, json.out.size() - 5)));
  const CliResult tiny = run(m + "--max-length 1 -", "", text);
  EXPECT_EQ(tiny.code, 1);
  EXPECT_NE(tiny.err.find("leaves no room"), std::string::npos) << tiny.err;
}

TEST_F(Cli, TheDefaultJobNeedsNoPython) {
  if (installed_minilm().empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 is not installed";
  // PATH holds one folder without python3 (`env -u` clears an override of the lookup).
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  const CliResult r = run("", "env -u WICK_MINILM_DIR PATH='" + bin.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("all-MiniLM-L6-v2 sentence embeddings on"), std::string::npos) << r.out;
  // The first row of the README's matrix: the real model, not the demo fallback.
  EXPECT_NE(r.out.find("  [0]  1.000  0.755 -0.105  0.247 -0.070  0.048  0.063  A man is eating food."),
            std::string::npos)
      << r.out;
}

// ---- the BLAS kernels -----------------------------------------------------------------------

// OpenBLAS names the kernels it chose when OPENBLAS_VERBOSE=2 ("Core: X"). Where it does not
// know the CPU it takes SSE3 ones ("Prescott": 3x slower here); the wick command then starts
// again with AVX-512 or AVX2 ones. A core type the user sets stands.
TEST_F(Cli, RunsOpenBlasWithKernelsOfThisCpu) {
  const auto last_core = [](const std::string& err) {
    const size_t at = err.rfind("Core: ");
    return at == std::string::npos ? std::string() : err.substr(at + 6, err.find('\n', at) - at - 6);
  };
  const CliResult r = run("info", "OPENBLAS_VERBOSE=2");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string core = last_core(r.err);
  if (core.empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS (no 'Core:' line)";
  for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge", "Atom"})
    EXPECT_NE(core, old) << r.err;
  EXPECT_EQ(last_core(run("info", "OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=Haswell").err), "Haswell");
}

// ---- generate: sampling and length options -----------------------------------------------

TEST_F(Cli, GenerateChecksItsOptionsBeforeLoadingTheModel) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"--max-tokens 9223372036854775807",
       "generate: max_tokens must be between 1 and 1024 (the model's context is 1024 tokens), got 9223372036854775807"},
      {"--max-tokens 0", "generate: max_tokens must be between 1 and 1024"},
      {"--max-tokens -1", "generate: max_tokens must be between 1 and 1024"},
      {"--temperature 1e-320", "generate: temperature must be >= 0: 0 (greedy) or a finite number >= 0.0001, got "},
      {"--temperature nan", "generate: temperature must be >= 0"},
      {"--temperature -1", "generate: temperature must be >= 0"},
      {"--top-p 0", "generate: top_p must be in (0, 1], got 0"},
      {"--top-p nan", "generate: top_p must be in (0, 1], got nan"},
      {"--top-p 1.5", "generate: top_p must be in (0, 1], got 1.5"},
      {"--top-k -3", "generate: top_k must be >= 0 (0: all tokens), got -3"},
  };
  for (const auto& c : cases) {
    const CliResult r = run("generate --device cpu " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_TRUE(starts_with(r.err, "wick: error: " + c.message)) << c.args << ": " << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;                        // readable bounds, no 300-digit number
    EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;  // nothing was loaded
  }
}

// --stop cuts the text before the first stop string and ends the generation there: the
// output is the greedy text without --stop, up to where the string first appears.
// --spec ngram and --spec draft: the same greedy text, drafts made and counted on stderr; bad
// values are usage errors before the model loads.
TEST_F(Cli, GenerateWithPromptLookupDraftsGivesTheSameText) {
  const std::string base = "generate --model " + test::data_path("llama_quant/q4_k_m.gguf") +
                           " --device cpu --temperature 0 --max-tokens 48 --prompt 'a b c a b c a b c'";
  const CliResult plain = run(base);
  ASSERT_EQ(plain.code, 0) << plain.err;
  const CliResult spec = run(base + " --spec ngram --draft-tokens 6");
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("speculative (ngram): "), std::string::npos) << spec.err;
  EXPECT_EQ(plain.err.find("speculative"), std::string::npos) << plain.err;
  for (const char* bad : {" --spec ngram --draft-tokens 0", " --spec ngram --draft-tokens 65",
                          " --spec ngram --spec-ngram 0", " --spec medusa", " --spec draft", " --draft-model x.gguf"}) {
    const CliResult r = run(base + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
  }
  // A draft model: the same file quantized to q4_0 at load.
  const CliResult draft = run(base + " --spec draft --draft-model " + test::data_path("llama_quant/q4_k_m.gguf") +
                              " --draft-quantize q4_0 --draft-tokens 4");
  ASSERT_EQ(draft.code, 0) << draft.err;
  EXPECT_EQ(draft.out, plain.out);
  EXPECT_NE(draft.err.find("speculative (draft): "), std::string::npos) << draft.err;
}

TEST_F(Cli, GenerateStopsBeforeAStopString) {
  const std::string base = "generate --device cpu --temperature 0 --max-tokens 40";
  const CliResult full = run(base);
  ASSERT_EQ(full.code, 0) << full.err;
  ASSERT_GE(full.out.size(), 30u) << full.out;
  // Three letters from the middle of the text (none that the shell would read).
  size_t from = 20;
  while (from + 3 < full.out.size() && !std::all_of(full.out.begin() + long(from), full.out.begin() + long(from + 3),
                                                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
    ++from;
  ASSERT_LT(from + 3, full.out.size()) << full.out;
  const std::string stop = full.out.substr(from, 3);
  const size_t at = full.out.find(stop);
  const CliResult cut = run(base + " --stop '" + stop + "' --stop 'never appears in it'");
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_EQ(cut.out, full.out.substr(0, at) + "\n");
  EXPECT_EQ(full.err.find("generated: 40 tokens"), full.err.find("generated:")) << full.err;
  EXPECT_EQ(cut.err.find("generated: 40 tokens"), std::string::npos) << cut.err;  // it ended early
  // A stop string that never comes changes nothing; an empty one is a usage error.
  EXPECT_EQ(run(base + " --stop 'never appears in it'").out, full.out);
  const CliResult empty = run(base + " --stop ''");
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("--stop string is empty"), std::string::npos) << empty.err;
}

TEST(GenerationOptions, BoundsAreInclusiveWhereDocumented) {
  using models::check_generation_options;
  const auto opt = [](double t, int64_t k, double p) { return models::SamplingOptions{t, k, p, 0}; };
  EXPECT_NO_THROW(check_generation_options(opt(0, 0, 1), 1, 1024));
  EXPECT_NO_THROW(check_generation_options(opt(models::kMinTemperature, 50, 1e-9), 1024, 1024));
  EXPECT_NO_THROW(check_generation_options(opt(1e300, 0, 0.5), 7, 8));
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (const double t : {-0.5, 1e-320, 0.99e-4, inf, -inf, nan})
    EXPECT_WICK_ERROR(check_generation_options(opt(t, 0, 1), 1, 8), InvalidArgument, "temperature must be");
  for (const double p : {0.0, -0.1, 1.0000001, nan, inf})
    EXPECT_WICK_ERROR(check_generation_options(opt(1, 0, p), 1, 8), InvalidArgument, "top_p must be in (0, 1]");
  EXPECT_WICK_ERROR(check_generation_options(opt(1, -1, 1), 1, 8), InvalidArgument, "top_k must be >= 0");
  for (const int64_t n :
       {int64_t(0), int64_t(9), std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()})
    EXPECT_WICK_ERROR(check_generation_options(opt(0, 0, 1), n, 8), InvalidArgument,
                      "max_tokens must be between 1 and 8 (the model's context is 8 tokens)");
}

TEST(GenerationOptions, AHugeTemperatureIsNearlyUniformAndKeepsMasksOut) {
  // Found by fuzz_cli_args: a temperature of 4e61 is accepted, and then every finite logit,
  // even -1e30, weighs about the same (softmax of logits / T); a masked (-inf) logit never
  // comes out, whatever the temperature.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {1.0f, 3.0f, -inf, -1e30f};
  EXPECT_NO_THROW(models::check_generation_options({4e61, 0, 1.0, 0}, 1, 1024));
  models::Sampler s({.temperature = 4e61, .top_k = 0, .top_p = 1.0, .seed = 7});
  int counts[4] = {};
  for (int i = 0; i < 4000; ++i) ++counts[s.sample(logits)];
  EXPECT_EQ(counts[2], 0);
  for (int id : {0, 1, 3}) EXPECT_NEAR(counts[id], 4000 / 3, 150) << id;  // 5 sigma of a fair die
}

TEST(GenerationOptions, AHugeTokenBudgetStopsAtTheContext) {
  // The library caps the budget at the context: prompt + INT64_MAX no longer overflows the
  // cache capacity ("cache capacity must be >= 0, got -9223372036854775805" before). A
  // prompt that nearly fills the context keeps the generation short.
  const fs::path assets = fs::path(WICK_TEST_DATA_DIR) / ".." / ".." / "assets" / "gpt2-tiny";
  const auto model = models::LlamaModel::load(assets);
  const int64_t context = model.config().context_length;
  const std::vector<int32_t> prompt(size_t(context - 6), 15496);  // "Hello" repeated
  int64_t seen = 0;
  const auto st =
      serve::Generator(model, {}).generate(prompt, std::numeric_limits<int64_t>::max(), [&](int32_t) { ++seen; });
  // Six free positions give six tokens: the context holds the prompt and the output.
  EXPECT_EQ(st.generated_tokens, 6);
  EXPECT_EQ(seen, st.generated_tokens);
}

}  // namespace
}  // namespace wick

namespace wick {

// --json-schema / --grammar: a random model sampled at temperature 1 writes a document of
// the schema (checked by nlohmann::json) and ends there; bad constraints are usage errors
// naming the option, before any model loads.
TEST(CliConstrained, GenerateFollowsAJsonSchemaOrAGrammar) {
  using test::CliResult;
  const std::string model = "--model '" + test::data_path("llama_quant/q4_k_m.gguf") + "' --temperature 1";
  const std::string schema =
      R"('{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}, "ok": {"type": "boolean"}}, "required": ["n", "ok"]}')";
  for (const char* seed : {"1", "2", "3"}) {
    const CliResult r =
        test::run_cli("generate " + model + " --seed " + seed + " --max-tokens 60 --json-schema " + schema);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string text = r.out.substr(0, r.out.size() - 1);  // the trailing newline
    const auto doc = nlohmann::json::parse(text);
    EXPECT_GE(doc.at("n").get<int>(), 1);
    EXPECT_LE(doc.at("n").get<int>(), 9);
    EXPECT_TRUE(doc.at("ok").is_boolean());
  }
  const CliResult g = test::run_cli("generate " + model + " --grammar 'root ::= (\"ab\" | \"c\"){2,3} \"!\"'");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_TRUE(std::regex_match(g.out, std::regex("(ab|c){2,3}!\n"))) << g.out;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--grammar 'root ::= root \"a\" | \"b\"'", "--grammar: grammar: rule 'root' is left-recursive"},
           {"--json-schema '{\"$ref\": \"#/nope\"}'", "--json-schema: json schema:"},
           {"--grammar-file /no/such/file", "--grammar-file: cannot read '/no/such/file'"},
           {"--grammar 'root ::= \"a\"' --json-schema '{}'",
            "--grammar and --json-schema: give one output constraint"}}) {
    const CliResult r = test::run_cli("generate " + model + " " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

// --chat-template-file: the file's template renders the conversation instead of the model's
// (here only the messages' contents: "hi" is 2 of this vocabulary's byte tokens).
TEST(CliChatTemplate, AFileReplacesTheModelsTemplate) {
  using test::CliResult;
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/wick_plain.jinja", bad = dir + "/wick_bad.jinja";
  std::ofstream(good) << "{% for m in messages %}{{ m.content }}{% endfor %}";
  std::ofstream(bad) << "{% if %}";
  const std::string model = "--model '" + test::data_path("llama_quant/q4_k_m.gguf") + "' --chat --prompt hi";
  const CliResult r = test::run_cli("generate " + model + " --max-tokens 1 --chat-template-file " + good);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("prompt: 2 tokens"), std::string::npos) << r.err;
  const CliResult theirs = test::run_cli("generate " + model + " --max-tokens 1");
  ASSERT_EQ(theirs.code, 0) << theirs.err;
  EXPECT_EQ(theirs.err.find("prompt: 2 tokens"), std::string::npos) << theirs.err;
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {bad, "--chat-template-file '" + bad + "': chat template line 1:"},
           {"/no/such/file", "--chat-template-file: cannot read '/no/such/file'"}}) {
    const CliResult e = test::run_cli("generate " + model + " --chat-template-file " + file);
    EXPECT_EQ(e.code, 2) << e.err;
    EXPECT_NE(e.err.find(says), std::string::npos) << e.err;
  }
}

}  // namespace wick
