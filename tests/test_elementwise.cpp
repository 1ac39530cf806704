// Unary, binary, compare and where: values against PyTorch/numpy goldens
// (tests/data/gen_elementwise.py), every layout path against the contiguous one, the
// integer rules of docs/ops.md, promotion, broadcasting and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "support/devices.h"
#include "support/golden.h"
#include "support/golden_file.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Fn1 = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

const test::GoldenFile& golden() {
  static const test::GoldenFile g(test::data_path("elementwise.safetensors"));
  return g;
}

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
const DType kInts[] = {DType::U8, DType::U32, DType::I64};
const DType kAll[] = {DType::U8, DType::U32, DType::I64, DType::BF16, DType::F16, DType::F32, DType::F64};

std::string dname(DType d) { return std::string(dtype_name(d)); }

double rtol(DType d) { return test::default_rtol(d); }
double atol(DType d) { return d == DType::F64 ? 1e-12 : (d == DType::F32 ? 1e-6 : 1e-4); }

// Golden tensor `name`, converted to dtype (exactly: stored in a wider holder), on dev.
Tensor G(const std::string& name, DType dtype, Device dev) { return golden().get(name).to(dtype).to(dev); }

// Exact comparison of integer (or u8 boolean) results.
::testing::AssertionResult same_ints(const Tensor& got, const Tensor& expected) {
  if (got.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape() << " != " << expected.shape();
  if (got.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << got.dtype() << " != " << expected.dtype();
  const auto g = got.to_vector<int64_t>(), e = expected.to_vector<int64_t>();
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != e[i]) return ::testing::AssertionFailure() << "[" << i << "] got " << g[i] << ", expected " << e[i];
  return ::testing::AssertionSuccess();
}

// A tensor of exactly n elements repeating base (so int goldens feed the 1007 views).
Tensor tile_to(const Tensor& base, int64_t n) {
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < n; k += base.numel()) parts.push_back(base);
  return cat(parts).narrow(0, 0, n);
}

// Views of a 1-D tensor of 1007 elements exercising every kernel path.
std::vector<std::pair<std::string, Tensor>> views_of(const Tensor& x) {
  const Tensor m = x.narrow(0, 0, 1000).reshape({40, 25});
  return {
      {"odd_length_1007", x},
      {"transposed", m.t()},
      {"row_broadcast", x.narrow(0, 0, 25).reshape({1, 25}).broadcast_as(Shape{40, 25})},
      {"column_broadcast", x.narrow(0, 0, 40).reshape({40, 1}).broadcast_as(Shape{40, 25})},
      {"scalar_broadcast", x.select(0, 7).broadcast_as(Shape{6, 5})},
      {"offset_narrow", m.narrow(1, 3, 19).narrow(0, 1, 37)},
      {"step_slice", x.slice(0, 1, 1007, 3)},
      {"empty", x.narrow(0, 5, 0)},
      {"empty_2d", x.narrow(0, 0, 0).reshape({0, 3})},
      {"rank0", x.select(0, 3)},
      {"size1", x.narrow(0, 9, 1).reshape({1, 1, 1})},
  };
}

// ---- unary ------------------------------------------------------------------------------------

struct UnaryCase {
  const char* name;
  Fn1 fn;
};
const std::vector<UnaryCase>& float_unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sqr", [](const Tensor& x) { return sqr(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"recip", [](const Tensor& x) { return recip(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_erf", [](const Tensor& x) { return gelu_erf(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }},
      {"round", [](const Tensor& x) { return round(x); }},
      {"affine", [](const Tensor& x) { return affine(x, 1.5, -0.25); }},
      {"powf", [](const Tensor& x) { return powf(x, 2.5); }},
      {"powf3", [](const Tensor& x) { return powf(x, 3.0); }},
      {"elu", [](const Tensor& x) { return elu(x, 0.7); }},
      {"clamp", [](const Tensor& x) { return clamp(x, Scalar(-1.25), Scalar(2.0)); }},
      {"clamp_lo", [](const Tensor& x) { return clamp(x, Scalar(0.5), std::nullopt); }},
      {"clamp_hi", [](const Tensor& x) { return clamp(x, std::nullopt, Scalar(-0.5)); }},
  };
  return cases;
}

