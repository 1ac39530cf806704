// Small helpers of the model tests: deterministic token ids and the error measure of two
// logits rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace wick::test {

// n ids below vocab from an LCG (the fixtures' models accept any id).
inline std::vector<int32_t> lcg_tokens(size_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  for (auto& x : t) {
    seed = seed * 1664525u + 1013904223u;
    x = int32_t((seed >> 8) % uint32_t(vocab));
  }
  return t;
}

// max |a - b| / max |b| over two logits rows.
inline double logits_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return worst / scale;
}

}  // namespace wick::test
