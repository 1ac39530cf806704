// Hand-run benchmark of Tokenizer::encode (not built by CMake, not a test), single-threaded,
// over the paragraphs of a text file; bench/tokenize_hf.py times HF `tokenizers` on the same.
//   ninja -C build wick && g++ -std=c++20 -O2 -Iinclude bench/tokenize_bench.cpp -Lbuild/src -lwick \
//       -Wl,-rpath,$PWD/build/src -o /tmp/tok_bench
//   cat README.md docs/*.md > /tmp/corpus.txt
//   /tmp/tok_bench /tmp/corpus.txt tests/data/gpt2-tokenizer tests/data/tokenizers/llama3 ...
// Each MODEL is what `wick tokenize --model` takes (folder, tokenizer.json or .gguf). Prints
// the first (cold cache) pass and the best of 3 warm passes in MB/s and tokens.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

using wick::text::Tokenizer;

static std::vector<std::string> paragraphs(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  std::vector<std::string> out;
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find("\n\n", at);
    if (end == std::string::npos) end = all.size();
    if (end > at) out.push_back(all.substr(at, end - at));
    at = end + 2;
  }
  return out;
}

static Tokenizer load(const std::string& m) {
  if (m.ends_with(".gguf")) return Tokenizer::from_gguf(wick::gguf::File::open(m));
  if (m.ends_with(".json")) return Tokenizer::from_json_file(m);
  return Tokenizer::from_folder(m);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CORPUS MODEL...\n", argv[0]);
    return 2;
  }
  const auto texts = paragraphs(argv[1]);
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  std::printf("%zu paragraphs, %.2f MB\n", texts.size(), bytes / 1e6);
  for (int m = 2; m < argc; ++m) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tokenizer tok = load(argv[m]);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cold = 0, best = 1e30;
    size_t tokens = 0;
    for (int rep = 0; rep < 4; ++rep) {
      tokens = 0;
      const auto a = std::chrono::steady_clock::now();
      for (const auto& t : texts) tokens += tok.encode(t, {.add_special = false}).size();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
      if (rep == 0)
        cold = s;
      else
        best = std::min(best, s);
    }
    std::printf("%-45s load %7.1f ms  cold %7.2f MB/s  warm %7.2f MB/s  %zu tokens\n", argv[m], load_s * 1e3,
                bytes / cold / 1e6, bytes / best / 1e6, tokens);
  }
  return 0;
}
