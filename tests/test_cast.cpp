// to(DType): every pair of dtypes, the float -> int rules (truncation toward zero, NaN
// -> 0, saturation), int -> int wrapping, single rounding to f16/bf16, every layout.
// Results are read back in their own dtype so no second conversion hides a bug.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/devices.h"
#include "support/golden.h"
#include "support/golden_file.h"
#include "wick/wick.h"

namespace wick {
namespace {

const DType kAll[] = {DType::U8, DType::U32, DType::I64, DType::BF16, DType::F16, DType::F32, DType::F64};
const DType kFloats[] = {DType::BF16, DType::F16, DType::F32, DType::F64};

// The values of t (any dtype) read without a conversion, widened to double / int64.
std::vector<double> values(const Tensor& t) {
  return dispatch(t.dtype(), [&]<class T>() {
    std::vector<double> out;
    for (T v : t.to(Device::cpu()).to_vector<T>()) out.push_back(double(v));
    return out;
  });
}
template <class T>
std::vector<T> raw(const Tensor& t) {
  EXPECT_EQ(t.dtype(), dtype_v<T>);
  return t.to(Device::cpu()).to_vector<T>();
}

class Cast : public test::DeviceTest {
 protected:
  // Host doubles in a tensor of dtype src on the device (the f64 -> src cast is one of
  // the conversions under test; each use here only needs values exact in src).
  Tensor make(const std::vector<double>& v, DType src) const {
    return Tensor::from_vector(v, Shape{int64_t(v.size())}, dev()).to(src);
  }
};

TEST_P(Cast, EveryPairKeepsExactValues) {
  const std::vector<double> v = {0, 1, 2, 3, 100, 127, 200, 255};  // exact in every dtype
  for (DType src : kAll) {
    const Tensor x = make(v, src);
    EXPECT_EQ(values(x), v) << src;
    for (DType dst : kAll) {
      SCOPED_TRACE(std::string(dtype_name(src)) + " -> " + std::string(dtype_name(dst)));
      const Tensor y = x.to(dst);
      EXPECT_EQ(y.dtype(), dst);
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_EQ(values(y), v);
      // Strided, broadcast, rank-0 and empty sources.
      const Tensor m = x.reshape({2, 4});
      EXPECT_EQ(values(m.t().to(dst)), values(m.t().contiguous().to(dst)));
      EXPECT_EQ(values(x.narrow(0, 3, 4).to(dst)), (std::vector<double>{3, 100, 127, 200}));
      EXPECT_EQ(values(x.select(0, 6).to(dst)), (std::vector<double>{200}));
      EXPECT_EQ(values(x.select(0, 4).broadcast_as(Shape{2, 3}).to(dst)), std::vector<double>(6, 100));
      EXPECT_EQ(x.narrow(0, 0, 0).to(dst).numel(), 0);
    }
  }
}

TEST_P(Cast, FloatToIntTruncatesTowardZero) {
  for (DType src : kFloats) {
    SCOPED_TRACE(dtype_name(src));
    const Tensor x = make({2.75, -2.75, 0.5, -0.5, 100.5, -100.5}, src);
    EXPECT_EQ(raw<int64_t>(x.to(DType::I64)), (std::vector<int64_t>{2, -2, 0, 0, 100, -100}));
    EXPECT_EQ(raw<uint8_t>(x.to(DType::U8)), (std::vector<uint8_t>{2, 0, 0, 0, 100, 0}));  // negatives saturate
    EXPECT_EQ(raw<uint32_t>(x.to(DType::U32)), (std::vector<uint32_t>{2, 0, 0, 0, 100, 0}));
  }
}

TEST_P(Cast, NaNGivesZeroAndOutOfRangeSaturates) {
  const double inf = INFINITY, nan = NAN;
  for (DType src : kFloats) {
    SCOPED_TRACE(dtype_name(src));
    const Tensor x = make({nan, inf, -inf, 300, -5, 49152}, src);
    EXPECT_EQ(raw<uint8_t>(x.to(DType::U8)), (std::vector<uint8_t>{0, 255, 0, 255, 0, 255}));
    EXPECT_EQ(raw<uint32_t>(x.to(DType::U32)), (std::vector<uint32_t>{0, 4294967295u, 0, 300, 0, 49152}));
    const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    EXPECT_EQ(raw<int64_t>(x.to(DType::I64)), (std::vector<int64_t>{0, hi, lo, 300, -5, 49152}));
  }
  // Limits: exactly at and just past each integer range.
  const Tensor d = make({4294967295.0, 4294967296.0, 9.2233720368547758e18, -9.2233720368547758e18, 1e19}, DType::F64);
  EXPECT_EQ(raw<uint32_t>(d.to(DType::U32))[0], 4294967295u);
  EXPECT_EQ(raw<uint32_t>(d.to(DType::U32))[1], 4294967295u);
  const auto i = raw<int64_t>(d.to(DType::I64));
  EXPECT_EQ(i[2], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i[3], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i[4], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(raw<int64_t>(make({1e10}, DType::F32).to(DType::I64))[0], 10000000000);
}

TEST_P(Cast, IntToIntWraps) {
  const Tensor i = Tensor::from_vector<int64_t>({-1, 256, 257, 4294967296 + 5, -4294967295}, Shape{5}, dev());
  EXPECT_EQ(raw<uint8_t>(i.to(DType::U8)), (std::vector<uint8_t>{255, 0, 1, 5, 1}));
  EXPECT_EQ(raw<uint32_t>(i.to(DType::U32)), (std::vector<uint32_t>{4294967295u, 256, 257, 5, 1}));
  const Tensor u = Tensor::from_vector<uint32_t>({4294967295u, 300}, Shape{2}, dev());
  EXPECT_EQ(raw<uint8_t>(u.to(DType::U8)), (std::vector<uint8_t>{255, 44}));
  EXPECT_EQ(raw<int64_t>(u.to(DType::I64)), (std::vector<int64_t>{4294967295, 300}));
  EXPECT_EQ(raw<int64_t>(u.to(DType::U8).to(DType::I64)), (std::vector<int64_t>{255, 44}));
}

TEST_P(Cast, IntToFloatRoundsToNearest) {
  const Tensor i =
      Tensor::from_vector<int64_t>({(1 << 24) + 1, (1LL << 53) + 1, 70000, -(1 << 24) - 3}, Shape{4}, dev());
  EXPECT_EQ(raw<float>(i.to(DType::F32)), (std::vector<float>{16777216.f, 9007199254740992.f, 70000.f, -16777220.f}));
  EXPECT_EQ(raw<double>(i.to(DType::F64))[1], 9007199254740992.0);
  EXPECT_EQ(values(i.narrow(0, 2, 1).to(DType::F16)), (std::vector<double>{INFINITY}));  // above f16 max
  EXPECT_EQ(values(i.narrow(0, 2, 1).to(DType::BF16)), (std::vector<double>{70144}));
  EXPECT_EQ(raw<float>(Tensor::from_vector<uint32_t>({4294967295u}, Shape{1}, dev()).to(DType::F32))[0], 4294967296.f);
}

TEST_P(Cast, NarrowFloatsRoundOnceToNearestEven) {
  // 1 + 2^-11 + 2^-40 lies just above the f16 midpoint between 1 and 1 + 2^-10: one
  // rounding goes up; rounding through f32 first (to the midpoint, then to even) would not.
  const Tensor d = make({1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1 + 3 * 0x1p-11, 65519.99, 65520.0, -0.0}, DType::F64);
  const auto h = raw<f16>(d.to(DType::F16));
  EXPECT_EQ(h[0].bits, 0x3C01);  // 1 + 2^-10
  EXPECT_EQ(h[1].bits, 0x3C00);  // tie -> even (1)
  EXPECT_EQ(h[2].bits, 0x3C02);  // tie -> even (1 + 2^-9)
  EXPECT_EQ(h[3].bits, 0x7BFF);  // 65504
  EXPECT_EQ(h[4].bits, 0x7C00);  // Inf
  EXPECT_EQ(h[5].bits, 0x8000);  // -0
  const Tensor b = make({1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-8, NAN}, DType::F64);
  const auto bb = raw<bf16>(b.to(DType::BF16));
  EXPECT_EQ(bb[0].bits, 0x3F81);
  EXPECT_EQ(bb[1].bits, 0x3F80);
  EXPECT_TRUE(std::isnan(float(bb[2])));
}

TEST_P(Cast, F64ToF16AndF32MatchNumpy) {
  const test::GoldenFile g(test::data_path("elementwise.safetensors"));
  const Tensor x = g.get("cast/x/f64").to(dev());
  EXPECT_EQ(values(x.to(DType::F16)), values(g.get("cast/f16")));
  EXPECT_EQ(values(x.to(DType::F32)), values(g.get("cast/f32")));
  // Back up to f64 is exact.
  EXPECT_EQ(values(x.to(DType::F32).to(DType::F64)), values(g.get("cast/f32")));
}

WICK_INSTANTIATE_DEVICE_TEST(Cast);

}  // namespace
}  // namespace wick
