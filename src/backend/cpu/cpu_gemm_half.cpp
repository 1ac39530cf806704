// f16/bf16 matmul kernels (cpu_gemm_half.h). Three paths:
//  - small M, b's K dimension contiguous (an (out, in) weight viewed transposed): for each
//    weight row an FMA dot over K against the f32 activation rows;
//  - small M, b's N dimension contiguous (an (in, out) weight): axpy of weight rows into
//    f32 accumulator rows, a block of columns per task;
//  - anything else: a and b converted to f32 in parallel (vectorized along unit-stride
//    rows), one sgemm.
// The GEMVs are memory bound: the point is to stream the 16-bit weight once, in parallel
// over N, instead of first widening all of it in one thread.
#include "backend/cpu/cpu_gemm_half.h"

#include <cblas.h>

#include <algorithm>
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

// The M activation rows widened once (they are reused for every output column).
template <class T>
std::vector<float> widen_rows(const T* a, int64_t M, int64_t K, int64_t ars, int64_t acs) {
  std::vector<float> x(size_t(M * K));
  for (int64_t m = 0; m < M; ++m) widen(a + m * ars, K, acs, x.data() + m * K);
  return x;
}

// out[m][n] = dot(x[m], w_n) with w_n = b + n * bcs contiguous over K. Four weight rows at a
// time: four independent FMA chains per activation row, and the four rows (4 x K x 2 bytes)
// stay in L1 while the M activation rows pass over them.
// With accumulate, out += the product (the fused linear's bias-first pass).
template <class T>
void gemv_k_contiguous(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* out,
                       bool accumulate) {
  constexpr int64_t kCols = 4;
  const int64_t groups = (N + kCols - 1) / kCols;
  parallel_for(groups, std::max<int64_t>(1, kTaskWork / (kCols * K * M)), [&](int64_t lo, int64_t hi) {
    for (int64_t g = lo; g < hi; ++g) {
      const int64_t n0 = g * kCols, nc = std::min(kCols, N - n0);
      const T* w[kCols];
      for (int64_t j = 0; j < kCols; ++j) w[j] = b + (n0 + std::min(j, nc - 1)) * bcs;  // short group: repeat
      for (int64_t m = 0; m < M; ++m) {
        const float* xm = x + m * K;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        int64_t k = 0;
        for (; k + 8 <= K; k += 8) {
          const __m256 xv = _mm256_loadu_ps(xm + k);
          acc0 = _mm256_fmadd_ps(xv, load8(w[0] + k), acc0);
          acc1 = _mm256_fmadd_ps(xv, load8(w[1] + k), acc1);
          acc2 = _mm256_fmadd_ps(xv, load8(w[2] + k), acc2);
          acc3 = _mm256_fmadd_ps(xv, load8(w[3] + k), acc3);
        }
        float s[kCols] = {simd::hsum(acc0), simd::hsum(acc1), simd::hsum(acc2), simd::hsum(acc3)};
        for (; k < K; ++k)
          for (int64_t j = 0; j < kCols; ++j) s[j] += xm[k] * float(w[j][k]);
        for (int64_t j = 0; j < nc; ++j) out[m * N + n0 + j] = (accumulate ? out[m * N + n0 + j] : 0.0f) + s[j];
      }
    }
  });
}

// out[m][:] = sum_k x[m][k] * b[k][:] with each row b + k * brs contiguous over N. A task owns
// a block of kBlock columns and keeps its M x kBlock accumulators in registers / L1.
template <class T>
void gemv_n_contiguous(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t brs, float* out,
                       bool accumulate) {
  constexpr int64_t kVec = 8, kBlock = 64;  // 8 ymm accumulators per activation row
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  parallel_for(blocks, std::max<int64_t>(1, kTaskWork / (kBlock * K * M)), [&](int64_t lo, int64_t hi) {
    __m256 acc[kMaxGemvRows][kBlock / kVec];
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t n0 = blk * kBlock, nc = std::min(kBlock, N - n0), nv = nc / kVec;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < kBlock / kVec; ++j) acc[m][j] = _mm256_setzero_ps();
      for (int64_t k = 0; k < K; ++k) {
        const T* row = b + k * brs + n0;
        if (nv == kBlock / kVec) {  // full block: fixed trip counts the compiler unrolls
          __m256 bv[kBlock / kVec];
          for (int64_t j = 0; j < kBlock / kVec; ++j) bv[j] = load8(row + j * kVec);
          for (int64_t m = 0; m < M; ++m) {
            const __m256 xv = _mm256_set1_ps(x[m * K + k]);
            for (int64_t j = 0; j < kBlock / kVec; ++j) acc[m][j] = _mm256_fmadd_ps(xv, bv[j], acc[m][j]);
          }
        } else {
          for (int64_t j = 0; j < nv; ++j) {
            const __m256 bv = load8(row + j * kVec);
            for (int64_t m = 0; m < M; ++m) acc[m][j] = _mm256_fmadd_ps(_mm256_set1_ps(x[m * K + k]), bv, acc[m][j]);
          }
        }
      }
      for (int64_t m = 0; m < M; ++m) {
        float* o = out + m * N + n0;
        for (int64_t j = 0; j < nv; ++j)
          _mm256_storeu_ps(o + j * kVec,
                           accumulate ? _mm256_add_ps(_mm256_loadu_ps(o + j * kVec), acc[m][j]) : acc[m][j]);
        // Columns past the last full vector: a plain loop over K (at most 7 of them).
        for (int64_t n = nv * kVec; n < nc; ++n) {
          float s = 0;
          for (int64_t k = 0; k < K; ++k) s += x[m * K + k] * float(b[k * brs + n0 + n]);
          o[n] = (accumulate ? o[n] : 0.0f) + s;
        }
      }
    }
  });
}

// c (M x N, contiguous f32) = a @ b, or c += a @ b with accumulate; a is f32 or T.
template <class A, class T>
void product(int64_t M, int64_t N, int64_t K, const A* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
             int64_t bcs, float* c, bool accumulate) {
  // Strides of size-1 dimensions do not matter; normalizing them lets more layouts match.
  if (M == 1) ars = K;
  if (K == 1) acs = 1, brs = 1;
  if (N == 1) bcs = 1;
  if (M <= kMaxGemvRows && (brs == 1 || bcs == 1)) {
    const std::vector<float> x = widen_rows(a, M, K, ars, acs);
    if (brs == 1)
      gemv_k_contiguous(M, N, K, x.data(), b, bcs, c, accumulate);
    else
      gemv_n_contiguous(M, N, K, x.data(), b, brs, c, accumulate);
    return;
  }
  std::vector<float> fa(size_t(M * K));
  widen_matrix(a, M, K, ars, acs, fa.data());
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(np), int(K), 1.0f, fa.data(),
                int(K), fb.data(), int(tb ? K : np), accumulate ? 1.0f : 0.0f, c + n0, int(N));
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
