// f16/bf16 matmul on the CPU (cpu_gemm_half): decode-sized M through the two GEMV layouts,
// larger M through parallel widening + sgemm, odd sizes, offset and strided views, batches.
// Reference: the f64 product of the same 16-bit values, by a plain loop here; the tolerance
// is f32 accumulation error relative to sum |a||b| plus one rounding of the result to the dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "wick/ops.h"
#include "wick/tensor.h"

namespace wick {
namespace {

// Row-major f64 copy of a (any strides; f16/bf16 -> f64 is exact).
std::vector<double> values(const Tensor& t) { return t.to(DType::F64).contiguous().to_vector<double>(); }

// Checks matmul(a, b) (rank 2 or 3, same batch) against the f64 loop over the 16-bit values.
void check(const Tensor& a, const Tensor& b, const std::string& what) {
  SCOPED_TRACE(what + " " + std::string(dtype_name(a.dtype())) + " a" + a.shape().to_string() + " b" +
               b.shape().to_string());
  const Tensor c = matmul(a, b);
  ASSERT_EQ(c.dtype(), a.dtype());
  const size_t r = a.rank();
  const int64_t M = a.shape()[r - 2], K = a.shape()[r - 1], N = b.shape()[r - 1];
  const int64_t B = r == 3 ? a.shape()[0] : 1;
  const std::vector<double> av = values(a), bv = values(b), cv = values(c);
  ASSERT_EQ(int64_t(cv.size()), B * M * N);
  // Rounding the result to the dtype: half an ulp relative, or half the subnormal spacing
  // (2^-25 for f16) for tiny results.
  const bool bf = a.dtype() == DType::BF16;
  const double out_eps = bf ? 1.0 / 256 : 1.0 / 2048, out_abs = bf ? 0x1p-134 : 0x1p-25;
  int bad = 0;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double x = av[size_t((i * M + m) * K + k)], y = bv[size_t((i * K + k) * N + n)];
          ref += x * y;
          mag += std::abs(x * y);
        }
        const double got = cv[size_t((i * M + m) * N + n)];
        const double tol = out_eps * std::abs(ref) + 1e-6 * mag + out_abs;
        if (!(std::abs(got - ref) <= tol) && bad++ < 5)
          ADD_FAILURE() << "out[" << i << "][" << m << "][" << n << "] = " << got << ", want " << ref << " (tol " << tol
                        << ")";
      }
  EXPECT_EQ(bad, 0);
}

class MatmulHalf : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulHalf, ShapesAndWeightLayouts) {
  const DType dt = GetParam();
  manual_seed(7);
  for (int64_t M : {1, 2, 3, 7, 8, 9, 33})
    for (int64_t K : {1, 31, 257})
      for (int64_t N : {1, 17, 1000}) {
        const Tensor a = randn({M, K}).to(dt);
        // (out, in) weight viewed transposed: K contiguous (the dot GEMV for small M).
        check(a, randn({N, K}).to(dt).t(), "weight (out,in).t()");
        // (in, out) weight: N contiguous (the axpy GEMV for small M).
        check(a, randn({K, N}).to(dt), "weight (in,out)");
      }
}

TEST_P(MatmulHalf, LongRowsWidenTheWeightInPanels) {
  // More than 8 rows take the widen-then-sgemm path, the weight a panel of 2^20 / K output
  // columns at a time: K 8193 gives panels of 112 columns, 9 of them, the last one partial.
  const DType dt = GetParam();
  manual_seed(13);
  const Tensor a = randn({9, 8193}).to(dt);
  check(a, randn({1000, 8193}).to(dt).t(), "panels (out,in).t()");
  check(a, randn({8193, 1000}).to(dt), "panels (in,out)");
}

TEST_P(MatmulHalf, OffsetAndStridedViews) {
  const DType dt = GetParam();
  manual_seed(11);
  for (int64_t M : {1, 5, 8, 20})
    for (int64_t K : {33, 130}) {
      const int64_t N = 75;
      const Tensor abig = randn({M + 2, K + 3}).to(dt);
      const Tensor a = abig.narrow(0, 1, M).narrow(1, 2, K);  // row stride K + 3, offset
      const Tensor at = randn({K, M}).to(dt).t();             // a with unit row stride
      const Tensor wbig = randn({N + 4, K + 9}).to(dt);
      const Tensor bt = wbig.narrow(0, 3, N).narrow(1, 5, K).t();  // K contiguous, column stride K + 9
      const Tensor bbig = randn({K + 2, N + 6}).to(dt);
      const Tensor bn = bbig.narrow(0, 1, K).narrow(1, 4, N);            // N contiguous, row stride N + 6
      const Tensor bs = randn({K, 2 * N}).to(dt).slice(1, 0, 2 * N, 2);  // no unit stride: widened copy
      for (const Tensor& x : {a, at}) {
        check(x, bt, "offset (out,in).t()");
        check(x, bn, "offset (in,out)");
        check(x, bs, "column step 2");
      }
    }
}

TEST_P(MatmulHalf, Batched) {
  const DType dt = GetParam();
  manual_seed(13);
  for (int64_t M : {1, 4, 12}) {
    const Tensor a = randn({3, M, 40}).to(dt);
    check(a, randn({3, 29, 40}).to(dt).transpose(1, 2), "batched K-contiguous");
    check(a, randn({3, 40, 29}).to(dt), "batched N-contiguous");
    // Batch dims as a view: every other batch of a larger stack.
    check(randn({6, M, 40}).to(dt).slice(0, 0, 6, 2), randn({3, 40, 29}).to(dt), "batch step 2");
  }
}

TEST_P(MatmulHalf, ShapeMismatchIsAnError) {
  const DType dt = GetParam();
  EXPECT_THROW(matmul(zeros({2, 3}, dt), zeros({4, 5}, dt)), Error);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulHalf, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace wick
