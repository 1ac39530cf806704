// `wick mask-bench`: the cost of constrained decoding's token masks (text/grammar.h), as
// MaskBench and XGrammar's and llguidance's papers measure it: for each case (a JSON Schema
// and a document valid under it), the schema is compiled (timed), the document tokenized
// with the model's tokenizer, and each token's mask computed (timed) before the token is
// taken, as a generation would. Reports the compile time's median and the per-token mask
// time's mean, median, p99 and maximum; --json writes every case's token ids and times, so
// bench/grammar_masks.py replays the same tokens through xgrammar and llguidance.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_commands.h"
#include "commands.h"
#include "output_file.h"
#include "subcommands.h"
#include "wick/gguf.h"
#include "wick/text/grammar.h"
#include "wick/text/json_schema.h"
#include "wick/text/tokenizer.h"

namespace wick::cli {

namespace {

struct Args {
  std::string tokenizer, cases, json;
  int64_t passes = 1;
};

using Clock = std::chrono::steady_clock;
double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

text::Tokenizer load_tokenizer(const std::string& path) {
  if (path.ends_with(".gguf")) return text::Tokenizer::from_gguf(gguf::File::open(path));
  return text::Tokenizer::from_folder(path);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

int run_mask_bench(const Args& a) {
  OutputFile out(a.json, "mask-bench");
  const auto t_tok = Clock::now();
  const text::Tokenizer tok = load_tokenizer(a.tokenizer);
  const auto table = std::make_shared<const text::TokenTable>(tok);
  const double table_ms = micros_since(t_tok) / 1e3;
  std::ifstream in(a.cases);
  WICK_CHECK(in.good(), InvalidArgument, "mask-bench: cannot read '", a.cases, "'");
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);  // schemas keep their key order
  WICK_CHECK(cases.is_array(), InvalidArgument, "mask-bench: --cases must hold a JSON array");
  text::EncodeOptions plain;
  plain.add_special = false;
  plain.parse_special = false;
  std::vector<uint32_t> mask((table->vocab_size() + 31) / 32);
  // One pass over the cases: each schema compiled, each token's mask timed before the token
  // is taken. Later passes meet the fragments the first one cached in the token table (what
  // a server that has run for a while sees).
  struct Pass {
    std::vector<double> masks, compiles;
    size_t rejected = 0;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  };
  auto run_pass = [&] {
    Pass r;
    for (const auto& c : cases) {
      const std::string schema = c.at("schema").dump(), doc = c.at("doc").get<std::string>();
      const auto t0 = Clock::now();
      const text::Grammar g = text::Grammar::from_gbnf(text::json_schema_to_gbnf(schema));
      const double compile_us = micros_since(t0);
      r.compiles.push_back(compile_us / 1e3);
      const std::vector<int32_t> ids = tok.encode(doc, plain);
      text::GrammarMatcher m(g, table);
      std::vector<double> times;
      bool ok = true;
      for (const int32_t id : ids) {
        const auto t1 = Clock::now();
        m.fill_mask(mask);
        times.push_back(micros_since(t1));
        if (!((mask[size_t(id) / 32] >> (id % 32)) & 1) || !m.accept(id)) {
          ok = false;
          break;
        }
      }
      ok = ok && m.can_end();
      if (!ok) ++r.rejected;
      r.masks.insert(r.masks.end(), times.begin(), times.end());
      r.rows.push_back({{"name", c.value("name", "")},
                        {"schema", c.at("schema")},
                        {"doc", doc},
                        {"ids", ids},
                        {"compile_ms", compile_us / 1e3},
                        {"mask_us", times},
                        {"accepted", ok}});
    }
    return r;
  };
  auto mean_of = [](const std::vector<double>& v) {
    double sum = 0;
    for (const double t : v) sum += t;
    return v.empty() ? 0 : sum / double(v.size());
  };
  std::printf("tokenizer %s: %zu tokens, table %.1f ms\n", a.tokenizer.c_str(), table->vocab_size(), table_ms);
  const Pass first = run_pass();
  const std::vector<double>& masks = first.masks;
  const double mean = mean_of(masks);
  const size_t rejected = first.rejected;
  std::printf(
      "%zu cases (%zu rejected), %zu masks: mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us; "
      "compile median %.3f ms, max %.3f ms\n",
      cases.size(), rejected, masks.size(), mean, percentile(masks, 0.5), percentile(masks, 0.99),
      percentile(masks, 1.0), percentile(first.compiles, 0.5), percentile(first.compiles, 1.0));
  for (int64_t k = 1; k < a.passes; ++k) {
    const Pass again = run_pass();
    std::printf(
        "pass %lld (fragments cached by the passes before): mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us\n",
        static_cast<long long>(k + 1), mean_of(again.masks), percentile(again.masks, 0.5),
        percentile(again.masks, 0.99), percentile(again.masks, 1.0));
  }
  const nlohmann::ordered_json& rows = first.rows;
  const std::vector<double>& compiles = first.compiles;
  out.write(nlohmann::ordered_json{{"tokenizer", a.tokenizer},
                                   {"vocab", table->vocab_size()},
                                   {"mean_us", mean},
                                   {"p50_us", percentile(masks, 0.5)},
                                   {"p99_us", percentile(masks, 0.99)},
                                   {"max_us", percentile(masks, 1.0)},
                                   {"compile_median_ms", percentile(compiles, 0.5)},
                                   {"rejected", rejected},
                                   {"cases", rows}}
                .dump() +
            "\n");
  return rejected == 0 ? 0 : 1;
}

}  // namespace

Runner add_mask_bench(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("mask-bench", bench_command_about("mask-bench"));
  sub->add_option("--tokenizer", a->tokenizer, "a GGUF file or a folder with tokenizer.json")->required();
  sub->add_option("--cases", a->cases, "JSON array of {\"name\", \"schema\", \"doc\"}")->required();
  sub->add_option("--json", a->json, "also write every case's token ids and times as JSON to this file");
  sub->add_option("--passes", a->passes,
                  "run the cases this many times over one token table; passes after the first are reported "
                  "apart (the grammar fragments cached: a server's steady state)")
      ->check(CLI::Range(int64_t(1), int64_t(100)))
      ->capture_default_str();
  return [a] { return run_mask_bench(*a); };
}

}  // namespace wick::cli