const std::vector<UnaryCase>& int_unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sqr", [](const Tensor& x) { return sqr(x); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"affine", [](const Tensor& x) { return affine(x, 0.5, 3.0); }},
  };
  return cases;
}

class Unary : public test::DeviceTest {};

TEST_P(Unary, FloatOpsMatchTorch) {
  for (DType d : kFloats) {
    const Tensor x = G("unary/x/" + dname(d), d, dev());
    for (const auto& c : float_unary_cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + dname(d));
      const Tensor y = c.fn(x);
      EXPECT_EQ(y.dtype(), d);
      EXPECT_CLOSE(y, golden().get(std::string("unary/") + c.name + "/" + dname(d)), rtol(d), atol(d));
    }
  }
}

TEST_P(Unary, IntegerOpsMatchNumpy) {
  for (DType d : kInts) {
    const Tensor x = G("unary_int/x/" + dname(d), d, dev());
    for (const auto& c : int_unary_cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + dname(d));
      EXPECT_TRUE(same_ints(c.fn(x), golden().get(std::string("unary_int/") + c.name + "/" + dname(d)).to(d)));
    }
    // The numpy reference clamps with these per-dtype bounds (see the generator).
    const Scalar lo = d == DType::U8 ? Scalar(10) : (d == DType::U32 ? Scalar(1000) : Scalar(-5));
    const Scalar hi = d == DType::U8 ? Scalar(200) : (d == DType::U32 ? Scalar(3000000000LL) : Scalar(1LL << 41));
    EXPECT_TRUE(same_ints(clamp(x, lo, hi), golden().get("unary_int/clamp/" + dname(d))));
    EXPECT_TRUE(same_ints(ceil(x), x.to(Device::cpu())));
    EXPECT_TRUE(same_ints(round(x), x.to(Device::cpu())));
  }
}

TEST_P(Unary, EveryLayoutMatchesContiguous) {
  for (DType d : kAll) {
    const Tensor base =
        is_float(d) ? G("unary/x/" + dname(d), d, dev()) : tile_to(G("unary_int/x/" + dname(d), d, dev()), 1007);
    const auto& cases = is_float(d) ? float_unary_cases() : int_unary_cases();
    for (const auto& [view_name, v] : views_of(base)) {
      for (const auto& c : cases) {
        SCOPED_TRACE(std::string(c.name) + " " + dname(d) + " " + view_name);
        const Tensor got = c.fn(v);
        EXPECT_EQ(got.shape(), v.shape());
        EXPECT_TRUE(test::all_close(got.to_vector<double>(), c.fn(v.contiguous()).to_vector<double>(), 0, 0));
      }
    }
  }
}

TEST_P(Unary, FloatEdgeCasesAsTorch) {
  const float nan = NAN, inf = INFINITY;
  const Tensor x = Tensor::from_vector<float>({nan, -0.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -inf}, Shape{8}, dev());
  EXPECT_CLOSE(relu(x).to_vector<double>(), (std::vector<double>{nan, 0, 2.5, 0, 0.5, 0, 1.5, 0}), 0, 0);
  EXPECT_TRUE(std::signbit(relu(x).to_vector<float>()[1]));  // relu(-0) = -0 as torch
  EXPECT_CLOSE(sign(x).to_vector<double>(), (std::vector<double>{0, 0, 1, -1, 1, -1, 1, -1}), 0, 0);
  EXPECT_FALSE(std::signbit(sign(x).to_vector<float>()[1]));  // torch.sign(-0.) == +0
  EXPECT_CLOSE(round(x).to_vector<double>(), (std::vector<double>{nan, 0, 2, -2, 0, 0, 2, -inf}), 0, 0);
  EXPECT_CLOSE(clamp(x, Scalar(-1), Scalar(1)).to_vector<double>(),
               (std::vector<double>{nan, 0, 1, -1, 0.5, -0.5, 1, -1}), 0, 0);
  // lo > hi gives hi everywhere, as torch.clamp.
  EXPECT_CLOSE(clamp(x.narrow(0, 1, 7), Scalar(3), Scalar(1)).to_vector<double>(), std::vector<double>(7, 1.0), 0, 0);
  EXPECT_CLOSE(silu(Tensor::from_vector<float>({-1000.f, 1000.f}, Shape{2}, dev())).to_vector<double>(),
               (std::vector<double>{0, 1000}), 0, 0);
}

