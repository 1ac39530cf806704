// matmul against PyTorch goldens (tests/data/gen_red.py): dtypes, 1-D promotion, batch
// broadcasting, and operands BLAS takes directly (transposed) or after a copy (strided).
#include <cmath>
#include <vector>

#include "support/devices.h"
#include "support/golden.h"
#include "support/linear_reference.h"
#include "support/raw_golden.h"

namespace wick {
namespace {

using test::red_golden;

class Matmul : public test::DeviceTest {
 protected:
  Tensor g(const std::string& name) const { return red_golden().get(name).to(dev()); }
};

// Tolerance for an inner product of K values rounded to dtype.
double tol(DType dt) { return test::default_rtol(dt) * 8; }

// c (M, N) against the product of a (M, K) and b (K, N) as given (already rounded to their
// dtype), computed in double, each element within what the kernels' arithmetic allows: the
// sum accumulated in f32 (f64 for f64; each partial sum within K roundings of the sum of
// |a b|) and the result rounded once to c's dtype (unit_roundoff: one ulp, twice the half ulp
// a rounding costs). A product 10% off, doubled or zeroed fails it in every dtype.
void expect_product_of(const Tensor& c, const Tensor& a, const Tensor& b) {
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  const std::vector<double> av = a.to(Device::cpu()).to(DType::F64).to_vector<double>();
  const std::vector<double> bv = b.to(Device::cpu()).to(DType::F64).to_vector<double>();
  const std::vector<double> cv = c.to(Device::cpu()).to(DType::F64).to_vector<double>();
  const double u = test::unit_roundoff(c.dtype()), acc = c.dtype() == DType::F64 ? 0x1p-53 : 0x1p-24;
  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += av[size_t(m * K + k)] * bv[size_t(k * N + n)];
        mag += std::abs(av[size_t(m * K + k)] * bv[size_t(k * N + n)]);
      }
      const double got = cv[size_t(m * N + n)];
      if (!(std::abs(got - ref) <= u * std::abs(ref) + double(K + 2) * acc * mag) && ++bad <= 3)
        ADD_FAILURE() << "c[" << m << ", " << n << "] = " << got << ", want " << ref;
    }
  EXPECT_EQ(bad, 0);
}

TEST_P(Matmul, FloatDtypes2D) {
  for (DType dt : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = g("mm.a").to(dt), b = g("mm.b").to(dt);
    const Tensor c = matmul(a, b);
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_CLOSE(c, g("mm.ab"), tol(dt), tol(dt));
    expect_product_of(c, a, b);
  }
}

TEST_P(Matmul, IntegerLoopKernel) {
  for (DType dt : {DType::I64}) EXPECT_CLOSE(matmul(g("mm.ai").to(dt), g("mm.bi").to(dt)), g("mm.aibi"), 0, 0);
  // u8 wraps modulo 256 like the dtype: [200, 100] @ [2, 1] = 500 -> 244.
  const Tensor a = Tensor::from_vector<uint8_t>({200, 100}, Shape{1, 2}).to(dev());
  const Tensor b = Tensor::from_vector<uint8_t>({2, 1}, Shape{2, 1}).to(dev());
  EXPECT_EQ(matmul(a, b).item<int64_t>(), 244);
  EXPECT_EQ(matmul(a.to(DType::U32), b.to(DType::U32)).item<int64_t>(), 500);
}

