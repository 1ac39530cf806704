// The wide q8-activation dot kernel (cpu_qdot_avx2.h, dot_rows_wide) over AVX-512 VNNI, for
// q8_0 and q4_0 weights: two 32-value blocks per 512-bit register, vpdpbusd for the
// unsigned-by-signed byte products (one instruction for the AVX2 kernel's maddubs + madd,
// the same int32 lane sums: no pair here reaches int16's limit either), up to 8 rows of x
// per decoded pair of blocks. Only the code between the target pragmas is compiled for
// AVX-512, all of it with internal linkage (the decoders are this file's own copy), so no
// AVX-512 instruction reaches the rest of the library; matmul_q8 calls it only where the
// CPU has AVX-512 VNNI (cpu_isa.h).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/cpu_qdot_avx2.h"
#include "backend/cpu/simd_avx2.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__AVX2__)
#define WICK_QDOT_AVX512 1
#include <immintrin.h>
#endif

namespace wick::cpu::qdot {

using namespace wick::quant;

#ifdef WICK_QDOT_AVX512
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
static_assert(kTileRows8 == 16, "run_tiles and transpose16 take bands of 16 rows");

// Two floats to the lanes of their blocks: lanes 0..7 a, 8..15 b.
__m512 pair_lanes(float a, float b) {
  return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                               _mm512_castps128_ps512(_mm_setr_ps(a, b, 0.0f, 0.0f)));
}

template <int R, class Dec>
void wide_rows(const uint8_t* w, const ActQ8& a, int64_t m0, float* y, int64_t ys) {
  const int64_t nb = a.blocks;
  __m512 acc[R];
  const int8_t* xq[R];
  const float* xd[R];  // d_pairs rows: 16 lanes per pair of blocks
  const int64_t pairs = (nb + 1) / 2;
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    xq[r] = a.qs.data() + (m0 + r) * nb * kQK;
    xd[r] = a.d_pairs.data() + (m0 + r) * pairs * 16;
  }
  for (int64_t b = 0; b < nb; b += 2) {
    const bool pair = b + 1 < nb;
    for (int o = 0; o < 2 * Dec::kBytes; o += 64)
      _mm_prefetch(reinterpret_cast<const char*>(w + b * Dec::kBytes + kAheadBytes + o), _MM_HINT_T0);
    float f0 = 0.0f, f1 = 0.0f;
    const __m256i q0 = Dec::decode(w + b * Dec::kBytes, f0);
    const __m256i q1 = pair ? Dec::decode(w + (b + 1) * Dec::kBytes, f1) : _mm256_setzero_si256();
    const __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    const __m512i wa = _mm512_abs_epi8(wv);              // |w| as unsigned bytes
    const __mmask64 negative = _mm512_movepi8_mask(wv);  // x's sign flips where w < 0
    const __mmask64 valid = pair ? ~__mmask64(0) : __mmask64(0xFFFFFFFFu);
    const __m512 fw = pair_lanes(f0, f1);
    for (int r = 0; r < R; ++r) {
      const __m512i xv = _mm512_maskz_loadu_epi8(valid, xq[r] + b * kQK);
      const __m512i xs = _mm512_mask_sub_epi8(xv, negative, _mm512_setzero_si512(), xv);
      const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wa, xs);
      const __m512 f = _mm512_mul_ps(fw, _mm512_loadu_ps(xd[r] + (b / 2) * 16));
      acc[r] = _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(p), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m256 half = _mm256_add_ps(_mm512_extractf32x8_ps(acc[r], 1), _mm512_castps512_ps256(acc[r]));
    y[r * ys] = simd::hsum(half);
  }
}

template <class Dec>
void wide_dispatch(const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t ys) {
  with_rows<kMaxWideRows>(R, [&]<int N>() { wide_rows<N, Dec>(w, a, m0, y, ys); });
}

// ---- the tile kernel --------------------------------------------------------------------

// The 32 quants of a block as unsigned bytes and what they are shifted by (w = u - kShift),
// and the block's scale.
struct TileQ8_0 {
  static constexpr int kBytes = sizeof(BlockQ8_0), kShift = 128;
  static __m256i unsigned_quants(const uint8_t* p) {
    return _mm256_xor_si256(load32(p + offsetof(BlockQ8_0, qs)), _mm256_set1_epi8(char(0x80)));
  }
  static float scale(const uint8_t* p) { return f16c_at(p); }
};
struct TileQ4_0 {
  static constexpr int kBytes = sizeof(BlockQ4_0), kShift = 8;
  static __m256i unsigned_quants(const uint8_t* p) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ4_0, qs)));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
  }
  static float scale(const uint8_t* p) { return f16c_at(p); }
};
// MXFP4: each code's doubled e2m1 value plus 12 (0..24), by one byte shuffle.
struct TileMXFP4 {
  static constexpr int kBytes = sizeof(BlockMXFP4), kShift = 12;
  static __m256i unsigned_quants(const uint8_t* p) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    return _mm256_shuffle_epi8(table, DecMXFP4::codes(p));
  }
  static float scale(const uint8_t* p) { return e8m0_half(p[offsetof(BlockMXFP4, e)]); }
};

