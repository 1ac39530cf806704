// K-quant x q8_K dot products (see cpu_qdot_k.h): the q8_K activation quantizer (ggml's
// reference and an AVX2 one), the scalar reference of the dot arithmetic, and the AVX2
// instantiation of the kernel of qdot_k_impl.h; the AVX-512 VNNI one is cpu_qdot_k_avx512.cpp.
#include "backend/cpu/cpu_qdot_k.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cpu/cpu_isa.h"
#include "io/quant/block_decode.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"
#include "wick/error.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "backend/cpu/simd_avx2.h"
#define WICK_QDOT_K_AVX2 1
#endif

namespace wick::cpu::qdot {

using namespace wick::quant;

namespace {

// ---- scalar references ----------------------------------------------------------------

// ggml's nearest_int: round to nearest, ties to even, through the float adder.
int nearest_int(float f) {
  const float v = f + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// ggml's quantize_row_q8_K_ref for one super-block (and the bsums of an all-zero block,
// which ggml leaves unwritten, as zeros).
void ref_quantize_block(const float* x, int8_t* q, float& d, int16_t* bsums) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kQK_K; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) amax = ax, max = x[j];
  }
  if (amax == 0.0f) {
    d = 0.0f;
    std::fill_n(q, kQK_K, int8_t(0));
    std::fill_n(bsums, kQK_K / 16, int16_t(0));
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < kQK_K; ++j) q[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
  for (int g = 0; g < kQK_K / 16; ++g) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += q[16 * g + j];
    bsums[g] = int16_t(s);
  }
  d = 1.0f / iscale;
}

// One super-block's stored quants (unsigned), the scale of each value, d, the min factor
// and the integer offset against the activation sums (cpu_qdot_k.h).
struct RefSuper {
  uint8_t q[kQK_K];
  int32_t scale[kQK_K];
  float d, fmin;
  int32_t offset;
};

// q2_K / q3_K (ggml's dequantize_row_q2_K / q3_K layouts, see qdot_k_impl.h's DecLow2).
void ref_super_low2(GgmlType type, const uint8_t* p, const int16_t* bsums, RefSuper& o) {
  const bool q3 = type == GgmlType::Q3_K;
  int32_t scale[16], mk[16];
  if (q3) {
    for (int k = 0; k < 16; ++k) {
      scale[k] = DecodeQ3_K::scale(p + offsetof(BlockQ3_K, scales), k);  // the dequantizer's
      mk[k] = 4 * scale[k];
    }
    o.d = o.fmin = f16_at(p + offsetof(BlockQ3_K, d));
  } else {
    for (int k = 0; k < 16; ++k) {
      const uint8_t sm = p[offsetof(BlockQ2_K, scales) + k];
      scale[k] = sm & 0x0F;
      mk[k] = sm >> 4;
    }
    o.d = f16_at(p + offsetof(BlockQ2_K, d));
    o.fmin = f16_at(p + offsetof(BlockQ2_K, dmin));
  }
  const size_t qs_at = q3 ? offsetof(BlockQ3_K, qs) : offsetof(BlockQ2_K, qs);
  for (int c = 0; c < 8; ++c)
    for (int l = 0; l < 32; ++l) {
      const int h = c / 4, j = c % 4, v = 32 * c + l;
      int q = (p[qs_at + 32 * h + l] >> (2 * j)) & 3;
      if (q3) q |= ((p[offsetof(BlockQ3_K, hmask) + l] >> c) & 1) << 2;
      o.q[v] = uint8_t(q);
      o.scale[v] = scale[v / 16];
    }
  o.offset = 0;
  for (int k = 0; k < 16; ++k) o.offset += mk[k] * bsums[k];
}

