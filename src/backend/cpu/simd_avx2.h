// Small AVX2 helpers shared by the CPU kernels that use intrinsics (cpu_gemm_half.cpp,
// cpu_qdot_avx2.cpp). Include only under __AVX2__.
#pragma once

#include <immintrin.h>

namespace wick::cpu::simd {

// The sum of 8 float lanes, in the order ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
// (cpu_qdot_avx2.cpp's scalar references reproduce exactly this order).
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // a_l + a_{l+4}
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace wick::cpu::simd
