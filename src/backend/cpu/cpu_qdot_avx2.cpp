// The q8_0-activation block dot products of q8_0, q4_0 and mxfp4 weights (see cpu_qdot_avx2.h).
// The AVX2 kernels follow ggml's x86 formulation: _mm256_maddubs_epi16 multiplies unsigned
// by signed bytes, so a signed weight w is fed as |w| with x's sign flipped where w < 0
// (_mm256_sign_epi8), then _mm256_madd_epi16 sums pairs into int32 lanes. Pair sums stay in
// int16: |w| <= 128 and |x| <= 127. One kernel template serves both types; a decoder per type
// turns a packed block into a 32-byte register of quants.
#include "backend/cpu/cpu_qdot_avx2.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>

#include "backend/cpu/cpu_isa.h"
#include "io/quant/block_decode.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"
#include "wick/error.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "backend/cpu/simd_avx2.h"
#define WICK_QDOT_AVX2 1
#endif

namespace wick::cpu::qdot {

using namespace wick::quant;

namespace {

// ---- scalar references ----------------------------------------------------------------

// One 32-value weight block: quants and the float factor (value = wf * q).
struct RefBlock {
  int8_t q[kQK];
  float wf;
};

void ref_block(GgmlType type, const uint8_t* row, int64_t b, RefBlock& o) {
  if (type == GgmlType::Q8_0) {
    const uint8_t* p = row + b * int64_t(sizeof(BlockQ8_0));
    o.wf = f16_at(p);
    std::memcpy(o.q, p + offsetof(BlockQ8_0, qs), kQK);
  } else if (type == GgmlType::MXFP4) {  // the doubled e2m1 values under the halved e8m0 scale
    const uint8_t* p = row + b * int64_t(sizeof(BlockMXFP4));
    o.wf = e8m0_half(p[offsetof(BlockMXFP4, e)]);
    const uint8_t* qs = p + offsetof(BlockMXFP4, qs);
    for (int j = 0; j < kQK / 2; ++j) {
      o.q[j] = int8_t(mxfp4_value(qs[j] & 0x0Fu));
      o.q[j + kQK / 2] = int8_t(mxfp4_value(qs[j] >> 4));
    }
  } else {  // Q4_0
    const uint8_t* p = row + b * int64_t(sizeof(BlockQ4_0));
    o.wf = f16_at(p);
    const uint8_t* qs = p + offsetof(BlockQ4_0, qs);
    for (int j = 0; j < kQK / 2; ++j) {
      o.q[j] = int8_t((qs[j] & 0x0F) - 8);
      o.q[j + kQK / 2] = int8_t((qs[j] >> 4) - 8);
    }
  }
}

// Lane l's integer sum: values 4l..4l+3 of the block against the activation block xq.
int32_t lane_dot(const RefBlock& o, const int8_t* xq, int l) {
  int32_t p = 0;
  for (int i = 4 * l; i < 4 * l + 4; ++i) p += int32_t(o.q[i]) * int32_t(xq[i]);
  return p;
}

// The AVX2 kernels' horizontal sum order (simd::hsum).
float hsum8(const float* a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

void ref_rows(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t ys) {
  const int64_t nb = a.blocks;
  RefBlock o;
  for (int r = 0; r < R; ++r) {
    const int8_t* xq = a.qs.data() + (m0 + r) * nb * kQK;
    const float* xd = a.d.data() + (m0 + r) * nb;
    float acc[8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      ref_block(type, w, b, o);
      const float f = o.wf * xd[b];
      for (int l = 0; l < 8; ++l) acc[l] = std::fma(f, float(lane_dot(o, xq + b * kQK, l)), acc[l]);
    }
    y[r * ys] = hsum8(acc);
  }
}

// The wide kernel's order: 16 lanes, block b in lanes 8 * (b % 2) + l, the halves added
// lane by lane, then the 8-lane sum.
void ref_rows_wide(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t ys) {
  const int64_t nb = a.blocks;
  RefBlock o;
  for (int r = 0; r < R; ++r) {
    const int8_t* xq = a.qs.data() + (m0 + r) * nb * kQK;
    const float* xd = a.d.data() + (m0 + r) * nb;
    float acc[16] = {};
    for (int64_t b = 0; b < nb; ++b) {
      ref_block(type, w, b, o);
      const float f = o.wf * xd[b];
      for (int l = 0; l < 8; ++l) {
        float& lane = acc[8 * (b % 2) + l];
        lane = std::fma(f, float(lane_dot(o, xq + b * kQK, l)), lane);
      }
    }
    float half[8];
    for (int l = 0; l < 8; ++l) half[l] = acc[l + 8] + acc[l];
    y[r * ys] = hsum8(half);
  }
}

void ref_quantize(const float* x, int64_t m0, int64_t m1, int64_t K, ActQ8& a) {
  std::vector<BlockQ8_0> blk(size_t(K / kQK));
  for (int64_t m = m0; m < m1; ++m) {
    quantize_run(GgmlType::Q8_0, x + m * K, reinterpret_cast<uint8_t*>(blk.data()), K);
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t i = m * a.blocks + b;
      a.d[size_t(i)] = f16_value(blk[size_t(b)].d);
      std::memcpy(a.qs.data() + i * kQK, blk[size_t(b)].qs, kQK);
      int sum = 0;
      for (int j = 0; j < kQK; ++j) sum += blk[size_t(b)].qs[j];
      a.sum[size_t(i)] = int16_t(sum);
    }
  }
}

#ifdef WICK_QDOT_AVX2
// ---- AVX2 ------------------------------------------------------------------------------

#include "backend/cpu/qdot_decoders_impl.h"

template <int R, class Dec>
void avx2_rows(const uint8_t* w, const ActQ8& a, int64_t m0, float* y, int64_t ys) {
  const int64_t nb = a.blocks;
  __m256 acc[R];
  const int8_t* xq[R];
  const float* xd[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xq[r] = a.qs.data() + (m0 + r) * nb * kQK;
    xd[r] = a.d.data() + (m0 + r) * nb;
  }
  const __m256i one = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    for (int o = 0; o < Dec::kBytes; o += 64)
      _mm_prefetch(reinterpret_cast<const char*>(w + b * Dec::kBytes + kAheadBytes + o), _MM_HINT_T0);
    float wf;
    const __m256i wv = Dec::decode(w + b * Dec::kBytes, wf);
    const __m256i wa = _mm256_sign_epi8(wv, wv);
    for (int r = 0; r < R; ++r) {
      const __m256i xsgn = _mm256_sign_epi8(load32(xq[r] + b * kQK), wv);
      const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xsgn), one);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(wf * xd[r][b]), _mm256_cvtepi32_ps(p), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[r * ys] = simd::hsum(acc[r]);
}

template <class Dec>
void avx2_dispatch(const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t ys) {
  with_rows<kMaxRows>(R, [&]<int N>() { avx2_rows<N, Dec>(w, a, m0, y, ys); });
}

// ggml's q8_0 reference rounding (quantize_q8_0 in io/quant/quantize.cpp) in 8 lanes:
// d = max|x| / 127, q = roundf(x / d) with halves away from zero, which
// _mm256_round_ps has no mode for: truncate, then step away from zero where the
// (exact) remainder is at least one half.
void avx2_quantize(const float* x, int64_t m0, int64_t m1, int64_t K, ActQ8& a) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  for (int64_t m = m0; m < m1; ++m) {
    for (int64_t b = 0; b < a.blocks; ++b) {
      const float* xb = x + m * K + b * kQK;
      __m256 v[4];
      for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
      __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const int64_t i = m * a.blocks + b;
      a.d[size_t(i)] = f16_value(f16(d).bits);
      const __m256 vid = _mm256_set1_ps(id);
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 s = _mm256_mul_ps(v[k], vid);
        const __m256 t = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m256 step = _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(s, t), abs_mask), half, _CMP_GE_OQ),
                                          _mm256_or_ps(_mm256_and_ps(s, sign_mask), one));
        q[k] = _mm256_cvttps_epi32(_mm256_add_ps(t, step));
      }
      const __m256i s4 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
      s = _mm_hadd_epi32(s, s);
      a.sum[size_t(i)] = int16_t(_mm_cvtsi128_si32(_mm_hadd_epi32(s, s)));
      // packs work per 128-bit half; the permute puts the 32 bytes back in order.
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.qs.data() + i * kQK),
                          _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
  }
}
#endif

}  // namespace