// The CPU's f32 exp and tanh are polynomials (so loops vectorize): check them densely
// against the f64 functions over the whole range, subnormal and overflowing ends included.
TEST_P(Unary, F32ExpAndTanhAccurateEverywhere) {
  const Tensor x = linspace(-104.0, 89.0, 200003, DType::F32, dev());
  const Tensor x64 = x.to(DType::F64);
  EXPECT_CLOSE(exp(x).to_vector<double>(), exp(x64).to(DType::F32).to_vector<double>(), 3e-7,
               3e-45);  // 1 ulp in subnormals
  const Tensor t = linspace(-12.0, 12.0, 200003, DType::F32, dev());
  EXPECT_CLOSE(tanh(t).to_vector<double>(), tanh(t.to(DType::F64)).to(DType::F32).to_vector<double>(), 3e-7, 1e-30);
  const Tensor tiny = linspace(-1e-3, 1e-3, 2001, DType::F32, dev());
  EXPECT_CLOSE(tanh(tiny).to_vector<double>(), tanh(tiny.to(DType::F64)).to_vector<double>(), 2e-7, 0);
}

// The CPU's f32 erf is a polynomial too (math.h erff_poly): within 2 ulp of the f64 function
// everywhere (1.5 ulp measured over every float in [0, 5)), tiny and subnormal arguments, the
// branch point 0.921875 and the clamp at 4 included; odd, with erf(+-inf) = +-1 and NaN kept.
TEST_P(Unary, F32ErfAccurateEverywhere) {
  for (const auto& [lo, hi] : {std::pair{-6.0, 6.0}, {0.9, 0.95}, {3.9, 4.1}, {-1e-3, 1e-3}, {-1e-37, 1e-37}}) {
    SCOPED_TRACE(std::to_string(lo) + " .. " + std::to_string(hi));
    const Tensor x = linspace(lo, hi, 200001, DType::F32, dev());
    EXPECT_CLOSE(erf(x).to_vector<double>(), erf(x.to(DType::F64)).to(DType::F32).to_vector<double>(), 2.4e-7, 3e-45);
  }
  const float inf = INFINITY;
  const std::vector<float> edge{-inf, inf, NAN, -0.0f, 0.921875f, -0.921875f, 4.0f, 1e30f};
  const std::vector<float> got = erf(Tensor::from_vector(edge, Shape{8}, dev())).to_vector<float>();
  EXPECT_EQ(got[0], -1.0f);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_TRUE(got[3] == 0.0f && std::signbit(got[3]));
  EXPECT_EQ(got[4], -got[5]);
  EXPECT_NEAR(got[4], std::erf(0.921875), 1.2e-7);
  EXPECT_EQ(got[6], 1.0f);
  EXPECT_EQ(got[7], 1.0f);
  // gelu_erf on the same polynomial: the f64 formula's value within f32 rounding of its
  // terms (1 + erf cancels for negative x, as in PyTorch's formula).
  const Tensor g = linspace(-8.0, 8.0, 100001, DType::F32, dev());
  const Tensor g64 = g.to(DType::F64);
  EXPECT_CLOSE(gelu_erf(g).to_vector<double>(), (g64 * 0.5 * (erf(g64 * 0.7071067811865476) + 1.0)).to_vector<double>(),
               1e-6, 5e-7);
}