TEST_P(Matmul, TransposedOffsetAndBroadcastOperands) {
  const Tensor a = g("mm.a"), b = g("mm.b"), ab = g("mm.ab");
  for (DType dt : {DType::F64, DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor ad = a.to(dt), bd = b.to(dt);
    const Tensor at = ad.t().contiguous().t(), bt = bd.t().contiguous().t();  // column-major: BLAS transpose flag
    EXPECT_FALSE(at.is_contiguous());
    EXPECT_CLOSE(matmul(at, bd), ab, tol(dt), tol(dt));
    EXPECT_CLOSE(matmul(ad, bt), ab, tol(dt), tol(dt));
    EXPECT_CLOSE(matmul(at, bt), ab, tol(dt), tol(dt));
    // Offset views inside a larger matrix (row stride > cols: passed with lda).
    Tensor big = zeros({9, 8}, dt, dev());
    big.narrow(0, 1, 7).narrow(1, 2, 5).copy_(ad);
    EXPECT_CLOSE(matmul(big.narrow(0, 1, 7).narrow(1, 2, 5), bd), ab, tol(dt), tol(dt));
    // Every other column: neither stride is 1, the operand is copied.
    Tensor wide = zeros({7, 10}, dt, dev());
    wide.slice(1, 0, 10, 2).copy_(ad);
    EXPECT_CLOSE(matmul(wide.slice(1, 0, 10, 2), bd), ab, tol(dt), tol(dt));
    // A broadcast (stride 0) row operand: every output row equals row 0 of a @ b.
    const Tensor rows = matmul(ad.narrow(0, 0, 1).broadcast_as(Shape{3, 5}), bd);
    EXPECT_CLOSE(rows.narrow(0, 2, 1), ab.narrow(0, 0, 1), tol(dt), tol(dt));
  }
}

TEST_P(Matmul, OneDimOperandsAndBatchBroadcast) {
  EXPECT_CLOSE(matmul(g("mm.v"), g("mm.b")), g("mm.vb"), 1e-12, 1e-12);
  EXPECT_CLOSE(matmul(g("mm.a"), g("mm.v")), g("mm.av"), 1e-12, 1e-12);
  const Tensor dot = matmul(g("mm.v"), g("mm.v"));
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_CLOSE(dot, g("mm.vv"), 1e-12, 1e-12);
  const Tensor c = matmul(g("mm.ba"), g("mm.bb"));  // (2,1,4,5) @ (3,5,6)
  EXPECT_EQ(c.shape(), (Shape{2, 3, 4, 6}));
  EXPECT_CLOSE(c, g("mm.bab"), 1e-12, 1e-12);
  EXPECT_CLOSE(matmul(g("mm.ba").to(DType::F32), g("mm.bb").to(DType::F32)), g("mm.bab"), 1e-5, 1e-5);
  EXPECT_CLOSE(matmul(g("mm.ba"), g("mm.v")), g("mm.bav"), 1e-12, 1e-12);
  // Many small batches (parallel over batches) agree with one-at-a-time products.
  manual_seed(3);
  const Tensor x = randn({64, 3, 9}, DType::F32, dev()), y = randn({9, 5}, DType::F32, dev());
  const Tensor xy = matmul(x, y);
  for (int64_t i : {0, 17, 63}) EXPECT_CLOSE(xy.select(0, i), matmul(x.select(0, i), y), 1e-6, 1e-6);
}

TEST_P(Matmul, EdgeShapes) {
  // K = 0: zeros.
  const Tensor z = matmul(zeros({3, 0}, DType::F32, dev()), zeros({0, 4}, DType::F32, dev()));
  EXPECT_EQ(z.shape(), (Shape{3, 4}));
  EXPECT_EQ(z.to_vector<double>(), std::vector<double>(12, 0.0));
  EXPECT_EQ(matmul(zeros({0, 5}, DType::F32, dev()), zeros({5, 2}, DType::F32, dev())).shape(), (Shape{0, 2}));
  EXPECT_EQ(matmul(zeros({2, 0, 3, 5}, DType::F32, dev()), zeros({5, 2}, DType::F32, dev())).shape(),
            (Shape{2, 0, 3, 2}));
  // 1 x 1 and odd sizes.
  const Tensor one = full({1, 1}, Scalar(3.0), DType::F32, dev());
  EXPECT_EQ(matmul(one, one).item<double>(), 9.0);
  const Tensor a = ones({17, 33}, DType::F32, dev()), b = ones({33, 19}, DType::F32, dev());
  EXPECT_EQ(matmul(a, b).to_vector<double>(), std::vector<double>(17 * 19, 33.0));
}

TEST_P(Matmul, BadArguments) {
  const Tensor a = zeros({2, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(matmul(a, zeros({4, 2}, DType::F32, dev())), ShapeMismatch,
                    "matmul: shapes [2, 3] and [4, 2] cannot be multiplied");
  EXPECT_WICK_ERROR(matmul(a, zeros({3, 2}, DType::F64, dev())), DTypeMismatch, "matmul: dtypes differ: f32 and f64");
  EXPECT_WICK_ERROR(matmul(zeros({2, 2, 3}, DType::F32, dev()), zeros({3, 3, 1}, DType::F32, dev())), ShapeMismatch,
                    "matmul: shapes [2] and [3] cannot be broadcast");
  EXPECT_WICK_ERROR(matmul(full({}, Scalar(1.0), DType::F32, dev()), a), ShapeMismatch, "rank >= 1");
}

WICK_INSTANTIATE_DEVICE_TEST(Matmul);

}  // namespace
}  // namespace wick
