// Portable SIMD vectors for the CPU kernels: GCC/Clang vector extensions of 32 bytes (8
// floats or 4 doubles). They compile to AVX registers under -march=x86-64-v3 (FMAs
// contracted) and to pairs of SSE registers without it, so one source serves f32 and f64
// where auto-vectorization does not find a register-blocked loop (cpu_attention.cpp's tiles:
// GCC vectorized the plain loops the wrong way round and kept the accumulators in memory).
#pragma once

#include <cstring>
#include <type_traits>

namespace wick::cpu::simd {

typedef float f32x8 __attribute__((vector_size(32)));
typedef double f64x4 __attribute__((vector_size(32)));

// C: float or double.
template <class C>
using vec_t = std::conditional_t<std::is_same_v<C, float>, f32x8, f64x4>;
template <class C>
inline constexpr int kLanes = int(sizeof(vec_t<C>) / sizeof(C));

// Unaligned loads and stores (memcpy compiles to one vmovups).
template <class C>
inline vec_t<C> load(const C* p) {
  vec_t<C> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class C>
inline void store(C* p, const vec_t<C>& v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace wick::cpu::simd
