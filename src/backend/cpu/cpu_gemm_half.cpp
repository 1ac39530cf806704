// f16/bf16 matmul kernels (cpu_gemm_half.h), for a 16-bit a or an f32 a (mixed_gemm). Paths:
//  - small M, b's K dimension contiguous (an (out, in) weight viewed transposed): for each
//    group of four weight rows an FMA dot over K against the f32 activation rows;
//  - small M, b's N dimension contiguous (an (in, out) weight): tasks split K into bands of
//    whole weight rows, each summing into its own partial, added at the end;
//  - larger M with b's K dimension contiguous: register tiles (gemm_k_contiguous), the weight
//    converted as it is read;
//  - anything else: b widened to f32 a panel at a time in parallel, one sgemm per panel.
// The GEMVs are memory bound: the point is to stream the 16-bit weight once, in parallel,
// instead of first widening all of it.
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

// The larger products with a K-contiguous weight (an (out, in) weight viewed transposed, as
// Llama's are): register tiles of RM rows of x by RN weight rows, dot products over K kept in
// 8-lane accumulators and summed across lanes at the end (llamafile's tinyBLAS form). Each
// weight vector is converted once per RM rows and never written out widened. The caller's
// 6 x 2 tiles keep 12 accumulators, 2 weight vectors and one x vector in the 16 AVX2
// registers (4 x 3 spilled under GCC).
template <int RM, int RN, class T>
void tile_k_contiguous(int64_t K, const float* x, int64_t ldx, const T* const* w, float* c, int64_t ldc, int nr,
                       bool accumulate) {
  __m256 acc[RM][RN];
#pragma GCC unroll 6
  for (int i = 0; i < RM; ++i)
#pragma GCC unroll 3
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 bv[RN];
#pragma GCC unroll 3
    for (int j = 0; j < RN; ++j) bv[j] = load8(w[j] + k);
#pragma GCC unroll 6
    for (int i = 0; i < RM; ++i) {
      __m256 av = _mm256_loadu_ps(x + i * ldx + k);
      // Held in a register: GCC would otherwise fold the load into each FMA, RN loads of the
      // same vector, and the loads (not the FMAs) would bound the loop.
      asm("" : "+x"(av));
#pragma GCC unroll 3
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < nr; ++j) {
      float s = simd::hsum(acc[i][j]);
      for (int64_t t = k; t < K; ++t) s += x[i * ldx + t] * float(w[j][t]);
      c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + s;
    }
}

// c (M x N) = x (M x K, contiguous f32) @ b with b's rows b + n * bcs contiguous over K.
// Blocked for the caches: K in slices of kColBlock; the weight rows in panels of kPanel
// (128 KB of f16 per slice: L2) split over the threads; within a panel each tile of RM rows
// of x (12 KB: L1) meets every group of RN weight rows before the next tile is loaded. So
// per FMA the loop reads 2 bytes of weight per RM from L2 and x from L1: streaming x from
// L2 instead (x tiles outer to the weight groups) bound the loop at L2's 32 bytes a cycle.
// Partial sums of the K slices accumulate in c.
template <class T>
void gemm_k_contiguous(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* c,
                       bool accumulate) {
  constexpr int RM = 6, RN = 2;
  constexpr int64_t kColBlock = 1024, kPanel = 64;
  const int64_t panels = (N + kPanel - 1) / kPanel;
  for (int64_t kb = 0; kb < K; kb += kColBlock) {
    const int64_t kn = std::min(kColBlock, K - kb);
    const bool acc = accumulate || kb > 0;
    parallel_for(panels, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const int64_t p0 = p * kPanel, p1 = std::min(N, p0 + kPanel);
        for (int64_t m = 0; m < M; m += RM) {
          const float* xm = x + m * K + kb;
          const int64_t mr = std::min<int64_t>(RM, M - m);
          for (int64_t n0 = p0; n0 < p1; n0 += RN) {
            const int nr = int(std::min<int64_t>(RN, p1 - n0));
            const T* w[RN];
            for (int j = 0; j < RN; ++j) w[j] = b + (n0 + std::min(j, nr - 1)) * bcs + kb;  // short group: repeat
            float* cm = c + m * N + n0;
            switch (mr) {
              case 1: tile_k_contiguous<1, RN>(kn, xm, K, w, cm, N, nr, acc); break;
              case 2: tile_k_contiguous<2, RN>(kn, xm, K, w, cm, N, nr, acc); break;
              case 3: tile_k_contiguous<3, RN>(kn, xm, K, w, cm, N, nr, acc); break;
              case 4: tile_k_contiguous<4, RN>(kn, xm, K, w, cm, N, nr, acc); break;
              case 5: tile_k_contiguous<5, RN>(kn, xm, K, w, cm, N, nr, acc); break;
              default: tile_k_contiguous<RM, RN>(kn, xm, K, w, cm, N, nr, acc);
            }
          }
        }
      }
    });
  }
}

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
  if (brs == 1) return gemm_k_contiguous(M, N, K, x, b, bcs, c, accumulate);
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
