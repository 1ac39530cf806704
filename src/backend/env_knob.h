// An integer tuning knob read once from the environment (the measurement knobs of
// docs/perf.md: WICK_CUDA_GEMV_ROWS, WICK_CUDA_QUANT_MATVEC_ROWS).
#pragma once

#include <cstdint>
#include <cstdlib>

#include "wick/error.h"

namespace wick {

// `fallback` when `name` is unset; else its value, which must be a whole number in [lo, hi]
// and a multiple of `step` (InvalidArgument naming the variable and the value otherwise).
inline int64_t env_knob(const char* name, int64_t fallback, int64_t lo, int64_t hi, int64_t step = 1) {
  const char* env = std::getenv(name);
  if (!env) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  const bool ok = end != env && *end == '\0' && v >= lo && v <= hi && v % step == 0;
  if (step > 1)
    WICK_CHECK(ok, InvalidArgument, name, " must be a multiple of ", step, " from ", lo, " to ", hi, ", got '", env,
               "'");
  WICK_CHECK(ok, InvalidArgument, name, " must be from ", lo, " to ", hi, ", got '", env, "'");
  return int64_t(v);
}

}  // namespace wick