void ref_super(GgmlType type, const uint8_t* p, const int16_t* bsums, RefSuper& o) {
  if (type == GgmlType::Q2_K || type == GgmlType::Q3_K) return ref_super_low2(type, p, bsums, o);
  if (type == GgmlType::Q6_K) {
    o.d = o.fmin = f16_at(p + offsetof(BlockQ6_K, d));
    const auto* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 4; ++t)
        for (int i = 0; i < 32; ++i) {
          const uint8_t ql = p[offsetof(BlockQ6_K, ql) + 64 * h + 32 * (t & 1) + i];
          const uint8_t qh = p[offsetof(BlockQ6_K, qh) + 32 * h + i];
          const int v = 128 * h + 32 * t + i;
          o.q[v] = uint8_t(((ql >> (4 * (t >> 1))) & 0x0F) | (((qh >> (2 * t)) & 3) << 4));
          o.scale[v] = sc[v / 16];
        }
    o.offset = 0;
    for (int k = 0; k < 16; ++k) o.offset += 32 * sc[k] * bsums[k];
    return;
  }
  // q4_K / q5_K
  const bool high = type == GgmlType::Q5_K;
  const size_t d_at = high ? offsetof(BlockQ5_K, d) : offsetof(BlockQ4_K, d);
  const size_t dmin_at = high ? offsetof(BlockQ5_K, dmin) : offsetof(BlockQ4_K, dmin);
  const size_t scales_at = high ? offsetof(BlockQ5_K, scales) : offsetof(BlockQ4_K, scales);
  const size_t qs_at = high ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs);
  o.d = f16_at(p + d_at);
  o.fmin = f16_at(p + dmin_at);
  o.offset = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, p + scales_at, sc, m);
    o.offset += int32_t(m) * (bsums[2 * j] + bsums[2 * j + 1]);
    for (int i = 0; i < 32; ++i) {
      int q = (p[qs_at + 32 * (j / 2) + i] >> (4 * (j & 1))) & 0x0F;
      if (high) q |= ((p[offsetof(BlockQ5_K, qh) + i] >> j) & 1) << 4;
      o.q[32 * j + i] = uint8_t(q);
      o.scale[32 * j + i] = sc;
    }
  }
}

size_t block_bytes(GgmlType type) { return ggml_type_info(type).block_bytes; }

void ref_rows(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t ys) {
  RefSuper o;
  for (int r = 0; r < R; ++r) {
    float acc = 0.0f;
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t i = (m0 + r) * a.blocks + b;
      const int8_t* x = a.qs.data() + i * kQK_K;
      ref_super(type, w + size_t(b) * block_bytes(type), a.bsums.data() + i * 16, o);
      const float dx = a.d[size_t(i)];
      int32_t sum = 0;
      for (int v = 0; v < kQK_K; ++v) sum += o.scale[v] * int32_t(o.q[v]) * x[v];
      acc = std::fma(float(sum), o.d * dx, acc);
      acc = std::fma(float(-o.offset), o.fmin * dx, acc);
    }
    y[r * ys] = acc;
  }
}

#ifdef WICK_QDOT_K_AVX2
// ---- AVX2 ------------------------------------------------------------------------------

#include "backend/cpu/qdot_decoders_impl.h"

// ggml's q8_K rounding in 8 lanes: the first value of largest magnitude sets the sign of
// the scale; _mm256_cvtps_epi32 rounds ties to even as nearest_int does.
void avx2_quantize_block(const float* x, int8_t* q, float& d, int16_t* bsums) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 mx = _mm256_setzero_ps();
  for (int i = 0; i < kQK_K; i += 8) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
  if (amax == 0.0f) {
    d = 0.0f;
    std::fill_n(q, kQK_K, int8_t(0));
    std::fill_n(bsums, kQK_K / 16, int16_t(0));
    return;
  }
  float max = 0.0f;
  for (int i = 0; i < kQK_K; i += 8) {
    const int hit = _mm256_movemask_ps(
        _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), _mm256_set1_ps(amax), _CMP_EQ_OQ));
    if (hit) {
      max = x[i + __builtin_ctz(unsigned(hit))];
      break;
    }
  }
  const float iscale = -127.0f / max;
  const __m256 vs = _mm256_set1_ps(iscale);
  const __m256i cap = _mm256_set1_epi32(127);
  for (int i = 0; i < kQK_K; i += 32) {
    __m256i v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vs)), cap);
    // Sums of 16: lanes of v[0] + v[1] and of v[2] + v[3].
    for (int g = 0; g < 2; ++g) {
      const __m256i s8 = _mm256_add_epi32(v[2 * g], v[2 * g + 1]);
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
      s = _mm_hadd_epi32(s, s);
      s = _mm_hadd_epi32(s, s);
      bsums[i / 16 + g] = int16_t(_mm_cvtsi128_si32(s));
    }
    // packs work per 128-bit half; the permute puts the 32 bytes back in order.
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i),
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  d = 1.0f / iscale;
}

