// The transformers oracle of the Llama-family fixtures (tests/data/llama/gen_llama.py):
// expected.safetensors holds prompt0/1 (i64), logits0/1 (T, vocab) f32 at every position
// and greedy (32 ids), the continuation of prompt<greedy_prompt> (0, phi3: 1).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/golden.h"
#include "wick/io.h"
#include "wick/models/llama.h"

namespace wick::test {

inline const std::vector<std::string>& llama_fixtures() {
  static const std::vector<std::string> names = {"llama3",          "llama2",   "mistral", "qwen2",        "qwen3",
                                                 "gemma2",          "phi3",     "gemma3",  "mixtral",      "qwen2moe",
                                                 "qwen3moe",        "olmoe",    "gptoss",  "gptoss_mxfp4", "deepseek2",
                                                 "deepseek2_group", "deepseek3"};
  return names;
}

// The fixtures without experts: what `wick convert` writes (MoE folders are refused).
inline std::vector<std::string> llama_dense_fixtures() {
  std::vector<std::string> names;
  for (const std::string& n : llama_fixtures())
    if (n != "mixtral" && n != "qwen2moe" && n != "qwen3moe" && n != "olmoe" && !n.starts_with("gptoss") &&
        !n.starts_with("deepseek"))
      names.push_back(n);
  return names;
}

struct LlamaOracle {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Tensor> logits;   // (T, vocab) f32 per prompt
  std::vector<int32_t> greedy;  // the continuation of prompts[greedy_prompt]
  size_t greedy_prompt = 0;
};

inline std::filesystem::path llama_dir(const std::string& name) { return data_path("llama/" + name); }

inline const LlamaOracle& llama_oracle(const std::string& name) {
  static std::map<std::string, LlamaOracle> cache;
  if (const auto it = cache.find(name); it != cache.end()) return it->second;
  auto t = safetensors::load(llama_dir(name) / "expected.safetensors");
  auto ids = [](const Tensor& x) {
    const auto v = x.to_vector<int64_t>();
    return std::vector<int32_t>(v.begin(), v.end());
  };
  LlamaOracle o;
  for (const char* i : {"0", "1"}) {
    o.prompts.push_back(ids(t.at(std::string("prompt") + i)));
    o.logits.push_back(t.at(std::string("logits") + i).clone());
  }
  o.greedy = ids(t.at("greedy"));
  o.greedy_prompt = size_t(t.at("greedy_prompt").to_vector<int64_t>()[0]);
  return cache[name] = std::move(o);
}

inline Tensor llama_ids(const std::vector<int32_t>& ids) {
  return Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end()), Shape{1, int64_t(ids.size())});
}

// max |got - want| over rows [first, first + rows) of want against got's rows [0, rows) of
// batch item b, relative to the largest |want| of those rows.
inline double llama_rel_error(const Tensor& got, const Tensor& want, int64_t first, int64_t rows, int64_t b = 0) {
  const auto g = got.select(0, b).narrow(0, 0, rows).to(Device::cpu()).to(DType::F64).to_vector<double>();
  const auto w = want.narrow(0, first, rows).to(DType::F64).to_vector<double>();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double d = std::fabs(g[i] - w[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
    scale = std::max(scale, std::fabs(w[i]));
  }
  return worst / scale;
}

inline int32_t llama_argmax_last(const Tensor& logits) {
  const auto row = logits.select(1, logits.dim(1) - 1).to(Device::cpu()).to(DType::F32).to_vector<float>();
  return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// A fresh folder under the system's temp dir, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("wick_llama_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace wick::test
