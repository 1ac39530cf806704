// bf16/f16 max/min/argmax/argmin along the last dim (the CUDA packed row path,
// src/backend/cuda/reduce_packed.cuh) and the first (the column path) against a hand-written reference on the same
// stored values: NaN propagates (max/min NaN, argmax/argmin the first NaN), ties and
// equal zeros of either sign take the first index. Rows cover the warp mode (<= 4096
// elements), the block mode, splits across blocks (few long rows), lengths that are not
// multiples of 8 and views starting off a 16-byte boundary. Everything outside a view is
// NaN, so a read past a row's ends shows up as a wrong result.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/devices.h"
#include "support/golden.h"

namespace wick {
namespace {

class ReduceHalf : public test::DeviceTest {};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
constexpr int kScenarios = 10;

// Row r of length n (values exact in bf16 and f16), scenario r % kScenarios.
std::vector<float> make_row(int64_t r, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float((k * 37 + r * 11) % 101 - 50);  // +-50 repeat: ties
  auto at = [&](int64_t salt) { return size_t((r * 7919 + salt * 104729) % n); };
  switch (r % kScenarios) {
    case 0: break;                           // ties of +-50 only
    case 1: v[0] = kNaN; break;              // NaN first
    case 2: v[size_t(n / 2)] = kNaN; break;  // NaN in the middle
    case 3: v[size_t(n - 1)] = kNaN; break;  // NaN last (the scalar tail when n % 8 != 0)
    case 4:                                  // two NaNs and a +inf
      v[at(1)] = kNaN, v[at(2)] = kNaN, v[at(3)] = kInf;
      break;
    case 5:  // ties of infinities
      v[at(4)] = kInf, v[at(5)] = kInf, v[at(6)] = -kInf, v[at(7)] = -kInf;
      break;
    case 6:
      for (float& x : v) x = 7;
      break;
    case 7:  // zeros of both signs only: the first index wins, the value is a zero
      for (int64_t k = 0; k < n; ++k) v[size_t(k)] = (k + r) % 3 == 0 ? -0.0f : 0.0f;
      break;
    case 8:  // unique extremes at the ends (scalar head / tail of unaligned views)
      v[size_t(n - 1)] = 99, v[0] = -99;
      break;
    case 9:  // two equal unique extremes at scattered positions
      v[at(8)] = 60, v[at(9)] = 60, v[at(10)] = -60, v[at(11)] = -60;
      break;
  }
  return v;
}

struct RowRef {
  double mx, mn;
  int64_t amx, amn;
};

// NaN-propagating extremes and the first index of each (of the first NaN if any).
RowRef reference(const double* v, int64_t n) {
  RowRef r{v[0], v[0], 0, 0};
  for (int64_t k = 0; k < n; ++k)
    if (std::isnan(v[k])) return {v[k], v[k], k, k};
  for (int64_t k = 1; k < n; ++k) {
    if (v[k] > r.mx) r.mx = v[k], r.amx = k;
    if (v[k] < r.mn) r.mn = v[k], r.amn = k;
  }
  return r;
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// rows x n rows embedded at column `off` of a NaN-filled rows x (off + n + 5) tensor.
Tensor embedded(int64_t rows, int64_t n, int64_t off, DType dt, Device dev) {
  const int64_t w = off + n + 5;
  std::vector<float> full(size_t(rows * w), kNaN);
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = make_row(r, n);
    std::copy(row.begin(), row.end(), full.begin() + r * w + off);
  }
  return Tensor::from_vector(full, {rows, w}).to(dt).to(dev).narrow(1, off, n);
}

// The extremes of a 2-D x over dim (1: each row, 0: each column) against the reference on
// the same stored values. Half the calls name the dim from the end (-1 / -2).
void check_dim(const Tensor& x, int64_t dim) {
  const int64_t lines = x.shape()[size_t(1 - dim)], n = x.shape()[size_t(dim)], from_end = dim - 2;
  const Tensor xc = x.to(Device::cpu());
  const auto v = (dim == 1 ? xc : xc.t()).contiguous().to_vector<double>();  // line after line
  const auto mx = max(x, {from_end}).to(Device::cpu()).to_vector<double>();
  const auto mn = min(x, {dim}).to(Device::cpu()).to_vector<double>();
  const auto amx = argmax(x, dim).to(Device::cpu()).to_vector<int64_t>();
  const auto amn = argmin(x, from_end).to(Device::cpu()).to_vector<int64_t>();
  ASSERT_EQ(int64_t(mx.size()), lines);
  int failures = 0;
  for (int64_t r = 0; r < lines && failures < 5; ++r) {
    const RowRef ref = reference(v.data() + r * n, n);
    const bool ok = same_value(mx[size_t(r)], ref.mx) && same_value(mn[size_t(r)], ref.mn) &&
                    amx[size_t(r)] == ref.amx && amn[size_t(r)] == ref.amn;
    if (!ok) ++failures;
    EXPECT_TRUE(ok) << (dim == 1 ? "row " : "column ") << r << " (scenario " << r % kScenarios << "): max "
                    << mx[size_t(r)] << " vs " << ref.mx << ", min " << mn[size_t(r)] << " vs " << ref.mn << ", argmax "
                    << amx[size_t(r)] << " vs " << ref.amx << ", argmin " << amn[size_t(r)] << " vs " << ref.amn;
  }
}

TEST_P(ReduceHalf, LastDimExtremesMatchReference) {
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t n : {32, 33, 100, 1000, 1003, 4096, 4097, 5000, 20011})
      for (int64_t off : {0, 1, 3, 8}) {
        SCOPED_TRACE(::testing::Message() << dt << " n " << n << " offset " << off);
        check_dim(embedded(kScenarios * 2, n, off, dt, dev()), 1);
      }
}

// Block mode with enough rows to fill the GPU (no split) and few very long rows (split
// across blocks: the per-block partials merge in index order).
TEST_P(ReduceHalf, ManyRowsAndSplitRows) {
  for (DType dt : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(dt));
    check_dim(embedded(600, 4100, 1, dt, dev()), 1);
    check_dim(embedded(kScenarios, 100003, 0, dt, dev()), 1);
    check_dim(embedded(kScenarios, 100003, 5, dt, dev()), 1);
  }
}