bool have_avx2() {
#ifdef WICK_QDOT_AVX2
  return true;
#else
  return false;
#endif
}

bool has_kernel(GgmlType type) { return type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::MXFP4; }

void resize_act(ActQ8& a, int64_t M, int64_t K) {
  if (K % kQK != 0) fail(ErrorKind::ShapeMismatch, "q8 activations: K must be a multiple of 32, got K = ", K);
  a.rows = M;
  a.blocks = K / kQK;
  a.qs.resize(size_t(M * K));
  a.d.resize(size_t(M * a.blocks));
  a.sum.resize(size_t(M * a.blocks));
}

void quantize_act_rows(const float* x, int64_t K, int64_t m0, int64_t m1, ActQ8& a, bool simd) {
  if (K != a.blocks * kQK || m0 < 0 || m1 > a.rows)
    fail(ErrorKind::InvalidArgument, "q8 activations: rows [", m0, ", ", m1, ") of K = ", K, " outside the ", a.rows,
         " x ", a.blocks * kQK, " buffer");
#ifdef WICK_QDOT_AVX2
  if (simd) return avx2_quantize(x, m0, m1, K, a);
#endif
  (void)simd;
  ref_quantize(x, m0, m1, K, a);
}

void quantize_act(const float* x, int64_t M, int64_t K, ActQ8& a, bool simd) {
  resize_act(a, M, K);
  quantize_act_rows(x, K, 0, M, a, simd);
}