TEST_P(Unary, IntegerRules) {
  const Tensor u = Tensor::from_vector<uint8_t>({0, 1, 255}, Shape{3}, dev());
  EXPECT_EQ(neg(u).to_vector<int64_t>(), (std::vector<int64_t>{0, 255, 1}));  // wraps like C++
  EXPECT_EQ(abs(u).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 255}));
  EXPECT_EQ(sqr(u).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));  // 255^2 mod 256
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const Tensor i = Tensor::from_vector<int64_t>({lo, -3, 3}, Shape{3}, dev());
  EXPECT_EQ(abs(i).to_vector<int64_t>(), (std::vector<int64_t>{lo, 3, 3}));
  EXPECT_EQ(neg(i).to_vector<int64_t>(), (std::vector<int64_t>{lo, 3, -3}));
  // Clamp bounds outside an unsigned range saturate; fractional bounds round inward.
  EXPECT_EQ(clamp(u, Scalar(-5), Scalar(1000)).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 255}));
  EXPECT_EQ(clamp(i, Scalar(-2.5), Scalar(2.5)).to_vector<int64_t>(), (std::vector<int64_t>{-2, -2, 2}));
  // affine on integers: f64 arithmetic, truncation toward zero, saturation.
  EXPECT_EQ(affine(u, 0.5, 0.0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 127}));
  EXPECT_EQ(affine(u, 2.0, -10.0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 255}));
}

TEST_P(Unary, FloatOnlyOpsRejectIntegers) {
  const Tensor x = Tensor::from_vector<int64_t>({1, 2}, Shape{2}, dev());
  EXPECT_WICK_ERROR(sqrt(x), DTypeMismatch, "sqrt: expected a floating-point tensor, got i64");
  EXPECT_WICK_ERROR(exp(x.to(DType::U8)), DTypeMismatch, "exp");
  EXPECT_WICK_ERROR(log(x), DTypeMismatch, "log");
  EXPECT_WICK_ERROR(sin(x), DTypeMismatch, "sin");
  EXPECT_WICK_ERROR(gelu(x.to(DType::U32)), DTypeMismatch, "gelu");
  EXPECT_WICK_ERROR(recip(x), DTypeMismatch, "recip");
  EXPECT_WICK_ERROR(powf(x, 2.0), DTypeMismatch, "powf");
  EXPECT_WICK_ERROR(elu(x), DTypeMismatch, "elu");
  EXPECT_WICK_ERROR(sigmoid(x), DTypeMismatch, "sigmoid");
  EXPECT_WICK_ERROR(neg(Tensor()), InvalidArgument, "neg: input is an undefined tensor");
}

WICK_INSTANTIATE_DEVICE_TEST(Unary);

// ---- binary and compare ---------------------------------------------------------------------------

struct BinaryCase {
  const char* name;
  Fn2 fn;
  bool compare;
};
const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, false},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, false},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, true},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, true},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, true},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, true},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, true},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, true},
  };
  return cases;
}

class Binary : public test::DeviceTest {};

TEST_P(Binary, MatchesGoldens) {
  for (DType d : kAll) {
    const std::string fam = is_float(d) ? "binary/" : "binary_int/";
    const Tensor a = G(fam + "a/" + dname(d), d, dev()), b = G(fam + "b/" + dname(d), d, dev());
    for (const auto& c : binary_cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + dname(d));
      const Tensor got = c.fn(a, b);
      const Tensor expected = golden().get(fam + c.name + "/" + dname(d));
      EXPECT_EQ(got.dtype(), c.compare ? DType::U8 : d);
      if (c.compare || !is_float(d))
        EXPECT_TRUE(same_ints(got, expected.to(got.dtype())));
      else
        EXPECT_CLOSE(got, expected, rtol(d), atol(d));
    }
  }
}

