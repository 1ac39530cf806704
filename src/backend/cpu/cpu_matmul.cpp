// matmul on the CPU: out (batch..., M, N) = a (batch..., M, K) @ b (batch..., K, N).
//
// f32 and f64 go to OpenBLAS (sgemm/dgemm). An operand whose last two strides BLAS can
// express (row stride >= cols with unit column stride, or the transpose) is passed as is
// with its leading dimension and transpose flag; anything else (broadcast rows, steps)
// is copied into a contiguous scratch matrix first: never a "non-contiguous" error.
// f16/bf16 go to cpu_gemm_half (GEMVs reading the 16-bit weight for decode-sized M,
// parallel widening + sgemm otherwise); the whole-operand scalar pack below is only the
// fallback for builds without AVX2/F16C. An f32 a with an f16/bf16 b (only the fused
// linear asks for it) gives an f32 product through the same kernels.
// Integer dtypes use a plain loop kernel that accumulates in 64 bits (wrapping, then
// stored in the dtype); it is correct but not tuned.
//
// Batches: the front end broadcast the batch dims (stride 0 where broadcast). Many small
// GEMMs run in parallel over batches, one single-threaded BLAS call each; big GEMMs run
// one after another and let OpenBLAS use its own threads.
#include "backend/cpu/cpu_matmul.h"

#include <cblas.h>

#include <climits>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_gemm_half.h"
#include "backend/cpu/strided.h"

