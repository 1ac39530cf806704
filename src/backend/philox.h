// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a
// counter-based generator, so element i of a random tensor depends only on (seed,
// offset + i) and any thread can produce any element.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "wick/half.h"

namespace wick {

WICK_HD inline void philox4x32_10(uint64_t counter, uint64_t key, uint32_t out[4]) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = uint32_t(p1);
    c2 = n2;
    c3 = uint32_t(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// A uniform double in [0, 1) from 53 random bits.
WICK_HD inline double uniform01(uint32_t hi, uint32_t lo) {
  return double((uint64_t(hi) << 21) ^ (uint64_t(lo) >> 11)) * (1.0 / 9007199254740992.0);
}

// Element i's uniform value in [low, high).
WICK_HD inline double philox_uniform(uint64_t seed, uint64_t index, double low, double high) {
  uint32_t r[4];
  philox4x32_10(index, seed, r);
  return low + (high - low) * uniform01(r[0], r[1]);
}

// Element i's normal value (Box-Muller on two uniforms of one Philox block).
WICK_HD inline double philox_normal(uint64_t seed, uint64_t index, double mean, double stddev) {
  uint32_t r[4];
  philox4x32_10(index, seed, r);
  const double u1 = 1.0 - uniform01(r[0], r[1]);  // (0, 1]: log is finite
  const double u2 = uniform01(r[2], r[3]);
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace wick
