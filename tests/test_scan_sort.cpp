// cumsum, cumprod, sort, argsort and topk against goldens (tests/data/gen_scan_sort.py:
// numpy and Python's stable sorted() written to PyTorch's semantics), through contiguous,
// transposed, narrowed and broadcast inputs; long lines against exact hand-derived sums
// and the properties that define a stable sort.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "support/devices.h"
#include "support/golden.h"
#include "support/golden_file.h"

namespace wick {
namespace {

const test::GoldenFile& golden() {
  static const test::GoldenFile g(test::data_path("scan_sort.safetensors"));
  return g;
}

const DType kFloats[] = {DType::F64, DType::F32, DType::F16, DType::BF16};
const DType kInts[] = {DType::U8, DType::U32, DType::I64};
const DType kAll[] = {DType::U8, DType::U32, DType::I64, DType::BF16, DType::F16, DType::F32, DType::F64};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string dname(DType d) { return std::string(dtype_name(d)); }

class ScanSort : public test::DeviceTest {
 protected:
  // Golden `name` converted (exactly) to dtype, on the device under test.
  Tensor g(const std::string& name, DType dtype) const { return golden().get(name).to(dtype).to(dev()); }
  // Golden `name` as stored (f64 or i64, on the CPU): an expected value.
  static Tensor want(const std::string& name) { return golden().get(name); }
  Tensor vec(const std::vector<double>& v, DType dtype) const { return Tensor::from_vector(v).to(dtype).to(dev()); }
};

// Exact comparison of i64 results (through int64, not double).
::testing::AssertionResult same_ints(const Tensor& got, const Tensor& expected) {
  if (got.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape() << " != " << expected.shape();
  if (got.dtype() != DType::I64) return ::testing::AssertionFailure() << "dtype " << got.dtype() << ", expected i64";
  const auto a = got.to_vector<int64_t>(), b = expected.to_vector<int64_t>();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return ::testing::AssertionFailure() << "[" << i << "] got " << a[i] << ", expected " << b[i];
  return ::testing::AssertionSuccess();
}

// x (rank 3) through the layouts every kernel path must read: contiguous, transposed
// (same values, permuted strides) and narrowed out of a bigger tensor (an offset).
std::vector<std::pair<std::string, Tensor>> views_of(const Tensor& x) {
  const Tensor xt = x.permute({2, 0, 1}).contiguous().permute({1, 2, 0});
  Tensor xn = zeros({x.dim(0) + 2, x.dim(1), x.dim(2) + 3}, x.dtype(), x.device()).narrow(0, 1, x.dim(0));
  xn = xn.narrow(2, 2, x.dim(2));
  xn.copy_(x);
  return {{"contiguous", x}, {"transposed", xt}, {"narrowed", xn}};
}

// NaN-aware ascending order: a strictly before b.
bool before(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

// values/indices are a stable sort of x (one line): indices a permutation, values the
// elements at them, consecutive elements in order and ties in increasing index order.
::testing::AssertionResult stable_sorted(const std::vector<double>& x, const Tensor& values, const Tensor& indices,
                                         bool descending) {
  const auto v = values.to_vector<double>();
  const auto idx = indices.to_vector<int64_t>();
  if (v.size() != x.size() || idx.size() != x.size()) return ::testing::AssertionFailure() << "sizes differ";
  std::vector<char> seen(x.size(), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t j = idx[i];
    if (j < 0 || j >= int64_t(x.size()) || seen[size_t(j)])
      return ::testing::AssertionFailure() << "indices are not a permutation: [" << i << "] = " << j;
    seen[size_t(j)] = 1;
    const double e = x[size_t(j)];
    if (!(v[i] == e || (std::isnan(v[i]) && std::isnan(e))))
      return ::testing::AssertionFailure() << "values[" << i << "] = " << v[i] << " but x[" << j << "] = " << e;
    if (i == 0) continue;
    const double a = x[size_t(idx[i - 1])], b = e;
    const bool wrong = descending ? before(a, b) : before(b, a);
    const bool tie = !before(a, b) && !before(b, a);
    if (wrong || (tie && idx[i - 1] > j))
      return ::testing::AssertionFailure() << "out of order at " << i << ": " << a << " (index " << idx[i - 1]
                                           << ") then " << b << " (index " << j << ")";
  }
  return ::testing::AssertionSuccess();
}

// Deterministic pseudo-random integers in [0, m).
std::vector<double> lcg_ints(size_t n, uint64_t m, uint64_t seed) {
  std::vector<double> v(n);
  uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = double((s >> 33) % m);
  }
  return v;
}

// ---- cumsum / cumprod ------------------------------------------------------------------------

TEST_P(ScanSort, CumsumCumprodFloatsEveryDimAndView) {
  for (DType dt : kFloats) {
    for (const auto& [view, x] : views_of(g("scan.x", dt))) {
      const Tensor xp = g("scan.xp", dt).permute({2, 0, 1}).contiguous().permute({1, 2, 0});
      for (int64_t d = 0; d < 3; ++d) {
        SCOPED_TRACE(dname(dt) + " " + view + " dim " + std::to_string(d));
        const Tensor s = cumsum(x, d);
        EXPECT_EQ(s.dtype(), dt);
        EXPECT_TRUE(s.is_contiguous());
        // Every partial sum is exact in each dtype (multiples of 1/8).
        EXPECT_CLOSE(s, want("scan.cumsum." + std::to_string(d)), 0, 0);
        EXPECT_CLOSE(cumsum(x, d - 3), want("scan.cumsum." + std::to_string(d)), 0, 0);
        // Products are exact in f32/f64 and rounded once in f16/bf16.
        const Tensor p = cumprod(view == "contiguous" ? g("scan.xp", dt) : xp, d);
        EXPECT_EQ(p.dtype(), dt);
        EXPECT_CLOSE(p, want("scan.cumprod." + std::to_string(d)), test::default_rtol(dt), 0);
      }
    }
  }
}

TEST_P(ScanSort, IntegerScansReturnI64) {
  for (DType dt : kInts) {
    SCOPED_TRACE(dname(dt));
    for (int64_t d = 0; d < 2; ++d) {
      const std::string sd = std::to_string(d);
      const Tensor xu = g("scan.xu", dt);
      EXPECT_TRUE(same_ints(cumsum(xu, d), want("scan.xu.cumsum." + sd)));  // beyond 255: no u8 wrap
      EXPECT_TRUE(same_ints(cumsum(xu.t().contiguous().t(), d), want("scan.xu.cumsum." + sd)));
      EXPECT_TRUE(same_ints(cumprod(g("scan.xpu", dt), d), want("scan.xpu.cumprod." + sd)));
      if (dt == DType::I64) {
        EXPECT_TRUE(same_ints(cumsum(g("scan.xs", dt), d), want("scan.xs.cumsum." + sd)));
        EXPECT_TRUE(same_ints(cumprod(g("scan.xps", dt), d), want("scan.xps.cumprod." + sd)));
      }
    }
  }
}

TEST_P(ScanSort, I64ScansWrap) {
  EXPECT_TRUE(same_ints(cumsum(g("scan.wrap.x_sum", DType::I64), 0), want("scan.wrap.cumsum")));
  EXPECT_TRUE(same_ints(cumprod(g("scan.wrap.x_prod", DType::I64), 0), want("scan.wrap.cumprod")));
}

// An f32 accumulator rounded once per output stays within half an ulp of the exact running
// sum; a 16-bit accumulator would drift by many ulps over 257 terms.
TEST_P(ScanSort, SixteenBitScansAccumulateInF32) {
  for (auto [dt, tag, half_ulp] : {std::tuple{DType::F16, "h16", 0x1p-11}, std::tuple{DType::BF16, "b16", 0x1p-8}}) {
    SCOPED_TRACE(dname(dt));
    const Tensor x = g(std::string("scan.") + tag + ".x", dt);
    const Tensor expected = want(std::string("scan.") + tag + ".cumsum");
    EXPECT_CLOSE(cumsum(x, 1), expected, half_ulp * 1.01, 1e-5);
    EXPECT_CLOSE(cumsum(x.t().contiguous(), 0).t(), expected, half_ulp * 1.01, 1e-5);  // along a strided dim
  }
}

// Lines longer than a CUDA block and many blocks, and the split and strided paths:
// integer-valued floats in [-3, 3] keep every running sum exact in f32 whatever order a
// device adds in, and +-1 keeps every running product exact.
TEST_P(ScanSort, LongLinesExact) {
  for (size_t n : {size_t(5000), size_t(100003)}) {
    SCOPED_TRACE(n);
    std::vector<double> v = lcg_ints(n, 7, n), sums(n), signs = lcg_ints(n, 2, n + 1), prods(n);
    double s = 0, p = 1;
    for (size_t i = 0; i < n; ++i) {
      v[i] -= 3;
      signs[i] = signs[i] * 2 - 1;
      sums[i] = s += v[i];
      prods[i] = p *= signs[i];
    }
    const Tensor x = vec(v, DType::F32);
    EXPECT_CLOSE(cumsum(x, 0).to_vector<double>(), sums, 0, 0);
    EXPECT_CLOSE(cumprod(vec(signs, DType::F32), 0).to_vector<double>(), prods, 0, 0);
    EXPECT_EQ(cumsum(vec(v, DType::I64), 0).to_vector<double>(), sums);
    EXPECT_CLOSE(cumsum(vec(v, DType::BF16), 0).to_vector<double>(), sums, 0x1p-8, 0);  // rounded once
    // Several lines: rows (4, n) along dim 1, and columns (n, 4) along dim 0.
    const Tensor rows = stack({x, x, x, x});
    const Tensor cols = rows.t().contiguous();
    const Tensor by_row = cumsum(rows, 1), by_col = cumsum(cols, 0);
    for (int64_t r = 0; r < 4; ++r) {
      EXPECT_CLOSE(by_row.select(0, r).to_vector<double>(), sums, 0, 0);
      EXPECT_CLOSE(by_col.select(1, r).to_vector<double>(), sums, 0, 0);
    }
    EXPECT_CLOSE(cumsum(rows.t(), 0).select(1, 2).to_vector<double>(), sums, 0, 0);  // transposed view
  }
}

// ---- every op: broadcast, size-1, size-0, rank-0 ------------------------------------------

TEST_P(ScanSort, BroadcastInputs) {
  const Tensor b = vec({1.5, -2, 3.25}, DType::F32).broadcast_as(Shape{4, 3});  // stride 0 along dim 0
  EXPECT_EQ(cumsum(b, 0).to_vector<double>(),
            (std::vector<double>{1.5, -2, 3.25, 3, -4, 6.5, 4.5, -6, 9.75, 6, -8, 13}));
  EXPECT_EQ(cumsum(b, 1).to_vector<double>(),
            (std::vector<double>{1.5, -.5, 2.75, 1.5, -.5, 2.75, 1.5, -.5, 2.75, 1.5, -.5, 2.75}));
  EXPECT_EQ(cumprod(b, 0).to_vector<double>()[9], 1.5 * 1.5 * 1.5 * 1.5);
  // Equal values along the broadcast dim keep their index order.
  const SortResult s0 = sort(b, 0, true);
  EXPECT_EQ(s0.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  EXPECT_EQ(s0.values.to_vector<double>(), b.to_vector<double>());
  const SortResult s1 = sort(b, 1, true);
  EXPECT_EQ(s1.indices.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1}));
  const Tensor c = vec({4, 1}, DType::I64).reshape({2, 1}).broadcast_as(Shape{2, 5});  // stride 0 along dim 1
  EXPECT_EQ(argsort(c, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(argsort(c, 1, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(topk(c, 2, 1).indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(topk(c, 1, 0).indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(cumsum(c, 1).to_vector<int64_t>(), (std::vector<int64_t>{4, 8, 12, 16, 20, 1, 2, 3, 4, 5}));
}

TEST_P(ScanSort, SizeOneAndEmptyDims) {
  const Tensor x = g("scan.x", DType::F32).narrow(1, 2, 1);  // (5, 1, 7), offset
  EXPECT_CLOSE(cumsum(x, 1), x.to(Device::cpu()), 0, 0);
  EXPECT_CLOSE(cumprod(x, 1), x.to(Device::cpu()), 0, 0);
  EXPECT_EQ(sort(x, 1).indices.to_vector<int64_t>(), std::vector<int64_t>(35, 0));
  EXPECT_CLOSE(sort(x, 1, true).values, x.to(Device::cpu()), 0, 0);
  EXPECT_CLOSE(topk(x, 1, 1).values, x.to(Device::cpu()), 0, 0);
  for (DType dt : {DType::F32, DType::U8}) {
    SCOPED_TRACE(dname(dt));
    const Tensor e = zeros({3, 0, 4}, dt, dev());
    for (int64_t d = 0; d < 3; ++d) {
      EXPECT_EQ(cumsum(e, d).shape(), e.shape());
      EXPECT_EQ(cumprod(e, d).dtype(), dt == DType::U8 ? DType::I64 : dt);
      const SortResult s = sort(e, d);
      EXPECT_EQ(s.values.shape(), e.shape());
      EXPECT_EQ(s.indices.dtype(), DType::I64);
      EXPECT_EQ(argsort(e, d, true).shape(), e.shape());
    }
    EXPECT_EQ(topk(e, 0, 1).values.shape(), (Shape{3, 0, 4}));
    EXPECT_EQ(topk(e, 2, 0).indices.shape(), (Shape{2, 0, 4}));
    EXPECT_EQ(topk(e, 4, 2, false).values.shape(), (Shape{3, 0, 4}));
  }
}

// A rank-0 input runs along "dim 0 or -1" as PyTorch; the results have rank 0.
TEST_P(ScanSort, RankZero) {
  const Tensor s = full({}, 2.5, DType::F32, dev());
  for (int64_t d : {0, -1}) {
    EXPECT_EQ(cumsum(s, d).rank(), 0u);
    EXPECT_EQ(cumsum(s, d).item<double>(), 2.5);
    EXPECT_EQ(cumprod(s, d).item<double>(), 2.5);
    EXPECT_EQ(sort(s, d).values.item<double>(), 2.5);
    EXPECT_EQ(sort(s, d, true).indices.item<int64_t>(), 0);
    EXPECT_EQ(argsort(s, d).rank(), 0u);
  }
  const Tensor i = full({}, 7, DType::U8, dev());
  EXPECT_EQ(cumsum(i, 0).dtype(), DType::I64);
  EXPECT_EQ(cumsum(i, 0).item<int64_t>(), 7);
  for (int64_t k : {0, 1}) {  // PyTorch: the input and index 0 for both
    const SortResult t = topk(s, k);
    EXPECT_EQ(t.values.rank(), 0u);
    EXPECT_EQ(t.values.item<double>(), 2.5);
    EXPECT_EQ(t.indices.item<int64_t>(), 0);
  }
  EXPECT_WICK_ERROR(cumsum(s, 1), IndexOutOfRange, "cumsum: dim 1");
  EXPECT_WICK_ERROR(topk(s, 2), InvalidArgument, "topk: k = 2");
}

// ---- sort / argsort / topk against the goldens -----------------------------------------------

// Both goldens ("xi": small integers with many ties, every dtype; "xf": NaN, infinities,
// both zeros and repeats, the floats) along every dim, both orders, every view.
TEST_P(ScanSort, SortAndArgsortGoldens) {
  for (DType dt : kAll) {
    for (const std::string set : {"xi", "xf"}) {
      if (set == "xf" && !is_float(dt)) continue;
      for (const auto& [view, x] : views_of(g("sort." + set, dt))) {
        for (int64_t d = 0; d < 3; ++d) {
          for (bool desc : {false, true}) {
            const std::string key = "sort." + set + (desc ? ".desc." : ".asc.") + std::to_string(d);
            SCOPED_TRACE(dname(dt) + " " + key + " " + view);
            const SortResult r = sort(x, d, desc);
            EXPECT_EQ(r.values.dtype(), dt);
            EXPECT_CLOSE(r.values, want(key + ".values"), 0, 0);
            EXPECT_TRUE(same_ints(r.indices, want(key + ".indices")));
            EXPECT_TRUE(same_ints(argsort(x, d - 3, desc), want(key + ".indices")));
            // The values are the input's own elements: each zero keeps its sign.
            const auto got = r.values.to_vector<double>(), exp = want(key + ".values").to_vector<double>();
            for (size_t i = 0; i < exp.size(); ++i)
              EXPECT_TRUE(exp[i] != 0 || std::signbit(got[i]) == std::signbit(exp[i])) << "zero at " << i;
          }
        }
      }
    }
  }
}

// topk is the first k of the stable order (largest: the descending one): NaN counts as the
// largest, ties go to the smaller index.
TEST_P(ScanSort, TopkGoldens) {
  for (DType dt : kAll) {
    for (const std::string set : {"xi", "xf"}) {
      if (set == "xf" && !is_float(dt)) continue;
      for (const auto& [view, x] : views_of(g("sort." + set, dt))) {
        for (int64_t d = 0; d < 3; ++d) {
          const int64_t n = x.dim(d);
          for (int64_t k : std::set<int64_t>{0, 1, 3, n / 2 - 1, n / 2, n - 1, n}) {
            for (bool largest : {true, false}) {
              const std::string key = "sort." + set + (largest ? ".desc." : ".asc.") + std::to_string(d);
              SCOPED_TRACE(dname(dt) + " " + key + " " + view + " k " + std::to_string(k));
              const SortResult r = topk(x, k, d, largest);
              EXPECT_CLOSE(r.values, want(key + ".values").narrow(d, 0, k), 0, 0);
              EXPECT_TRUE(same_ints(r.indices, want(key + ".indices").narrow(d, 0, k).contiguous()));
            }
          }
        }
      }
    }
  }
}

TEST_P(ScanSort, IntegerExtremes) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const Tensor a = Tensor::from_vector<int64_t>({5, -3, hi, lo, 0, -3}).to(dev());
  EXPECT_EQ(argsort(a).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 5, 4, 0, 2}));
  EXPECT_EQ(argsort(a, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 4, 1, 5, 3}));
  EXPECT_EQ(topk(a, 2, 0, false).values.to_vector<int64_t>(), (std::vector<int64_t>{lo, -3}));
  const Tensor u = Tensor::from_vector<uint32_t>({4000000000u, 1, 3000000000u}).to(dev());
  EXPECT_EQ(argsort(u).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(topk(u, 1).values.to_vector<int64_t>(), (std::vector<int64_t>{4000000000}));
  const Tensor b = Tensor::from_vector<uint8_t>({255, 0, 128, 255}).to(dev());
  EXPECT_EQ(argsort(b, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 2, 1}));
}

// Long lines (beyond a CUDA block, the single-row radix sort, the chunked top-k select):
// the result must have the properties that define a stable sort, and topk must be its
// first k.
TEST_P(ScanSort, LongLinesSortAndTopk) {
  for (size_t n : {size_t(5000), size_t(100000)}) {
    for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::U8}) {
      SCOPED_TRACE(std::to_string(n) + " " + dname(dt));
      std::vector<double> v = lcg_ints(n, dt == DType::U8 ? 256 : 1000, n);  // many ties
      if (is_float(dt))
        for (size_t i = 7; i < n; i += 997) v[i] = kNaN;
      const Tensor x = vec(v, dt);
      const std::vector<double> xv = x.to_vector<double>();  // as rounded to dt
      for (bool desc : {false, true}) {
        const SortResult r = sort(x, 0, desc);
        ASSERT_TRUE(stable_sorted(xv, r.values, r.indices, desc)) << (desc ? "descending" : "ascending");
        for (int64_t k : {int64_t(1), int64_t(50), int64_t(100), int64_t(1000), int64_t(n / 2), int64_t(n)}) {
          const SortResult t = topk(x, k, 0, desc);
          EXPECT_CLOSE(t.values, r.values.narrow(0, 0, k).to(Device::cpu()), 0, 0) << "k " << k;
          EXPECT_TRUE(same_ints(t.indices, r.indices.narrow(0, 0, k).contiguous())) << "k " << k;
        }
      }
      // Several lines: rows (3, n) along dim 1 and, transposed (a strided view), along dim 0.
      const std::vector<double> w = lcg_ints(n, 3, n + 1);  // a line of few distinct values
      const Tensor rows = stack({x, vec(w, dt), x});
      const std::vector<std::vector<double>> lines = {xv, rows.select(0, 1).to_vector<double>(), xv};
      for (bool desc : {false, true}) {
        const SortResult by_row = sort(rows, 1, desc), by_col = sort(rows.t(), 0, desc);
        const SortResult top = topk(rows, 50, 1, desc);
        for (int64_t i = 0; i < 3; ++i) {
          EXPECT_TRUE(stable_sorted(lines[size_t(i)], by_row.values.select(0, i), by_row.indices.select(0, i), desc));
          EXPECT_TRUE(stable_sorted(lines[size_t(i)], by_col.values.select(1, i), by_col.indices.select(1, i), desc));
          EXPECT_TRUE(same_ints(top.indices.select(0, i).contiguous(),
                                by_row.indices.select(0, i).narrow(0, 0, 50).contiguous()));
        }
      }
    }
  }
}

TEST_P(ScanSort, Errors) {
  const Tensor undef;
  EXPECT_WICK_ERROR(cumsum(undef, 0), InvalidArgument, "cumsum: ");
  EXPECT_WICK_ERROR(cumprod(undef, 0), InvalidArgument, "cumprod: ");
  EXPECT_WICK_ERROR(sort(undef), InvalidArgument, "sort: ");
  EXPECT_WICK_ERROR(argsort(undef), InvalidArgument, "argsort: ");
  EXPECT_WICK_ERROR(topk(undef, 1), InvalidArgument, "topk: ");
  const Tensor x = zeros({2, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(cumsum(x, 2), IndexOutOfRange, "cumsum: dim 2");
  EXPECT_WICK_ERROR(cumprod(x, -3), IndexOutOfRange, "cumprod: dim -3");
  EXPECT_WICK_ERROR(sort(x, -3), IndexOutOfRange, "sort: dim -3");
  EXPECT_WICK_ERROR(argsort(x, 5), IndexOutOfRange, "argsort: dim 5");
  EXPECT_WICK_ERROR(topk(x, 1, 2), IndexOutOfRange, "topk: dim 2");
  EXPECT_WICK_ERROR(topk(x, -1), InvalidArgument, "topk: k = -1");
  EXPECT_WICK_ERROR(topk(x, 4), InvalidArgument, "topk: k = 4");
  EXPECT_WICK_ERROR(topk(x, 3, 0), InvalidArgument, "topk: k = 3");
}

WICK_INSTANTIATE_DEVICE_TEST(ScanSort);

}  // namespace
}  // namespace wick
