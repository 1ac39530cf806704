// f16/bf16 matmul kernels (cpu_gemm_half.h), for a 16-bit a or an f32 a (mixed_gemm). Paths:
//  - small M, b's K dimension contiguous (an (out, in) weight viewed transposed): for each
//    group of four weight rows an FMA dot over K against the f32 activation rows;
//  - small M, b's N dimension contiguous (an (in, out) weight): tasks split K into bands of
//    whole weight rows, each summing into its own partial, added at the end;
//  - larger M with b's K dimension contiguous: register tiles (gemm_tile_impl.h; AVX-512 ones
//    where the CPU has it, cpu_gemm_half_avx512.cpp), the weight converted as it is read;
//  - anything else: b widened to f32 a panel at a time in parallel, one sgemm per panel.
// The GEMVs are memory bound: the point is to stream the 16-bit weight once, in parallel,
// instead of first widening all of it.
#include "backend/cpu/cpu_gemm_half.h"

#include <cblas.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/thread_pool.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "backend/cpu/simd_avx2.h"
#define WICK_HALF_GEMM_SIMD 1
#endif

namespace wick::cpu {

#ifdef WICK_HALF_GEMM_SIMD
namespace {

// Decode-sized products: at most this many rows of a take the GEMV paths.
constexpr int64_t kMaxGemvRows = 8;
// Work (multiply-adds) per parallel task below which threading costs more than it saves.
constexpr int64_t kTaskWork = 32768;

// Eight consecutive values widened to f32 (exact for both 16-bit formats).
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const f16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const bf16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));  // bf16 is the top half of an f32
}

// n values at stride st widened to f32 into dst.
template <class T>
void widen(const T* p, int64_t n, int64_t st, float* dst) {
  int64_t i = 0;
  if (st == 1)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(p + i));
  for (; i < n; ++i) dst[i] = float(p[i * st]);
}

// rows x cols matrix (strides rs, cs) widened to a row-major f32 buffer, rows in parallel.
template <class T>
void widen_matrix(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float* dst) {
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) widen(p + r * rs, cols, cs, dst + r * cols);
  });
}

// The M activation rows as contiguous f32 (they are reused for every output column): a
// itself when it already is, else widened once into scratch (in parallel for many rows).
template <class T>
const float* f32_rows(const T* a, int64_t M, int64_t K, int64_t ars, int64_t acs, std::vector<float>& scratch) {
  if constexpr (std::is_same_v<T, float>)
    if (acs == 1 && ars == K) return a;
  scratch.resize(size_t(M * K));
  if (M <= kMaxGemvRows)
    for (int64_t m = 0; m < M; ++m) widen(a + m * ars, K, acs, scratch.data() + m * K);
  else
    widen_matrix(a, M, K, ars, acs, scratch.data());
  return scratch.data();
}

// out[m][n] = dot(x[m], w_n) with w_n = b + n * bcs contiguous over K. Four weight rows at a
// time: four independent FMA chains per activation row, and the four rows (4 x K x 2 bytes)
// stay in L1 while the M activation rows pass over them.
// With accumulate, out += the product (the fused linear's bias-first pass).
template <class T>
void gemv_k_contiguous(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* out,
                       bool accumulate) {
  constexpr int64_t kCols = 4;
  // A decode step (M = 1) is bound by the weight stream: each row is prefetched this many
  // values ahead (512 bytes of f16; measured on the 2-core dev machine, a 1B-shaped decode's
  // GEMV chain: 28.0 GB/s without, 29.5 with 256, 27.3 with 1024, 26.4 GB/s reading one row
  // at a time instead of four).
  constexpr int64_t kAhead = 256;
  const int64_t groups = (N + kCols - 1) / kCols;
  parallel_for(groups, std::max<int64_t>(1, kTaskWork / (kCols * K * M)), [&](int64_t lo, int64_t hi) {
    for (int64_t g = lo; g < hi; ++g) {
      const int64_t n0 = g * kCols, nc = std::min(kCols, N - n0);
      const T* w[kCols];
      for (int64_t j = 0; j < kCols; ++j) w[j] = b + (n0 + std::min(j, nc - 1)) * bcs;  // short group: repeat
      const T *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];                           // registers, not reloads of w[]
      for (int64_t m = 0; m < M; ++m) {
        const float* xm = x + m * K;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        int64_t k = 0;
        for (; k + 8 <= K; k += 8) {
          if (M == 1 && (k & 31) == 0) {  // one 64-byte line of each row per 32 values
            _mm_prefetch(reinterpret_cast<const char*>(w0 + k + kAhead), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(w1 + k + kAhead), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(w2 + k + kAhead), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(w3 + k + kAhead), _MM_HINT_T0);
          }
          const __m256 xv = _mm256_loadu_ps(xm + k);
          acc0 = _mm256_fmadd_ps(xv, load8(w0 + k), acc0);
          acc1 = _mm256_fmadd_ps(xv, load8(w1 + k), acc1);
          acc2 = _mm256_fmadd_ps(xv, load8(w2 + k), acc2);
          acc3 = _mm256_fmadd_ps(xv, load8(w3 + k), acc3);
        }
        float s[kCols] = {simd::hsum(acc0), simd::hsum(acc1), simd::hsum(acc2), simd::hsum(acc3)};
        for (; k < K; ++k)
          for (int64_t j = 0; j < kCols; ++j) s[j] += xm[k] * float(w[j][k]);
        for (int64_t j = 0; j < nc; ++j) out[m * N + n0 + j] = (accumulate ? out[m * N + n0 + j] : 0.0f) + s[j];
      }
    }
  });
}

