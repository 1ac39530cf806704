// The K-quant x q8_K dot kernel over AVX-512 VNNI: qdot_k_impl.h's decoders and row
// accumulation, compiled for AVX-512, with 64 values per instruction (vpmaddubsw over 512
// bits, then vpdpwssd adds the scaled pair sums: the AVX2 kernel's madd + add, the same
// integers), and the 32 vector registers holding the accumulators of 8 activation rows per
// decoded super-block. Only the
// code between the target pragmas is compiled for AVX-512, all with internal linkage, so no
// AVX-512 instruction reaches the rest of the library; dot_rows_k calls it only where the
// CPU has AVX-512 VNNI (cpu_isa.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_isa.h"
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

#include "backend/cpu/avx512_tile_impl.h"
#include "backend/cpu/qdot_decoders_impl.h"
static_assert(kTileRows == 16, "run_tiles and transpose16 take bands of 16 rows");
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
    float acc[R] = {};
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
        add_super_block<Dec>(o, folded, a.d[size_t(i)], a.bsums.data() + i * 16, acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) y[r * ys] = acc[r];
  }
};

// ---- the tile kernel --------------------------------------------------------------------

// One super-block of kTileRows weight rows unpacked so that a 512-bit register holds the
// same 4 values of all 16 rows: q[g] is group g (values 4g..4g+3) of row j at bytes 4j..4j+3.
struct TileBand {
  alignas(64) uint8_t q[64][kTileRows * 4];
  alignas(64) int32_t scale[16][kTileRows];  // group k of 16 values, row j
  alignas(64) int32_t mk[8][kTileRows];      // the offset factors of groups 2p, 2p + 1 as two int16
  alignas(64) float d[kTileRows], fmin[kTileRows];
  alignas(64) uint8_t rows[kTileRows][kQK_K];  // the decoder's quants, row by row
};

template <class Dec>
void unpack_band(const uint8_t* w, size_t row_bytes, int64_t b, TileBand& t) {
  SuperBlock o;
  __m512i sc[16], mk[16];
  for (int j = 0; j < kTileRows; ++j) {
    const uint8_t* p = w + size_t(j) * row_bytes + size_t(b) * Dec::kBytes;
    Dec::decode(p, o);
    for (int c = 0; c < 8; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(t.rows[j] + 32 * c), o.q[c]);
    __m256i s16, m16;
    Dec::group_vectors(p, s16, m16);
    sc[j] = _mm512_cvtepi16_epi32(s16);
    mk[j] = _mm512_castsi256_si512(m16);  // 8 dwords: the int16 pairs of groups 2p, 2p + 1
    t.d[j] = o.d;
    t.fmin[j] = o.fmin;
  }
  // Row j's dword g to lane j of q[g], and its scales and offset factors likewise: 16 x 16
  // dword transposes.
  transpose16(sc);
  for (int k = 0; k < 16; ++k) _mm512_store_si512(t.scale[k], sc[k]);
  transpose16(mk);
  for (int p = 0; p < 8; ++p) _mm512_store_si512(t.mk[p], mk[p]);
  for (int c = 0; c < 4; ++c) {
    __m512i r[16];
    for (int j = 0; j < kTileRows; ++j) r[j] = _mm512_load_si512(t.rows[j] + 64 * c);
    transpose16(r);
    for (int u = 0; u < 16; ++u) _mm512_store_si512(t.q[16 * c + u], r[u]);
  }
}

// R activation rows (m0..) against the unpacked band: acc rows of 16 floats.
template <int R>
void tile_rows(const TileBand& t, const ActQ8K& a, int64_t m0, int64_t b, float* acc) {
  const int8_t* x[R];
  for (int r = 0; r < R; ++r) x[r] = a.qs.data() + ((m0 + r) * a.blocks + b) * kQK_K;
  __m512i sum[R];
  for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_si512();
  for (int k = 0; k < 16; ++k) {
    __m512i part[R];
    for (int r = 0; r < R; ++r) part[r] = _mm512_setzero_si512();
    for (int g = 4 * k; g < 4 * k + 4; ++g) {
      const __m512i wv = _mm512_load_si512(t.q[g]);
      for (int r = 0; r < R; ++r) part[r] = _mm512_dpbusd_epi32(part[r], wv, _mm512_set1_epi32(dword_at(x[r] + 4 * g)));
    }
    const __m512i sc = _mm512_load_si512(t.scale[k]);
    for (int r = 0; r < R; ++r) sum[r] = _mm512_add_epi32(sum[r], _mm512_mullo_epi32(part[r], sc));
  }
  const __m512 d = _mm512_load_ps(t.d), fmin = _mm512_load_ps(t.fmin);
  for (int r = 0; r < R; ++r) {
    const int64_t i = (m0 + r) * a.blocks + b;
    const int16_t* bs = a.bsums.data() + i * 16;
    __m512i off = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p)
      off = _mm512_dpwssd_epi32(off, _mm512_load_si512(t.mk[p]), _mm512_set1_epi32(dword_at(bs + 2 * p)));
    const __m512 dx = _mm512_set1_ps(a.d[size_t(i)]);
    float* out = acc + (m0 + r) * kTileRows;
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r]), _mm512_mul_ps(d, dx), _mm512_loadu_ps(out));
    _mm512_storeu_ps(out, _mm512_fnmadd_ps(_mm512_cvtepi32_ps(off), _mm512_mul_ps(fmin, dx), v));
  }
}

template <class Dec>
void tile_k(const uint8_t* w, size_t row_bytes, const ActQ8K& a, float* y, int64_t ys) {
  auto t = std::make_unique<TileBand>();
  run_tiles(
      a.rows, a.blocks, 1, y, ys, [&](int64_t b, int) { unpack_band<Dec>(w, row_bytes, b, *t); },
      [&]<int R>(int64_t m, int64_t b, int, float* acc) { tile_rows<R>(*t, a, m, b, acc); });
}

}  // namespace
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

bool avx512_dot_tile_k(GgmlType type, const uint8_t* w, size_t row_bytes, const ActQ8K& a, float* y, int64_t y_stride) {
#ifdef WICK_QDOT_K_AVX512
  if (!cpu_has_avx512_vnni()) return false;
  if (type == GgmlType::Q4_K)
    tile_k<DecK4<false>>(w, row_bytes, a, y, y_stride);
  else if (type == GgmlType::Q5_K)
    tile_k<DecK4<true>>(w, row_bytes, a, y, y_stride);
  else if (type == GgmlType::Q6_K)
    tile_k<DecQ6K>(w, row_bytes, a, y, y_stride);
  else if (type == GgmlType::Q2_K)
    tile_k<DecLow2<false>>(w, row_bytes, a, y, y_stride);
  else
    tile_k<DecLow2<true>>(w, row_bytes, a, y, y_stride);
  return true;
#else
  (void)type, (void)w, (void)row_bytes, (void)a, (void)y, (void)y_stride;
  return false;
#endif
}

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