namespace wick {

namespace {

// Per-GEMM work below which OpenBLAS itself stays single-threaded (its SMP threshold),
// so running batches in parallel is the only parallelism available.
constexpr int64_t kSmallGemm = 262144;

struct Problem {
  int64_t batches = 1, M = 0, N = 0, K = 0;
  std::vector<int64_t> batch_shape, a_bstrides, b_bstrides;
  // Offsets of batch i's matrices in a and b (row-major batch index).
  int64_t a_offset(int64_t i) const { return offset(i, a_bstrides); }
  int64_t b_offset(int64_t i) const { return offset(i, b_bstrides); }
  int64_t offset(int64_t i, const std::vector<int64_t>& st) const {
    int64_t off = 0;
    for (size_t d = batch_shape.size(); d-- > 0;) {
      off += (i % batch_shape[d]) * st[d];
      i /= batch_shape[d];
    }
    return off;
  }
};

// How one operand (rows x cols with strides rs, cs) reaches BLAS.
struct BlasOperand {
  bool direct = false;  // usable without a copy
  bool trans = false;
  int64_t ld = 0;
};

BlasOperand blas_form(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (rows == 1) rs = std::max<int64_t>(cols, 1);  // strides of size-1 dims are irrelevant
  if (cols == 1) cs = 1;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return {true, false, rs};
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return {true, true, cs};
  return {};
}

// Copies (and converts) a strided rows x cols matrix into a row-major buffer.
template <class C, class T>
void pack(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, C* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = convert<C>(p[r * rs + c * cs]);
}

// One output row (M == 1, the decode step of a language model) is a matrix-vector
// product: gemv reads the weight once, where gemm would first repack it. beta is 0
// (c = product) or 1 (c += product).
void gemv(bool ta, bool tb, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          float beta) {
  // y (N) = op(B)^T-as-stored x: B stored K x N (tb false) or N x K (tb true).
  cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, blasint(tb ? N : K), blasint(tb ? K : N), 1.0f, b,
              blasint(ldb), a, blasint(ta ? lda : 1), beta, c, 1);
}
void gemv(bool ta, bool tb, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb, double* c,
          double beta) {
  cblas_dgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, blasint(tb ? N : K), blasint(tb ? K : N), 1.0, b,
              blasint(ldb), a, blasint(ta ? lda : 1), beta, c, 1);
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
          float* c, int64_t ldc, float beta) {
  if (M == 1 && N > 1 && K > 0) return gemv(ta, tb, N, K, a, lda, b, ldb, c, beta);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(M), blasint(N),
              blasint(K), 1.0f, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* a, int64_t lda, const double* b, int64_t ldb,
          double* c, int64_t ldc, double beta) {
  if (M == 1 && N > 1 && K > 0) return gemv(ta, tb, N, K, a, lda, b, ldb, c, beta);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(M), blasint(N),
              blasint(K), 1.0, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

// T: the stored dtype; C: the BLAS type (float for f16/bf16/f32, double for f64).
// accumulate (T == C only): out += a @ b.
template <class T, class C>
void blas_matmul(const Problem& p, const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* out,
                 bool accumulate) {
  constexpr bool same = std::is_same_v<T, C>;
  const BlasOperand fa = same ? blas_form(p.M, p.K, ars, acs) : BlasOperand{};
  const BlasOperand fb = same ? blas_form(p.K, p.N, brs, bcs) : BlasOperand{};
  auto one = [&](int64_t i) {
    if constexpr (is_half_type<T>::value)
      if (cpu::half_gemm(p.M, p.N, p.K, a + p.a_offset(i), ars, acs, b + p.b_offset(i), brs, bcs, out + i * p.M * p.N))
        return;
    std::vector<C> sa, sb, sc;
    const C* pa;
    const C* pb;
    BlasOperand ua = fa, ub = fb;
    if (fa.direct) {
      pa = reinterpret_cast<const C*>(a + p.a_offset(i));
    } else {
      sa.resize(size_t(p.M * p.K));
      pack(a + p.a_offset(i), p.M, p.K, ars, acs, sa.data());
      pa = sa.data();
      ua = {true, false, std::max<int64_t>(p.K, 1)};
    }
    if (fb.direct) {
      pb = reinterpret_cast<const C*>(b + p.b_offset(i));
    } else {
      sb.resize(size_t(p.K * p.N));
      pack(b + p.b_offset(i), p.K, p.N, brs, bcs, sb.data());
      pb = sb.data();
      ub = {true, false, std::max<int64_t>(p.N, 1)};
    }
    T* o = out + i * p.M * p.N;
    C* pc;
    if constexpr (same) {
      pc = o;
    } else {
      sc.resize(size_t(p.M * p.N));
      pc = sc.data();
    }
    gemm(ua.trans, ub.trans, p.M, p.N, p.K, pa, ua.ld, pb, ub.ld, pc, std::max<int64_t>(p.N, 1), C(accumulate ? 1 : 0));
    if constexpr (!same)
      for (int64_t k = 0; k < p.M * p.N; ++k) o[k] = convert<T>(sc[size_t(k)]);
  };
  if (p.batches > 1 && p.M * p.N * p.K <= kSmallGemm) {
    cpu::parallel_for(p.batches, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < p.batches; ++i) one(i);
  }
}

// Integers: out[m][n] = sum_k a[m][k] * b[k][n] in uint64 (wraps like the dtype would).
template <class T>
void loop_matmul(const Problem& p, const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* out) {
  const int64_t rows = p.batches * p.M;
  cpu::parallel_for(rows, std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, p.N * p.K)),
                    [&](int64_t lo, int64_t hi) {
                      std::vector<uint64_t> acc(size_t(p.N));
                      for (int64_t row = lo; row < hi; ++row) {
                        const int64_t i = row / p.M, m = row % p.M;
                        const T* ap = a + p.a_offset(i) + m * ars;
                        const T* bp = b + p.b_offset(i);
                        std::fill(acc.begin(), acc.end(), 0);
                        for (int64_t k = 0; k < p.K; ++k) {
                          const uint64_t av = uint64_t(ap[k * acs]);
                          const T* brow = bp + k * brs;
                          for (int64_t n = 0; n < p.N; ++n) acc[size_t(n)] += av * uint64_t(brow[n * bcs]);
                        }
                        T* o = out + row * p.N;
                        for (int64_t n = 0; n < p.N; ++n) o[n] = T(acc[size_t(n)]);
                      }
                    });
}