// out[m][:] = sum_k x[m][k] * b[k][:] with each row b + k * brs contiguous over N (GPT-2's
// (in, out) weights). Tasks split K, not N: each streams a contiguous band of whole rows,
// which the prefetchers follow, where a block of columns walked down K touches a new page
// every row (the weight's rows are kilobytes apart). Each band sums into its own M x N
// partial (four weight rows per pass over it); the partials are added at the end.
template <class T>
void gemv_n_contiguous(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t brs, float* out,
                       bool accumulate) {
  constexpr int64_t kVec = 8, kRows = 4;  // the pass below is written for four rows
  const int64_t bands = std::clamp<int64_t>(M * N * K / kTaskWork, 1, std::min<int64_t>(4 * num_threads(), K));
  const int64_t band_rows = (K + bands - 1) / bands, nv = N / kVec * kVec;
  std::vector<float> part(size_t(bands * M * N), 0.0f);
  parallel_for(bands, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t band = lo; band < hi; ++band) {
      const int64_t k0 = band * band_rows, k1 = std::min(K, k0 + band_rows);
      float* acc = part.data() + band * M * N;
      for (int64_t k = k0; k < k1; k += kRows) {
        const int64_t kr = std::min(kRows, k1 - k);
        const T* r[kRows];
        for (int64_t j = 0; j < kRows; ++j) r[j] = b + (k + std::min(j, kr - 1)) * brs;
        for (int64_t m = 0; m < M; ++m) {
          // A short group repeats its last row with a zero factor.
          __m256 xv[kRows];
          for (int64_t j = 0; j < kRows; ++j) xv[j] = _mm256_set1_ps(j < kr ? x[m * K + k + j] : 0.0f);
          float* am = acc + m * N;
          for (int64_t n = 0; n < nv; n += kVec) {
            // Two short chains instead of one of four FMAs: the products of a pass do not
            // wait on each other's latency.
            const __m256 p = _mm256_fmadd_ps(xv[1], load8(r[1] + n), _mm256_mul_ps(xv[0], load8(r[0] + n)));
            const __m256 q = _mm256_fmadd_ps(xv[3], load8(r[3] + n), _mm256_mul_ps(xv[2], load8(r[2] + n)));
            _mm256_storeu_ps(am + n, _mm256_add_ps(_mm256_loadu_ps(am + n), _mm256_add_ps(p, q)));
          }
          for (int64_t n = nv; n < N; ++n)
            for (int64_t j = 0; j < kr; ++j) am[n] += x[m * K + k + j] * float(r[j][n]);
        }
      }
    }
  });
  parallel_for(M * N, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float s = accumulate ? out[i] : 0.0f;
      for (int64_t band = 0; band < bands; ++band) s += part[size_t(band * M * N + i)];
      out[i] = s;
    }
  });
}