TEST_P(Binary, EveryLayoutMatchesContiguous) {
  for (DType d : kAll) {
    const std::string fam = is_float(d) ? "binary/" : "binary_int/";
    const Tensor a = tile_to(G(fam + "a/" + dname(d), d, dev()), 1007);
    const Tensor b = tile_to(G(fam + "b/" + dname(d), d, dev()), 1007);
    const Tensor ma = a.narrow(0, 0, 1000).reshape({40, 25}), mb = b.narrow(0, 0, 1000).reshape({40, 25});
    const std::vector<std::tuple<std::string, Tensor, Tensor>> pairs = {
        {"odd_length_1007", a, b},
        {"both_transposed", ma.t(), mb.t()},
        {"one_transposed", ma.t(), mb.reshape({25, 40})},
        {"row_broadcast", ma, b.narrow(0, 0, 25)},
        {"row_broadcast_first", a.narrow(0, 0, 25), mb},
        {"column_broadcast", ma, b.narrow(0, 0, 40).reshape({40, 1})},
        {"scalar_second", ma, b.select(0, 2)},
        {"scalar_first", a.select(0, 2), mb},
        {"outer", a.narrow(0, 0, 40).reshape({40, 1}), b.narrow(0, 0, 25).reshape({1, 25})},
        {"offset_narrow", ma.narrow(1, 3, 19).narrow(0, 1, 37), mb.narrow(1, 2, 19).narrow(0, 2, 37)},
        {"step_slice", a.slice(0, 1, 1007, 3), b.slice(0, 0, 1006, 3)},
        {"empty", a.narrow(0, 0, 0).reshape({0, 3}), b.narrow(0, 0, 3)},
        {"rank0", a.select(0, 1), b.select(0, 4)},
        {"size1", a.narrow(0, 9, 1).reshape({1, 1, 1}), b.narrow(0, 4, 1)},
    };
    for (const auto& [pair_name, x, y] : pairs) {
      const Shape shape = broadcast_shapes(x.shape(), y.shape(), "test");
      const Tensor xc = x.broadcast_as(shape).contiguous(), yc = y.broadcast_as(shape).contiguous();
      for (const auto& c : binary_cases()) {
        SCOPED_TRACE(std::string(c.name) + " " + dname(d) + " " + pair_name);
        const Tensor got = c.fn(x, y);
        EXPECT_EQ(got.shape(), shape);
        EXPECT_TRUE(test::all_close(got.to_vector<double>(), c.fn(xc, yc).to_vector<double>(), 0, 0));
      }
    }
  }
}

TEST_P(Binary, IntegerRules) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const Tensor a = Tensor::from_vector<int64_t>({7, -7, 7, -7, 5, lo, hi}, Shape{7}, dev());
  const Tensor b = Tensor::from_vector<int64_t>({2, 2, -2, -2, 0, -1, 1}, Shape{7}, dev());
  // Truncation toward zero like C++ (torch.div would return floats); x / 0 = 0.
  EXPECT_EQ(div(a, b).to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3, 0, lo, hi}));
  EXPECT_EQ(add(a, b).to_vector<int64_t>()[6], lo);  // overflow wraps
  const Tensor u = Tensor::from_vector<uint8_t>({200, 3, 2, 0}, Shape{4}, dev());
  const Tensor v = Tensor::from_vector<uint8_t>({100, 5, 8, 0}, Shape{4}, dev());
  EXPECT_EQ(add(u, v).to_vector<int64_t>(), (std::vector<int64_t>{44, 8, 10, 0}));
  EXPECT_EQ(sub(u, v).to_vector<int64_t>(), (std::vector<int64_t>{100, 254, 250, 0}));
  EXPECT_EQ(pow(u, v).to_vector<int64_t>(), (std::vector<int64_t>{0, 243, 0, 1}));  // 2^8 = 256 wraps; 0^0 = 1
  const Tensor base = Tensor::from_vector<int64_t>({2, 3, 1, -1, -1, 0, -2}, Shape{7}, dev());
  const Tensor e = Tensor::from_vector<int64_t>({10, -1, -5, -3, -4, -1, 3}, Shape{7}, dev());
  EXPECT_EQ(pow(base, e).to_vector<int64_t>(), (std::vector<int64_t>{1024, 0, 1, -1, 1, 0, -8}));
}

TEST_P(Binary, FloatNaNPropagates) {
  const double nan = std::nan("");
  const float fnan = float(nan);
  const Tensor a = Tensor::from_vector<float>({fnan, 1.f, fnan, 2.f}, Shape{4}, dev());
  const Tensor b = Tensor::from_vector<float>({1.f, fnan, fnan, 3.f}, Shape{4}, dev());
  EXPECT_CLOSE(minimum(a, b).to_vector<double>(), (std::vector<double>{nan, nan, nan, 2}), 0, 0);
  EXPECT_CLOSE(maximum(a, b).to_vector<double>(), (std::vector<double>{nan, nan, nan, 3}), 0, 0);
  EXPECT_EQ(eq(a, b).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(ne(a, b).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(le(a, b).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1}));
}