// Two blocks of kTileRows8 weight rows: q[g] holds group g (values 4g..4g+3; g < 8 the first
// block) of row j at bytes 4j..4j+3; d[k] block k's scales.
struct Tile8Band {
  alignas(64) uint8_t q[16][kTileRows8 * 4];
  alignas(64) float d[2][kTileRows8];
};

// Blocks b and b + 1 (when two) of the band's rows.
template <class Dec>
void unpack_band8(const uint8_t* w, size_t row_bytes, int64_t b, int blocks, Tile8Band& t) {
  __m512i r[16];
  for (int j = 0; j < kTileRows8; ++j) {
    const uint8_t* p = w + size_t(j) * row_bytes + size_t(b) * Dec::kBytes;
    const __m256i q0 = Dec::unsigned_quants(p);
    const __m256i q1 = blocks == 2 ? Dec::unsigned_quants(p + Dec::kBytes) : _mm256_setzero_si256();
    r[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    for (int k = 0; k < blocks; ++k) t.d[k][j] = Dec::scale(p + k * Dec::kBytes);
  }
  transpose16(r);
  for (int g = 0; g < 16; ++g) _mm512_store_si512(t.q[g], r[g]);
}

template <int R, class Dec>
void tile8_rows(const Tile8Band& t, const ActQ8& a, int64_t m0, int64_t b, int blocks, float* acc) {
  for (int k = 0; k < blocks; ++k) {
    const int8_t* x[R];
    for (int r = 0; r < R; ++r) x[r] = a.qs.data() + ((m0 + r) * a.blocks + b + k) * kQK;
    __m512i s[R];
    for (int r = 0; r < R; ++r) s[r] = _mm512_setzero_si512();
    for (int g = 0; g < 8; ++g) {
      const __m512i wv = _mm512_load_si512(t.q[8 * k + g]);
      for (int r = 0; r < R; ++r) s[r] = _mm512_dpbusd_epi32(s[r], wv, _mm512_set1_epi32(dword_at(x[r] + 4 * g)));
    }
    const __m512 d = _mm512_load_ps(t.d[k]);
    for (int r = 0; r < R; ++r) {
      const int64_t i = (m0 + r) * a.blocks + b + k;
      const __m512i exact = _mm512_sub_epi32(s[r], _mm512_set1_epi32(Dec::kShift * a.sum[size_t(i)]));
      float* out = acc + (m0 + r) * kTileRows8;
      _mm512_storeu_ps(out, _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(d, _mm512_set1_ps(a.d[size_t(i)])),
                                            _mm512_loadu_ps(out)));
    }
  }
}

template <class Dec>
void tile8(const uint8_t* w, size_t row_bytes, const ActQ8& a, float* y, int64_t ys) {
  Tile8Band t;
  run_tiles(
      a.rows, a.blocks, 2, y, ys, [&](int64_t b, int blocks) { unpack_band8<Dec>(w, row_bytes, b, blocks, t); },
      [&]<int R>(int64_t m, int64_t b, int blocks, float* acc) { tile8_rows<R, Dec>(t, a, m, b, blocks, acc); });
}

}  // namespace
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

bool avx512_dot_tile(GgmlType type, const uint8_t* w, size_t row_bytes, const ActQ8& a, float* y, int64_t y_stride) {
#ifdef WICK_QDOT_AVX512
  if (!cpu_has_avx512_vnni()) return false;
  if (type == GgmlType::Q8_0) return tile8<TileQ8_0>(w, row_bytes, a, y, y_stride), true;
  if (type == GgmlType::Q4_0) return tile8<TileQ4_0>(w, row_bytes, a, y, y_stride), true;
  if (type == GgmlType::MXFP4) return tile8<TileMXFP4>(w, row_bytes, a, y, y_stride), true;
#endif
  (void)type, (void)w, (void)row_bytes, (void)a, (void)y, (void)y_stride;
  return false;
}

bool avx512_dot_rows(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride) {
#ifdef WICK_QDOT_AVX512
  if (type == GgmlType::Q8_0) return wide_dispatch<DecQ8_0>(w, a, m0, R, y, y_stride), true;
  if (type == GgmlType::Q4_0) return wide_dispatch<DecQ4_0>(w, a, m0, R, y, y_stride), true;
  if (type == GgmlType::MXFP4) return wide_dispatch<DecMXFP4>(w, a, m0, R, y, y_stride), true;
#endif
  (void)type, (void)w, (void)a, (void)m0, (void)R, (void)y, (void)y_stride;
  return false;
}

}  // namespace wick::cpu::qdot