struct MacAvx2 {
  static __m256i mac(__m256i acc, __m256i p16, __m256i s16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s16));
  }
};

#include "backend/cpu/qdot_k_impl.h"

template <int R, class Dec>
struct Avx2Rows {
  static void run(const uint8_t* w, const ActQ8K& a, int64_t m0, float* y, int64_t ys) {
    k_rows<R, Dec, MacAvx2>(w, a, m0, y, ys);
  }
};

// 16 ymm registers: more rows than 4 spill the accumulators.
constexpr int kAvx2Rows = 4;
#endif

}  // namespace

void resize_act_k(ActQ8K& a, int64_t M, int64_t K) {
  if (K % kQK_K != 0) fail(ErrorKind::ShapeMismatch, "q8_K activations: K must be a multiple of 256, got K = ", K);
  a.rows = M;
  a.blocks = K / kQK_K;
  a.qs.resize(size_t(M * K));
  a.d.resize(size_t(M * a.blocks));
  a.bsums.resize(size_t(M * a.blocks * 16));
}

void quantize_act_k_rows(const float* x, int64_t K, int64_t m0, int64_t m1, ActQ8K& a, bool simd) {
  if (K != a.blocks * kQK_K || m0 < 0 || m1 > a.rows)
    fail(ErrorKind::InvalidArgument, "q8_K activations: rows [", m0, ", ", m1, ") of K = ", K, " outside the ", a.rows,
         " x ", a.blocks * kQK_K, " buffer");
  for (int64_t m = m0; m < m1; ++m)
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t i = m * a.blocks + b;
      const float* xb = x + m * K + b * kQK_K;
      int8_t* q = a.qs.data() + i * kQK_K;
      int16_t* bs = a.bsums.data() + i * 16;
#ifdef WICK_QDOT_K_AVX2
      if (simd) {
        avx2_quantize_block(xb, q, a.d[size_t(i)], bs);
        continue;
      }
#endif
      (void)simd;
      ref_quantize_block(xb, q, a.d[size_t(i)], bs);
    }
}

bool has_k_kernel(GgmlType type) {
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q4_K || type == GgmlType::Q5_K ||
         type == GgmlType::Q6_K;
}

void dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t y_stride,
                bool simd) {
  if (!has_k_kernel(type)) fail(ErrorKind::Unsupported, "q8_K dot: no kernel for ", ggml_type_name(type));
  if (R < 1 || R > kMaxKRows || m0 < 0 || m0 + R > a.rows)
    fail(ErrorKind::InvalidArgument, "q8_K dot: rows [", m0, ", ", m0 + R, ") outside 0..", a.rows);
  if (simd && cpu_has_avx512_vnni() && avx512_dot_rows_k(type, w, a, m0, R, y, y_stride)) return;
#ifdef WICK_QDOT_K_AVX2
  if (simd) {
    for (int r = 0; r < R; r += kAvx2Rows)
      k_dispatch<kAvx2Rows, Avx2Rows>(type, w, a, m0 + r, std::min(kAvx2Rows, R - r), y + r * y_stride, y_stride);
    return;
  }
#endif
  ref_rows(type, w, a, m0, R, y, y_stride);
}

}  // namespace wick::cpu::qdot
