// The f16/bf16 products' register tiles over AVX-512 (gemm_tile_impl.h with 16-lane vectors,
// 8 x 3 tiles: 24 accumulators, 3 weight vectors and one x vector of the 32 registers), for
// CPUs that have it (cpu_isa.h): twice the lanes of the AVX2 tiles for prefill-sized
// products. The build targets AVX2, so only the functions between the target pragmas are
// compiled for AVX-512, and they have internal linkage: no AVX-512 code is shared with (or
// chosen by the linker for) the rest of the library.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "backend/cpu/cpu_gemm_half.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define WICK_GEMM_AVX512 1
#include <immintrin.h>
#endif

namespace wick::cpu {

#ifdef WICK_GEMM_AVX512
#if defined(__clang__)  // clang has no target pragma: the same features as a function attribute
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")
#endif
namespace {

struct Isa {
  using vec = __m512;
  static constexpr int kLanes = 16, kRM = 8, kRN = 3;
  static vec zero() { return _mm512_setzero_ps(); }
  static vec load(const float* p) { return _mm512_loadu_ps(p); }
  static vec load(const f16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static vec load(const bf16* p) {  // bf16 is the top half of an f32
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static vec fma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(vec v) { return _mm512_reduce_add_ps(v); }
  static void pin(vec& v) { asm("" : "+v"(v)); }
};
#include "backend/cpu/gemm_tile_impl.h"

}  // namespace
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

template <class T>
bool gemm_k_avx512(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* c,
                   bool accumulate) {
#ifdef WICK_GEMM_AVX512
  if (!cpu_has_avx512()) return false;
  gemm_k(M, N, K, x, b, bcs, c, accumulate);
  return true;
#else
  (void)M, (void)N, (void)K, (void)x, (void)b, (void)bcs, (void)c, (void)accumulate;
  return false;
#endif
}

template bool gemm_k_avx512<f16>(int64_t, int64_t, int64_t, const float*, const f16*, int64_t, float*, bool);
template bool gemm_k_avx512<bf16>(int64_t, int64_t, int64_t, const float*, const bf16*, int64_t, float*, bool);

}  // namespace wick::cpu