TEST_P(Binary, PromotesDtypes) {
  const Tensor u = Tensor::from_vector<uint8_t>({250, 3}, Shape{2}, dev());
  const Tensor f = Tensor::from_vector<float>({0.5f, -1.f}, Shape{2}, dev());
  const Tensor i = Tensor::from_vector<int64_t>({10, -10}, Shape{2}, dev());
  Tensor r = add(u, f);
  EXPECT_EQ(r.dtype(), DType::F32);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{250.5, 2}));
  r = add(u, i);
  EXPECT_EQ(r.dtype(), DType::I64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{260, -7}));  // no u8 wrap after promotion
  r = mul(f.to(DType::F16), f.to(DType::BF16));
  EXPECT_EQ(r.dtype(), DType::F32);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{0.25, 1}));
  EXPECT_EQ(pow(u.to(DType::U32), i.narrow(0, 0, 1)).dtype(), DType::I64);
  // Comparisons promote too: u8 250 vs i64 10 compares values, not wrapped bytes.
  EXPECT_EQ(gt(u, i).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(eq(u.to(DType::F64), Tensor::from_vector<int64_t>({250, 4}, Shape{2}, dev())).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0}));
}

TEST_P(Binary, Operators) {
  const Tensor x = Tensor::from_vector<float>({1.f, 2.f, 4.f}, Shape{3}, dev());
  const Tensor y = Tensor::from_vector<float>({10.f, 20.f}, Shape{2, 1}, dev());
  EXPECT_EQ((x + y).shape(), (Shape{2, 3}));
  EXPECT_EQ((x + y).to_vector<double>(), (std::vector<double>{11, 12, 14, 21, 22, 24}));
  EXPECT_EQ((y - x).to_vector<double>(), (std::vector<double>{9, 8, 6, 19, 18, 16}));
  EXPECT_EQ((x * x).to_vector<double>(), (std::vector<double>{1, 4, 16}));
  EXPECT_EQ((x / y).to_vector<double>(), (std::vector<double>{0.1f, 0.2f, 0.4f, 0.05f, 0.1f, 0.2f}));
  EXPECT_EQ((-x).to_vector<double>(), (std::vector<double>{-1, -2, -4}));
  EXPECT_EQ((x + 1.5).to_vector<double>(), (std::vector<double>{2.5, 3.5, 5.5}));
  EXPECT_EQ((x - 1).to_vector<double>(), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ((x * 3).to_vector<double>(), (std::vector<double>{3, 6, 12}));
  EXPECT_EQ((x / 2).to_vector<double>(), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ((1 + x).to_vector<double>(), (std::vector<double>{2, 3, 5}));
  EXPECT_EQ((10 - x).to_vector<double>(), (std::vector<double>{9, 8, 6}));
  EXPECT_EQ((2 * x).to_vector<double>(), (std::vector<double>{2, 4, 8}));
  EXPECT_EQ((8 / x).to_vector<double>(), (std::vector<double>{8, 4, 2}));
  // The scalar takes the tensor's dtype: f16 stays f16, i64 * 2.5 multiplies by 2.
  EXPECT_EQ((x.to(DType::F16) + 1.5).dtype(), DType::F16);
  const Tensor i = Tensor::from_vector<int64_t>({3, -3}, Shape{2}, dev());
  EXPECT_EQ((i * 2.5).dtype(), DType::I64);
  EXPECT_EQ((i * 2.5).to_vector<int64_t>(), (std::vector<int64_t>{6, -6}));
  EXPECT_EQ((i / 2).to_vector<int64_t>(), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ((x + 1).shape(), x.shape());
}

TEST_P(Binary, Errors) {
  const Tensor a = zeros(Shape{2, 3}, DType::F32, dev()), b = zeros(Shape{4}, DType::F32, dev());
  EXPECT_WICK_ERROR(add(a, b), ShapeMismatch, "add: shapes [2, 3] and [4] cannot be broadcast together");
  EXPECT_WICK_ERROR(lt(a, b), ShapeMismatch, "lt: shapes [2, 3] and [4]");
  EXPECT_WICK_ERROR(a * b, ShapeMismatch, "mul: shapes [2, 3] and [4]");
  EXPECT_WICK_ERROR(add(a, Tensor()), InvalidArgument, "add: input is an undefined tensor");
}

TEST_P(Binary, DeviceMismatch) {
  if (!dev().is_cuda()) GTEST_SKIP() << "needs a second device";
  const Tensor a = zeros(Shape{2}, DType::F32, dev()), b = zeros(Shape{2});
  EXPECT_WICK_ERROR(add(a, b), DeviceMismatch, "add: expected all tensors on one device, got cuda:0 and cpu");
  EXPECT_WICK_ERROR(eq(b, a), DeviceMismatch, "eq");
  EXPECT_WICK_ERROR(where(b.to(DType::U8), a, a), DeviceMismatch, "where");
}

WICK_INSTANTIATE_DEVICE_TEST(Binary);

// ---- where ------------------------------------------------------------------------------------------

class Where : public test::DeviceTest {};

TEST_P(Where, BroadcastsAllThreeAndPromotes) {
  for (DType cd : kInts) {
    SCOPED_TRACE(dname(cd));
    const Tensor cond = Tensor::from_vector<int64_t>({1, 0, 7}, Shape{3, 1}, dev()).to(cd);
    const Tensor t = Tensor::from_vector<float>({1.f, 2.f, 3.f, 4.f}, Shape{1, 4}, dev()).to(DType::F16);
    const Tensor f = full(Shape{}, Scalar(-1.5), DType::F32, dev());
    const Tensor r = where(cond, t, f);
    EXPECT_EQ(r.shape(), (Shape{3, 4}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, -1.5, -1.5, -1.5, -1.5, 1, 2, 3, 4}));
  }
}

TEST_P(Where, EveryLayoutMatchesContiguous) {
  for (DType d : kAll) {
    SCOPED_TRACE(dname(d));
    const Tensor x = arange(Scalar(0), Scalar(1000), Scalar(1), d, dev()).reshape({40, 25});
    const Tensor cond = gt(x.to(DType::F32), full(Shape{}, Scalar(12.5), DType::F32, dev()));  // u8
    const std::vector<std::tuple<std::string, Tensor, Tensor, Tensor>> cases = {
        {"transposed", cond.t(), x.t(), x.t().contiguous()},
        {"column_cond", cond.narrow(1, 0, 1), x, zeros(Shape{25}, d, dev())},
        {"scalar_values", cond, full(Shape{}, Scalar(3), d, dev()), x.narrow(0, 0, 1)},
        {"offset", cond.narrow(1, 2, 21), x.narrow(1, 1, 21), x.narrow(1, 4, 21)},
        {"empty", cond.narrow(0, 0, 0), x.narrow(0, 0, 0), x.narrow(0, 0, 0)},
        {"rank0", cond.select(0, 3).select(0, 3), x.select(0, 1).select(0, 1), x.select(0, 2).select(0, 2)},
    };
    for (const auto& [name, cnd, t, f] : cases) {
      SCOPED_TRACE(name);
      const Shape s = broadcast_shapes(broadcast_shapes(cnd.shape(), t.shape(), "t"), f.shape(), "t");
      const Tensor got = where(cnd, t, f);
      // The reference, element by element on the host.
      const auto cv = cnd.broadcast_as(s).to_vector<int64_t>();
      const auto tv = t.broadcast_as(s).to_vector<double>(), fv = f.broadcast_as(s).to_vector<double>();
      std::vector<double> want(cv.size());
      for (size_t k = 0; k < cv.size(); ++k) want[k] = cv[k] ? tv[k] : fv[k];
      EXPECT_EQ(got.shape(), s);
      EXPECT_EQ(got.to_vector<double>(), want);
    }
  }
}

TEST_P(Where, Errors) {
  const Tensor t = zeros(Shape{2, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(where(t, t, t), DTypeMismatch, "where: cond must be u8, u32 or i64, got f32");
  EXPECT_WICK_ERROR(where(zeros(Shape{4}, DType::U8, dev()), t, t), ShapeMismatch, "where: shapes [4] and [2, 3]");
}

WICK_INSTANTIATE_DEVICE_TEST(Where);

}  // namespace
}  // namespace wick
