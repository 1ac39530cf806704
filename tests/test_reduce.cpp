// Reductions against PyTorch goldens (tests/data/gen_red.py) and hand-derived values.
#include <cmath>
#include <limits>

#include "support/devices.h"
#include "support/golden.h"
#include "support/raw_golden.h"

namespace wick {
namespace {

using test::red_golden;

class Reduce : public test::DeviceTest {
 protected:
  Tensor g(const std::string& name) const { return red_golden().get(name).to(dev()); }
};

const DType kFloats[] = {DType::F64, DType::F32, DType::F16, DType::BF16};

// Tolerance for a reduction of `count` inputs rounded to dtype.
std::vector<double> V(const Tensor& t) { return t.to_vector<double>(); }

double tol(DType dt, int64_t count) { return test::default_rtol(dt) * 3 * std::sqrt(double(count)); }

std::vector<int64_t> dims_of(const std::string& tag) {
  std::vector<int64_t> d;
  if (tag != "all")
    for (char c : tag) d.push_back(c - '0');
  return d;
}

TEST_P(Reduce, FloatSumMeanMinMaxOverDimSets) {
  const Tensor x64 = g("reduce.x");
  for (DType dt : kFloats) {
    const Tensor x = x64.to(dt);
    for (std::string tag : {"all", "0", "1", "2", "02", "12"}) {
      const auto dims = dims_of(tag);
      int64_t count = 1;
      for (int64_t d : dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims) count *= x.shape()[size_t(d)];
      SCOPED_TRACE(std::string(dtype_name(dt)) + " dims " + tag);
      const double t = tol(dt, count);
      EXPECT_EQ(sum(x, dims).dtype(), dt);
      EXPECT_CLOSE(sum(x, dims), g("reduce.sum." + tag), test::default_rtol(dt), t);
      // The mean's error is the sum's divided by the count (the sum's bound let sum / (n - 1)
      // pass in f32 and an all-zero mean in f16 / bf16).
      EXPECT_CLOSE(mean(x, dims), g("reduce.mean." + tag), test::default_rtol(dt), t / double(count));
      EXPECT_CLOSE(min(x, dims), g("reduce.min." + tag), test::default_rtol(dt), test::default_rtol(dt) * 4);
      EXPECT_CLOSE(max(x, dims), g("reduce.max." + tag), test::default_rtol(dt), test::default_rtol(dt) * 4);
    }
  }
}

TEST_P(Reduce, KeepdimShapes) {
  const Tensor x = g("reduce.x");
  EXPECT_EQ(sum(x, {0, 2}, true).shape(), (Shape{1, 7, 1}));
  EXPECT_EQ(sum(x, {-1}).shape(), (Shape{5, 7}));
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(sum(x, {}, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(argmax(x, 1, true).shape(), (Shape{5, 1, 9}));
  EXPECT_EQ(argmax(x, std::nullopt, true).shape(), (Shape{1, 1, 1}));
  EXPECT_CLOSE(sum(x, {0, 2}, true).reshape({7}), g("reduce.sum.02"), 1e-12, 1e-12);
}

// The same values through transposed, offset (narrowed) and broadcast views.
TEST_P(Reduce, StridedViews) {
  const Tensor x = g("reduce.x").to(DType::F32);
  const Tensor xt = x.permute({2, 0, 1}).contiguous().permute({1, 2, 0});  // same values, strides (1, 63, 9)...
  ASSERT_FALSE(xt.is_contiguous());
  for (std::string tag : {"all", "0", "1", "2", "02", "12"}) {
    SCOPED_TRACE(tag);
    EXPECT_CLOSE(sum(xt, dims_of(tag)), g("reduce.sum." + tag), 1e-5, 1e-4);
    EXPECT_CLOSE(max(xt, dims_of(tag)), g("reduce.max." + tag), 1e-6, 1e-6);
  }
  for (int64_t d : {0, 1, 2}) EXPECT_CLOSE(argmin(xt, d), g("reduce.argmin." + std::to_string(d)), 0, 0);
  // Offset view: x embedded in a bigger tensor, narrowed back out.
  Tensor big = zeros({7, 7, 11}, DType::F32, dev());
  big.narrow(0, 1, 5).narrow(2, 2, 9).copy_(x);
  const Tensor xn = big.narrow(0, 1, 5).narrow(2, 2, 9);
  EXPECT_CLOSE(sum(xn, {2}), g("reduce.sum.2"), 1e-5, 1e-5);
  EXPECT_CLOSE(sum(xn, {0}), g("reduce.sum.0"), 1e-5, 1e-5);
  EXPECT_CLOSE(min(xn, {1, 2}), g("reduce.min.12"), 1e-6, 1e-6);
  // Broadcast: a stride-0 dim of 4 copies sums to 4x.
  const Tensor row = Tensor::from_vector<float>({1.5f, -2.f, 3.25f}).to(dev());
  EXPECT_CLOSE(V(sum(row.broadcast_as(Shape{4, 3}), {0})), (std::vector<double>{6, -8, 13}), 0, 0);
  EXPECT_CLOSE(V(sum(row.broadcast_as(Shape{4, 3}), {1})), (std::vector<double>{2.75, 2.75, 2.75, 2.75}), 0, 0);
}

// Larger shapes exercise the inner (last dim), outer (first dim) and general paths and
// the parallel splits; the reference is a double loop over the same f32 values.
TEST_P(Reduce, InnerOuterGeneralPathsMatchLoop) {
  manual_seed(7);
  const Tensor x = randn({37, 301, 13}, DType::F32, dev());
  const auto v = x.to_vector<double>();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return v[size_t((i * 301 + j) * 13 + k)]; };
  std::vector<double> s0(301 * 13, 0), s1(37 * 13, 0), s2(37 * 301, 0);
  for (int64_t i = 0; i < 37; ++i)
    for (int64_t j = 0; j < 301; ++j)
      for (int64_t k = 0; k < 13; ++k) {
        s0[size_t(j * 13 + k)] += at(i, j, k);
        s1[size_t(i * 13 + k)] += at(i, j, k);
        s2[size_t(i * 301 + j)] += at(i, j, k);
      }
  EXPECT_CLOSE(V(sum(x, {0})), s0, 1e-5, 1e-5);
  EXPECT_CLOSE(V(sum(x, {1})), s1, 1e-5, 1e-4);
  EXPECT_CLOSE(V(sum(x, {2})), s2, 1e-5, 1e-5);
  // Transposed so the reduced dim is neither innermost nor outermost in memory.
  EXPECT_CLOSE(V(sum(x.transpose(0, 2), {1}).t()), s1, 1e-5, 1e-4);
}

TEST_P(Reduce, LongF32SumIsAccurate) {
  const Tensor x = g("reduce.long");
  const double expected = red_golden().get("reduce.long.sum").item<double>();
  EXPECT_NEAR(sum(x).item<double>(), expected, 1e-6 * std::sqrt(100003.0));
  EXPECT_NEAR(mean(x).item<double>(), expected / 100003, 1e-8);
  // An odd-length non-contiguous copy (stride 2) takes the general path.
  const Tensor x2 = x.narrow(0, 0, 100002).reshape({50001, 2}).t().select(0, 0);
  double ref = 0;
  const auto xv = x.to_vector<double>();
  for (size_t i = 0; i < 100002; i += 2) ref += xv[i];
  EXPECT_NEAR(sum(x2).item<double>(), ref, 1e-3);
}

TEST_P(Reduce, IntegerSumsAccumulateWideAndWrap) {
  const Tensor xi = g("reduce.xi");
  for (DType dt : {DType::I64, DType::U32, DType::U8}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = xi.to(dt);
    EXPECT_EQ(sum(x, {2}).dtype(), dt);
    EXPECT_CLOSE(sum(x, {2}), g("reduce.isum.2"), 0, 0);
    EXPECT_CLOSE(sum(x, {0}), g("reduce.isum.0"), 0, 0);
    const int64_t total = red_golden().get("reduce.isum.all").item<int64_t>();
    const int64_t expected = dt == DType::U8 ? total % 256 : total;  // u8 wraps like C++
    EXPECT_EQ(sum(x).item<int64_t>(), expected);
    EXPECT_CLOSE(prod(g("reduce.xpi").to(dt), {2}), g("reduce.iprod.2").to(dt), 0, 0);
  }
}

TEST_P(Reduce, FloatProd) {
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = g("reduce.xp").to(dt);
    EXPECT_CLOSE(prod(x, {2}), g("reduce.prod.2"), tol(dt, 9), tol(dt, 9));
    EXPECT_CLOSE(prod(x, {0}), g("reduce.prod.0"), tol(dt, 5), tol(dt, 5));
  }
}

TEST_P(Reduce, ArgMinMaxFirstIndexAndFlat) {
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor x = g("reduce.x").to(dt);
    for (int64_t d : {0, 1, 2}) {
      EXPECT_CLOSE(argmin(x, d), g("reduce.argmin." + std::to_string(d)), 0, 0);
      EXPECT_CLOSE(argmax(x, d), g("reduce.argmax." + std::to_string(d)), 0, 0);
    }
    EXPECT_EQ(argmin(x).item<int64_t>(), red_golden().get("reduce.argmin.flat").item<int64_t>());
    EXPECT_EQ(argmax(x).item<int64_t>(), red_golden().get("reduce.argmax.flat").item<int64_t>());
  }
  // Ties resolve to the first index, for every dtype, odd lengths and negative dims.
  for (DType dt : {DType::U8, DType::U32, DType::I64, DType::BF16, DType::F16, DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor t = Tensor::from_vector<double>({1, 5, 0, 5, 0, 2, 5}, Shape{7}).to(dt).to(dev());
    EXPECT_EQ(argmax(t).item<int64_t>(), 1);
    EXPECT_EQ(argmin(t, -1).item<int64_t>(), 2);
    EXPECT_EQ(argmax(t).dtype(), DType::I64);
  }
  // Long rows (the vectorized inner path must not reorder ties).
  Tensor big = zeros({1000}, DType::F32, dev());
  big.narrow(0, 700, 1).fill_(3.0);
  big.narrow(0, 900, 1).fill_(3.0);
  EXPECT_EQ(argmax(big).item<int64_t>(), 700);
  EXPECT_EQ(argmin(big).item<int64_t>(), 0);
  // Rows long enough to be split across threads: the chunks merge in order.
  Tensor huge = zeros({200001}, DType::F32, dev());
  huge.narrow(0, 150000, 1).fill_(3.0);
  huge.narrow(0, 190000, 1).fill_(3.0);
  huge.narrow(0, 30, 1).fill_(-1.0);
  huge.narrow(0, 170000, 1).fill_(-1.0);
  EXPECT_EQ(argmax(huge).item<int64_t>(), 150000);
  EXPECT_EQ(argmin(huge).item<int64_t>(), 30);
  huge.narrow(0, 180000, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(argmax(huge).item<int64_t>(), 180000);
  EXPECT_TRUE(std::isnan(min(huge).item<double>()));
}

TEST_P(Reduce, NaNPropagates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor t =
        Tensor::from_vector<double>({1, nan, -3, nan, 9, 2, 0, 1, 1, 1, 1, 4, 5, 6, 7, 8, 9, 1}, Shape{2, 9})
            .to(dt)
            .to(dev());
    const auto mx = max(t, {1}).to_vector<double>(), mn = min(t, {1}).to_vector<double>();
    EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mn[0]));
    EXPECT_EQ(mx[1], 9);
    EXPECT_EQ(mn[1], 1);
    EXPECT_EQ(argmax(t, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 7}));
    EXPECT_EQ(argmin(t, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
    EXPECT_TRUE(std::isnan(max(t).item<double>()));
    EXPECT_TRUE(std::isnan(max(t, {0}).to_vector<double>()[1]));  // outer path
  }
}

TEST_P(Reduce, EmptyAndScalar) {
  const Tensor e = zeros({3, 0}, DType::F32, dev());
  EXPECT_EQ(sum(e, {1}).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(prod(e, {1}).to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(mean(e, {1}).to_vector<double>()[0]));
  EXPECT_EQ(sum(e, {0}).shape(), Shape{0});
  EXPECT_EQ(max(e, {0}).shape(), Shape{0});  // reducing a non-empty dim of an empty tensor is fine
  EXPECT_EQ(sum(e).item<double>(), 0);
  EXPECT_WICK_ERROR(max(e, {1}), InvalidArgument, "max: cannot reduce over dim 1 of size 0");
  EXPECT_WICK_ERROR(min(e), InvalidArgument, "min: cannot reduce over dim 1 of size 0");
  EXPECT_WICK_ERROR(argmax(e), InvalidArgument, "argmax: cannot reduce an empty tensor");
  EXPECT_WICK_ERROR(argmin(e, 1), InvalidArgument, "argmin: cannot reduce over dim 1");

  const Tensor s = full({}, Scalar(2.5), DType::F32, dev());
  EXPECT_EQ(sum(s).shape(), Shape{});
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(sum(s, {0}).item<double>(), 2.5);
  EXPECT_EQ(max(s, {-1}, true).shape(), Shape{});
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
  const Tensor one = full({1, 1}, Scalar(int64_t(7)), DType::I64, dev());
  EXPECT_EQ(sum(one, {0, 1}).item<int64_t>(), 7);
  EXPECT_EQ(sum(one, {1}).shape(), Shape{1});
}

TEST_P(Reduce, BadArguments) {
  const Tensor x = zeros({2, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(mean(zeros({2}, DType::I64, dev())), DTypeMismatch,
                    "mean: expected a floating-point tensor, got i64");
  EXPECT_WICK_ERROR(sum(x, {2}), IndexOutOfRange, "sum: dim 2 out of range for a tensor of rank 2");
  EXPECT_WICK_ERROR(sum(x, {1, -1}), InvalidArgument, "sum: dim -1 appears more than once");
  EXPECT_WICK_ERROR(argmax(x, -3), IndexOutOfRange, "argmax: dim -3 out of range");
  EXPECT_WICK_ERROR(sum(Tensor()), InvalidArgument, "sum: input is an undefined tensor");
}

WICK_INSTANTIATE_DEVICE_TEST(Reduce);

}  // namespace
}  // namespace wick