// Reduced dims that do not collapse (a row of three segments) and the flat argmax.
TEST_P(ReduceHalf, SegmentedRowsAndFlat) {
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t scenario : {0, 2, 4, 5, 8, 9}) {
      SCOPED_TRACE(::testing::Message() << dt << " scenario " << scenario);
      const int64_t n = 1001;
      std::vector<float> full(size_t(3 * (n + 3)), kNaN);
      for (int64_t s = 0; s < 3; ++s) {
        const auto row = make_row(scenario + kScenarios * s, n);
        std::copy(row.begin(), row.end(), full.begin() + s * (n + 3) + 2);
      }
      const Tensor x = Tensor::from_vector(full, {1, 3, n + 3}).to(dt).to(dev()).narrow(2, 2, n);
      const auto v = x.to(Device::cpu()).contiguous().to_vector<double>();
      const RowRef ref = reference(v.data(), 3 * n);
      EXPECT_TRUE(same_value(max(x, {1, 2}).to(Device::cpu()).item<double>(), ref.mx));
      EXPECT_TRUE(same_value(min(x, {1, 2}).to(Device::cpu()).item<double>(), ref.mn));
      EXPECT_EQ(argmax(x).to(Device::cpu()).item<int64_t>(), ref.amx);
      EXPECT_EQ(argmin(x).to(Device::cpu()).item<int64_t>(), ref.amn);
    }
}

// The same rows as columns of an n x cols tensor reduced over dim 0 (the column kernel;
// 8 adjacent columns at a 16-byte boundary take its packed min/max). Columns start at
// element `off` of a NaN-padded row, so off = 3 misaligns the vectors (element path);
// n = 20011 splits the reduction across blocks.
TEST_P(ReduceHalf, FirstDimExtremesMatchReference) {
  for (DType dt : {DType::BF16, DType::F16})
    for (int64_t cols : {8, 40, 13, 1024})
      for (int64_t n : {1, 5, 1003, 20011})
        for (int64_t off : {0, 3, 8}) {
          if (cols == 1024 && n > 1003) continue;  // keeps the test in seconds
          SCOPED_TRACE(::testing::Message() << dt << " " << n << " x " << cols << " from column " << off);
          const int64_t w = off + cols + 5;
          std::vector<float> full(size_t(n * w), kNaN);
          for (int64_t c = 0; c < cols; ++c) {
            const auto column = make_row(c, n);
            for (int64_t r = 0; r < n; ++r) full[size_t(r * w + off + c)] = column[size_t(r)];
          }
          const Tensor x = Tensor::from_vector(full, {n, w}).to(dt).to(dev()).narrow(1, off, cols);
          check_dim(x, 0);
        }
}

// Hand-derived: one row per case, 40 elements (warp mode), bf16 and f16.
TEST_P(ReduceHalf, HandDerivedRows) {
  std::vector<float> v(4 * 40, 1.0f);
  v[0 * 40 + 17] = 5, v[0 * 40 + 33] = 5, v[0 * 40 + 9] = -2;      // ties: first index
  v[1 * 40 + 39] = kNaN, v[1 * 40 + 20] = kInf;                    // NaN in the tail vector
  v[2 * 40 + 8] = kNaN, v[2 * 40 + 31] = kNaN, v[2 * 40 + 0] = 9;  // first of two NaNs
  v[3 * 40 + 38] = -kInf, v[3 * 40 + 5] = -kInf, v[3 * 40 + 6] = kInf;
  for (DType dt : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = Tensor::from_vector(v, {4, 40}).to(dt).to(dev());
    EXPECT_EQ(argmax(x, 1).to(Device::cpu()).to_vector<int64_t>(), (std::vector<int64_t>{17, 39, 8, 6}));
    EXPECT_EQ(argmin(x, 1).to(Device::cpu()).to_vector<int64_t>(), (std::vector<int64_t>{9, 39, 8, 5}));
    const auto mx = max(x, {1}).to(Device::cpu()).to_vector<double>();
    const auto mn = min(x, {1}).to(Device::cpu()).to_vector<double>();
    EXPECT_EQ(mx[0], 5);
    EXPECT_EQ(mn[0], -2);
    EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mn[1]) && std::isnan(mx[2]) && std::isnan(mn[2]));
    EXPECT_EQ(mx[3], kInf);
    EXPECT_EQ(mn[3], -kInf);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(ReduceHalf);

}  // namespace
}  // namespace wick
