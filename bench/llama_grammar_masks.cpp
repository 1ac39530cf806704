// Hand-run probe (not built by wick's CMake): llama.cpp's grammar sampler on the cases that
// `wick mask-bench --json OUT` wrote, for bench/grammar_masks.py's side-by-side table. Each
// schema goes through llama.cpp's json_schema_to_grammar (timed as the compile, with
// llama_sampler_init_grammar), then each token of the document: llama_sampler_apply over the
// whole vocabulary (what masks the logits; timed), then llama_sampler_accept.
// Build against a llama.cpp build tree (LLAMA: its source, B: its build):
//   g++ -std=c++17 -O2 bench/llama_grammar_masks.cpp -I$LLAMA/include -I$LLAMA/common -I$LLAMA/ggml/include \
//     -L$B/bin -lllama -lllama-common -Wl,-rpath,$B/bin -o /tmp/llama_grammar_masks
//   /tmp/llama_grammar_masks VOCAB.gguf OUT.json   -> one JSON line per case on stdout
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "json-schema-to-grammar.h"
#include "json.h"
#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 3;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n = llama_vocab_n_tokens(vocab);
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  const common_json all = common_json::parse(ss.str());
  std::vector<llama_token_data> cand(static_cast<size_t>(n));
  using clk = std::chrono::steady_clock;
  for (const auto& c : all.at("cases")) {
    std::string out = "{\"ok\": ";
    try {
      const auto t0 = clk::now();
      const std::string gbnf = json_schema_to_grammar(c.at("schema"));
      llama_sampler* s = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
      const double compile_ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
      if (!s) throw std::runtime_error("no sampler");
      std::string times;
      bool ok = true;
      for (const auto& idj : c.at("ids")) {
        const llama_token id = idj.get<int>();
        for (int t = 0; t < n; ++t) cand[size_t(t)] = {t, 0.0f, 0.0f};
        llama_token_data_array arr{cand.data(), size_t(n), -1, false};
        const auto t1 = clk::now();
        llama_sampler_apply(s, &arr);
        const double us = std::chrono::duration<double, std::micro>(clk::now() - t1).count();
        times += (times.empty() ? "" : ",") + std::to_string(us);
        if (cand[size_t(id)].logit == -INFINITY) {
          ok = false;
          break;
        }
        llama_sampler_accept(s, id);
      }
      llama_sampler_free(s);
      out += std::string(ok ? "true" : "false") + ", \"compile_ms\": " + std::to_string(compile_ms) +
             ", \"mask_us\": [" + times + "]}";
    } catch (const std::exception&) {
      out += "false}";
    }
    std::printf("%s\n", out.c_str());
  }
  llama_model_free(model);
  return 0;
}