bool has_wide_kernel(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::MXFP4;
}

bool wide_available() { return cpu_has_avx512_vnni(); }

void prepare_wide(ActQ8& a) {
  const int64_t pairs = (a.blocks + 1) / 2;
  a.d_pairs.assign(size_t(a.rows * pairs * 16), 0.0f);
  for (int64_t m = 0; m < a.rows; ++m)
    for (int64_t b = 0; b < a.blocks; ++b)
      std::fill_n(a.d_pairs.begin() + (m * pairs + b / 2) * 16 + 8 * (b % 2), 8, a.d[size_t(m * a.blocks + b)]);
}

void dot_rows_wide(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride,
                   bool simd) {
  if (!has_wide_kernel(type)) fail(ErrorKind::Unsupported, "q8 dot (wide): no kernel for ", ggml_type_name(type));
  if (R < 1 || R > kMaxWideRows || m0 < 0 || m0 + R > a.rows)
    fail(ErrorKind::InvalidArgument, "q8 dot (wide): rows [", m0, ", ", m0 + R, ") outside 0..", a.rows);
  if (a.d_pairs.size() != size_t(a.rows * ((a.blocks + 1) / 2) * 16))
    fail(ErrorKind::InvalidArgument, "q8 dot (wide): the activations were not prepared (prepare_wide)");
  if (simd && wide_available() && avx512_dot_rows(type, w, a, m0, R, y, y_stride)) return;
  ref_rows_wide(type, w, a, m0, R, y, y_stride);
}

void dot_rows(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride,
              bool simd) {
  if (!has_kernel(type)) fail(ErrorKind::Unsupported, "q8 dot: no kernel for ", ggml_type_name(type));
  if (R < 1 || R > kMaxRows || m0 < 0 || m0 + R > a.rows)
    fail(ErrorKind::InvalidArgument, "q8 dot: rows [", m0, ", ", m0 + R, ") outside 0..", a.rows);
#ifdef WICK_QDOT_AVX2
  if (simd) {
    if (type == GgmlType::Q8_0) return avx2_dispatch<DecQ8_0>(w, a, m0, R, y, y_stride);
    if (type == GgmlType::MXFP4) return avx2_dispatch<DecMXFP4>(w, a, m0, R, y, y_stride);
    return avx2_dispatch<DecQ4_0>(w, a, m0, R, y, y_stride);
  }
#endif
  (void)simd;
  ref_rows(type, w, a, m0, R, y, y_stride);
}

}  // namespace wick::cpu::qdot