// f32 a @ f16/bf16 b into f32 out: the linears of an f32 model over 16-bit weights read
// the weight in place (cpu_gemm_half's mixed_gemm). Builds without AVX2/F16C widen b.
void mixed_matmul(const Problem& p, const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  WICK_CHECK(
      a.dtype() == DType::F32 && out.dtype() == DType::F32 && (b.dtype() == DType::F16 || b.dtype() == DType::BF16),
      Internal, "matmul: mixed operands ", a.dtype(), " @ ", b.dtype(), " -> ", out.dtype(),
      " (only f32 @ f16/bf16 -> f32)");
  const size_t r = a.rank();
  const int64_t ars = a.strides()[r - 2], acs = a.strides()[r - 1];
  const int64_t brs = b.strides()[r - 2], bcs = b.strides()[r - 1];
  const float* pa = cpu::base_ptr<const float>(a) + a.offset();
  float* po = cpu::base_ptr<float>(out) + out.offset();
  const bool done = dispatch_float(b.dtype(), "matmul", [&]<class T>() {
    if constexpr (is_half_v<T>) {
      const T* pb = cpu::base_ptr<const T>(b) + b.offset();
      for (int64_t i = 0; i < p.batches; ++i)
        if (!cpu::mixed_gemm(p.M, p.N, p.K, pa + p.a_offset(i), ars, acs, pb + p.b_offset(i), brs, bcs,
                             po + i * p.M * p.N, accumulate))
          return false;
      return true;
    }
    return false;
  });
  if (!done) cpu::matmul_into(a, b.to(DType::F32), out, accumulate);
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) { cpu::matmul_into(a, b, out, false); }

void cpu::matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  WICK_CHECK(!accumulate || out.dtype() == DType::F32 || out.dtype() == DType::F64, Internal,
             "matmul: accumulating into ", out.dtype(), " is not implemented (f32 and f64 only)");
  const size_t r = a.rank();
  Problem p;
  p.M = a.shape()[r - 2];
  p.K = a.shape()[r - 1];
  p.N = b.shape()[r - 1];
  for (size_t d = 0; d + 2 < r; ++d) {
    p.batch_shape.push_back(out.shape()[d]);
    p.a_bstrides.push_back(a.strides()[d]);
    p.b_bstrides.push_back(b.strides()[d]);
    p.batches *= out.shape()[d];
  }
  if (out.numel() == 0) return;
  if (p.K == 0) return accumulate ? void() : cpu_backend().fill(out, Scalar(0));
  WICK_CHECK(p.M <= INT_MAX && p.N <= INT_MAX && p.K <= INT_MAX, Unsupported, "matmul: dims ", p.M, "x", p.K, " @ ",
             p.K, "x", p.N, " exceed the 32-bit sizes of the BLAS interface");
  const int64_t ars = a.strides()[r - 2], acs = a.strides()[r - 1];
  const int64_t brs = b.strides()[r - 2], bcs = b.strides()[r - 1];
  if (a.dtype() != b.dtype()) return mixed_matmul(p, a, b, out, accumulate);
  dispatch(a.dtype(), [&]<class T>() {
    const T* pa = cpu::base_ptr<const T>(a) + a.offset();
    const T* pb = cpu::base_ptr<const T>(b) + b.offset();
    T* po = cpu::base_ptr<T>(out) + out.offset();
    if constexpr (std::is_same_v<T, double>)
      blas_matmul<T, double>(p, pa, ars, acs, pb, brs, bcs, po, accumulate);
    else if constexpr (is_float_v<T>)
      blas_matmul<T, float>(p, pa, ars, acs, pb, brs, bcs, po, accumulate);
    else
      loop_matmul<T>(p, pa, ars, acs, pb, brs, bcs, po);
  });
}

}  // namespace wick
