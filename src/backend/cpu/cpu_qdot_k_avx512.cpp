// The K-quant x q8_K dot kernel over AVX-512 VNNI: qdot_k_impl.h's decoders and row
// accumulation, compiled for AVX-512, with 64 values per instruction (vpmaddubsw over 512
// bits, then vpdpwssd adds the scaled pair sums: the AVX2 kernel's madd + add, the same
// integers), and the 32 vector registers holding the accumulators of 8 activation rows per
// decoded super-block. Only the
// code between the target pragmas is compiled for AVX-512, all with internal linkage, so no
// AVX-512 instruction reaches the rest of the library; dot_rows_k calls it only where the
// CPU has AVX-512 VNNI (cpu_isa.h).
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cpu/cpu_qdot_k.h"
#include "io/quant/blocks.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__AVX2__)
#define WICK_QDOT_K_AVX512 1
#include <immintrin.h>

#include "backend/cpu/simd_avx2.h"
#endif

namespace wick::cpu::qdot {

using namespace wick::quant;

#ifdef WICK_QDOT_K_AVX512
#if defined(__clang__)  // clang has no target pragma: the same features as a function attribute
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#endif
namespace {

#include "backend/cpu/qdot_decoders_impl.h"
#include "backend/cpu/qdot_k_impl.h"

// One or two rows (a decode step): 256-bit registers as the AVX2 kernel, vpdpwssd for its
// madd + add (building the 512-bit registers costs more than it saves for so few rows; 1B
// Q4_K_M tg32 on 2 threads: 24.9 against 23.4 tok/s).
struct MacVnni {
  static __m256i mac(__m256i acc, __m256i p16, __m256i s16) { return _mm256_dpwssd_epi32(acc, p16, s16); }
};
template <int R, class Dec>
struct NarrowRows {
  static void run(const uint8_t* w, const ActQ8K& a, int64_t m0, float* y, int64_t ys) {
    k_rows<R, Dec, MacVnni>(w, a, m0, y, ys);
  }
};

// 512-bit registers of two consecutive 32-value chunks (their values are consecutive in the
// row, and so are x's), 16 int32 lanes; lanes 8..15 are added to 0..7 after the super-block.
template <int R, class Dec>
struct WideRows {
  static void run(const uint8_t* w, const ActQ8K& a, int64_t m0, float* y, int64_t ys) {
    const int64_t nb = a.blocks;
    __m256 acc[R];
    __m128 bias[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), bias[r] = _mm_setzero_ps();
    SuperBlock o;
    __m512i q[4], s[4];
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = w + b * Dec::kBytes;
      for (int off = 0; off < Dec::kBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + kAheadBytes + off), _MM_HINT_T0);
      Dec::decode(p, o);
      for (int k = 0; k < 4; ++k) {
        q[k] = _mm512_inserti64x4(_mm512_castsi256_si512(o.q[2 * k]), o.q[2 * k + 1], 1);
        s[k] = _mm512_inserti64x4(_mm512_castsi256_si512(o.s[2 * k]), o.s[2 * k + 1], 1);
      }
      for (int r = 0; r < R; ++r) {
        const int64_t i = (m0 + r) * nb + b;
        const int8_t* x = a.qs.data() + i * kQK_K;
        __m512i lanes = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k)
          lanes = _mm512_dpwssd_epi32(lanes, _mm512_maddubs_epi16(q[k], _mm512_loadu_si512(x + 64 * k)), s[k]);
        const __m256i folded = _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
        add_super_block<Dec>(o, folded, a.d[size_t(i)], a.bsums.data() + i * 16, acc[r], bias[r]);
      }
    }
    for (int r = 0; r < R; ++r) y[r * ys] = finish_row(acc[r], bias[r]);
  }
};

}  // namespace
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

bool avx512_dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y,
                       int64_t y_stride) {
#ifdef WICK_QDOT_K_AVX512
  if (R <= 2)
    k_dispatch<2, NarrowRows>(type, w, a, m0, R, y, y_stride);
  else
    k_dispatch<kMaxKRows, WideRows>(type, w, a, m0, R, y, y_stride);
  return true;
#else
  (void)type, (void)w, (void)a, (void)m0, (void)R, (void)y, (void)y_stride;
  return false;
#endif
}

}  // namespace wick::cpu::qdot