// The larger products with a K-contiguous weight: gemm_tile_impl.h over AVX2 vectors, 6 x 2
// tiles (12 accumulators, 2 weight vectors and one x vector in the 16 registers; 4 x 3
// spilled under GCC). cpu_gemm_half_avx512.cpp has the same over AVX-512.
struct Isa {
  using vec = __m256;
  static constexpr int kLanes = 8, kRM = 6, kRN = 2;
  static vec zero() { return _mm256_setzero_ps(); }
  static vec load(const float* p) { return load8(p); }
  static vec load(const f16* p) { return load8(p); }
  static vec load(const bf16* p) { return load8(p); }
  static vec fma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(vec v) { return simd::hsum(v); }
  static void pin(vec& v) { asm("" : "+x"(v)); }
};
#include "backend/cpu/gemm_tile_impl.h"

// c (M x N, contiguous f32) = a @ b, or c += a @ b with accumulate; a is f32 or T.
template <class A, class T>
void product(int64_t M, int64_t N, int64_t K, const A* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
             int64_t bcs, float* c, bool accumulate) {
  // Strides of size-1 dimensions do not matter; normalizing them lets more layouts match.
  if (M == 1) ars = K;
  if (K == 1) acs = 1, brs = 1;
  if (N == 1) bcs = 1;
  std::vector<float> scratch;
  const float* x = f32_rows(a, M, K, ars, acs, scratch);
  if (M <= kMaxGemvRows && (brs == 1 || bcs == 1)) {
    if (brs == 1)
      gemv_k_contiguous(M, N, K, x, b, bcs, c, accumulate);
    else
      gemv_n_contiguous(M, N, K, x, b, brs, c, accumulate);
    return;
  }
  if (brs == 1) {
    if (gemm_k_avx512(M, N, K, x, b, bcs, c, accumulate)) return;
    return gemm_k(M, N, K, x, b, bcs, c, accumulate);
  }
  // b is widened a panel of output columns at a time (about 4 MB of f32, reused from the
  // cache by its sgemm) instead of whole: a 1B model's LM head would be 400 MB per call.
  // b with unit K stride is widened as its P x K transpose (unit-stride rows) and handed
  // to sgemm with the transpose flag.
  const bool tb = brs == 1 && bcs != 1;
  const int64_t P = std::min(N, std::max<int64_t>(64, (int64_t(1) << 20) / std::max<int64_t>(K, 1)) / 16 * 16);
  std::vector<float> fb(size_t(K * P));
  for (int64_t n0 = 0; n0 < N; n0 += P) {
    const int64_t np = std::min(P, N - n0);
    if (tb)
      widen_matrix(b + n0 * bcs, np, K, bcs, brs, fb.data());
    else
      widen_matrix(b + n0 * bcs, K, np, brs, bcs, fb.data());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(np), int(K), 1.0f, x, int(K),
                fb.data(), int(tb ? K : np), accumulate ? 1.0f : 0.0f, c + n0, int(N));
  }
}

}  // namespace

template <class T>
bool half_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
               int64_t bcs, T* out) {
  std::vector<float> c(size_t(M * N));
  product(M, N, K, a, ars, acs, b, brs, bcs, c.data(), false);
  parallel_for(M * N, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = convert<T>(c[size_t(i)]);
  });
  return true;
}

template <class T>
bool mixed_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
                int64_t bcs, float* out, bool accumulate) {
  product(M, N, K, a, ars, acs, b, brs, bcs, out, accumulate);
  return true;
}

#else

template <class T>
bool half_gemm(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const T*, int64_t, int64_t, T*) {
  return false;  // no AVX2/F16C/FMA in this build: the caller's generic path
}

template <class T>
bool mixed_gemm(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const T*, int64_t, int64_t, float*, bool) {
  return false;
}

#endif

template bool half_gemm<f16>(int64_t, int64_t, int64_t, const f16*, int64_t, int64_t, const f16*, int64_t, int64_t,
                             f16*);
template bool half_gemm<bf16>(int64_t, int64_t, int64_t, const bf16*, int64_t, int64_t, const bf16*, int64_t, int64_t,
                              bf16*);
template bool mixed_gemm<f16>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const f16*, int64_t, int64_t,
                              float*, bool);
template bool mixed_gemm<bf16>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const bf16*, int64_t, int64_t,
                               float*, bool);

}  // namespace wick::cpu
