// conv1d/conv2d/conv_transpose1d/conv_transpose2d against PyTorch goldens
// (tests/data/gen_conv.py), every float dtype, contiguous and strided inputs, f32 in TF32
// under allow_tf32() and exact (bit for bit where the sums are exact) without it, exact f32
// over misaligned and strided operands and through Inf and NaN (against the f64 conv on
// the CPU), the argument errors, and the AllowTf32Scope guard.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "support/conv_goldens.h"
#include "support/devices.h"
#include "support/golden.h"
#include "wick/memory.h"
#include "wick/wick.h"

namespace wick {
namespace {

using test::ConvGoldens;

std::array<int64_t, 2> pair_of(const nlohmann::json& p, const char* key, int64_t dflt) {
  if (!p.contains(key)) return {dflt, dflt};
  const auto& v = p[key];
  if (v.is_number()) return {v.get<int64_t>(), v.get<int64_t>()};
  return {v[0].get<int64_t>(), v[1].get<int64_t>()};
}

// Runs the case's op on wick tensors.
Tensor run_conv(const nlohmann::json& p, const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::string op = p["op"];
  if (op == "conv1d" || op == "conv_transpose1d") {
    Conv1dOptions o;
    o.stride = pair_of(p, "stride", 1)[1];
    o.padding = pair_of(p, "padding", 0)[1];
    o.dilation = pair_of(p, "dilation", 1)[1];
    o.output_padding = pair_of(p, "output_padding", 0)[1];
    o.groups = p.value("groups", 1);
    return op == "conv1d" ? conv1d(x, w, b, o) : conv_transpose1d(x, w, b, o);
  }
  Conv2dOptions o;
  o.stride = pair_of(p, "stride", 1);
  o.padding = pair_of(p, "padding", 0);
  o.dilation = pair_of(p, "dilation", 1);
  o.output_padding = pair_of(p, "output_padding", 0);
  o.groups = p.value("groups", 1);
  return op == "conv2d" ? conv2d(x, w, b, o) : conv_transpose2d(x, w, b, o);
}

bool is_conv_case(const nlohmann::json& p) { return p["op"].get<std::string>().rfind("conv", 0) == 0; }

// A non-contiguous view with x's values: NHWC storage seen through a permutation.
Tensor channels_last_view(const Tensor& x) {
  std::vector<int64_t> to_last{0}, back{0};
  const int64_t r = int64_t(x.rank());
  for (int64_t d = 2; d < r; ++d) to_last.push_back(d);
  to_last.push_back(1);
  back.push_back(r - 1);
  for (int64_t d = 1; d < r - 1; ++d) back.push_back(d);
  return x.permute(to_last).contiguous().permute(back);
}

// A view with x's values at an offset inside a larger buffer (narrowed on every dim).
Tensor offset_view(const Tensor& x) {
  std::vector<int64_t> big = x.shape().dims();
  for (auto& d : big) d += 2;
  Tensor t = zeros(Shape(big), x.dtype(), x.device());
  Tensor v = t;
  for (size_t d = 0; d < x.rank(); ++d) v = v.narrow(int64_t(d), 1, x.dim(int64_t(d)));
  v.copy_(x);
  return v;
}

class Conv : public test::DeviceTest {
 protected:
  // Every golden conv case in dtype, with inputs transformed by view_fn.
  template <class ViewFn>
  void check_all(DType dtype, ViewFn view_fn) {
    const auto& g = ConvGoldens::get();
    int n = 0;
    for (const auto& [name, p] : g.cases()) {
      if (!is_conv_case(p)) continue;
      SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)));
      const Tensor x = view_fn(g.tensor(name + ".x").to(dtype).to(dev()));
      const Tensor w = g.tensor(name + ".w").to(dtype).to(dev());
      const Tensor b = g.has(name + ".b") ? g.tensor(name + ".b").to(dtype).to(dev()) : Tensor{};
      const Tensor y = run_conv(p, x, w, b);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.device(), dev());
      const Tensor& want = g.tensor(name + (dtype == DType::F64 ? ".y64" : ".y32"));
      const double scale = test::max_abs(want);
      switch (dtype) {
        case DType::F64: EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-12, 1e-12 * scale); break;
        case DType::F32: EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-5, 1e-6 * scale); break;
        case DType::F16: EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-2, 4e-3 * scale); break;
        default: EXPECT_CLOSE(y.to(Device::cpu()), want, 4e-2, 3e-2 * scale); break;
      }
      ++n;
    }
    EXPECT_EQ(n, 18);
  }
};

TEST_P(Conv, GoldensF32) {
  check_all(DType::F32, [](const Tensor& t) { return t; });
}
TEST_P(Conv, GoldensF64) {
  check_all(DType::F64, [](const Tensor& t) { return t; });
}
TEST_P(Conv, GoldensF16) {
  check_all(DType::F16, [](const Tensor& t) { return t; });
}
TEST_P(Conv, GoldensBF16) {
  check_all(DType::BF16, [](const Tensor& t) { return t; });
}
TEST_P(Conv, ChannelsLastInput) { check_all(DType::F32, channels_last_view); }
TEST_P(Conv, OffsetInput) { check_all(DType::F64, offset_view); }

TEST_P(Conv, StridedWeightAndBias) {
  const auto& g = ConvGoldens::get();
  const auto& p = g.cases().at("c2_groups2");
  const Tensor x = g.tensor("c2_groups2.x").to(dev());
  const Tensor w = offset_view(g.tensor("c2_groups2.w").to(dev()));
  const Tensor b = offset_view(g.tensor("c2_groups2.b").to(dev()));
  ASSERT_FALSE(w.is_contiguous());
  EXPECT_CLOSE(run_conv(p, x, w, b).to(Device::cpu()), g.tensor("c2_groups2.y32"), 1e-5, 1e-5);
}

// One geometry of the device-against-CPU conv tests below.
struct ConvCase {
  std::vector<int64_t> x, w;
  Conv2dOptions o;
  bool bias;
  int64_t narrow_from = 0;     // > 0: x is batch rows [1, 1 + x[0]) of a batch of narrow_from
  bool channels_last = false;  // x as a permuted (non-contiguous) view on the device
  bool w_offset = false;       // w at element offset 1 of its device buffer
};

// x_full (x's shape, or narrow_from rows) as the conv input on the CPU (x) and on the
// device (xd): narrowed on the device itself, so the kernel sees the odd offset.
void place_input(const ConvCase& c, const Tensor& x_full, Device dev, Tensor& x, Tensor& xd) {
  x = x_full, xd = x_full.to(dev);
  if (c.narrow_from) {
    x = x.narrow(0, 1, c.x[0]);
    xd = xd.narrow(0, 1, c.x[0]);
    EXPECT_TRUE(xd.is_contiguous());
    EXPECT_NE(xd.offset() % 2, 0);
  }
}

// The batch dim of x_full: narrow_from rows when the case narrows.
Shape full_input_shape(const ConvCase& c) {
  std::vector<int64_t> xs = c.x;
  if (c.narrow_from) xs[0] = c.narrow_from;
  return Shape(xs);
}

// f16/bf16 convs (on cuda: the implicit-GEMM kernel, kernels_conv_igemm.cu) against the
// f32 conv of the same 16-bit values on the CPU (an independent im2col + GEMM). Both
// accumulate in f32 and round once, so they agree to about one 16-bit rounding. The shapes
// cover the kernel's tiles (64 channels x 128 pixels, K in steps of 32) and their tails:
// C_in = 3 (K = 27), C_out 70 and 130 (2 and 3 channel tiles), pixel tiles spanning two
// images, K = 180 (a partial last step), stride, dilation, asymmetric padding, 1x1, 1-D,
// and an input at an odd element offset. Kernels of up to 32 taps take the per-pixel tap
// mask path (5x5 over several K steps whose rows wrap mid-kernel, exactly 32 taps = mask
// bit 31, padding wider than the kernel so whole output rows and columns see no input,
// an image smaller than the kernel); 7x7 and 3x11 (49 and 33 taps) take the general path.
TEST_P(Conv, HalfPrecisionAgainstF32Cpu) {
  const std::vector<ConvCase> cases = {
      {{2, 3, 17, 19}, {70, 3, 3, 3}, {.padding = {1, 1}}, true},
      {{3, 20, 11, 13}, {16, 20, 3, 3}, {.stride = {2, 2}, .padding = {1, 2}}, true},
      {{1, 8, 15, 15}, {5, 8, 3, 3}, {.padding = {2, 2}, .dilation = {2, 2}}, false},
      {{2, 64, 9, 9}, {64, 64, 3, 3}, {.padding = {1, 1}}, true},
      {{2, 40, 7, 7}, {130, 40, 1, 1}, {}, true},
      {{1, 5, 9, 30}, {7, 5, 2, 5}, {.stride = {1, 3}, .padding = {0, 3}, .dilation = {2, 1}}, true},
      {{2, 6, 1, 50}, {9, 6, 1, 5}, {.stride = {1, 2}, .padding = {0, 2}}, true},
      {{2, 3, 17, 19}, {70, 3, 3, 3}, {.stride = {2, 1}, .padding = {1, 0}}, true, 3},
      {{2, 6, 12, 13}, {20, 6, 5, 5}, {.padding = {2, 2}}, true},
      {{2, 3, 9, 20}, {10, 3, 4, 8}, {.padding = {1, 3}}, true},
      {{2, 4, 5, 6}, {9, 4, 3, 3}, {.padding = {4, 5}}, true},
      {{1, 5, 2, 3}, {6, 5, 5, 5}, {.padding = {2, 2}}, false},
      {{1, 3, 23, 21}, {24, 3, 7, 7}, {.stride = {2, 2}, .padding = {3, 3}}, true},
      {{1, 2, 6, 40}, {5, 2, 3, 11}, {.padding = {1, 5}, .dilation = {2, 1}}, true},
  };
  manual_seed(42);
  for (DType dtype : {DType::F16, DType::BF16}) {
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const ConvCase& c = cases[ci];
      SCOPED_TRACE("case " + std::to_string(ci) + " " + std::string(dtype_name(dtype)));
      // 16-bit values; the reference sees exactly the same values in f32.
      const Tensor x_full = randn(full_input_shape(c)).to(dtype);
      const Tensor w = (randn(Shape(c.w)) * 0.5).to(dtype);
      const Tensor b = c.bias ? randn(Shape{c.w[0]}).to(dtype) : Tensor{};
      Tensor x, xd;
      place_input(c, x_full, dev(), x, xd);
      const Tensor want = conv2d(x.to(DType::F32), w.to(DType::F32), c.bias ? b.to(DType::F32) : Tensor{}, c.o);
      const Tensor y = conv2d(xd, w.to(dev()), c.bias ? b.to(dev()) : Tensor{}, c.o);
      ASSERT_EQ(y.dtype(), dtype);
      const double scale = test::max_abs(want);
      EXPECT_CLOSE(y.to(Device::cpu()), want, dtype == DType::F16 ? 1e-3 : 8e-3, 1e-4 * scale);
    }
  }
}

// f32 convs under allow_tf32() (on cuda: the implicit-GEMM kernel in TF32) against the
// exact f32 conv of the same values on the CPU. Bound: TF32 keeps 10 mantissa bits and
// rounds to nearest, so each operand carries a relative error of at most u = 2^-11,
// uniform-ish, and a product x*w one of std <= sqrt(2/3) u |x w|. Summed over K
// independent terms (the f32 accumulation adds ~K 2^-24, negligible) the error has std
// sigma <= sqrt(2K/3) u rms(x) rms(w); with x ~ N(0, 1), w ~ N(0, 0.25) that is
// sqrt(2K/3) 2^-11 / 2. The test allows 8 sigma (a numpy simulation of this rounding over
// 1.6e5 outputs at K = 27..576 peaked at 4.4 sigma), about 3e-3 of the typical output at
// K = 576: a wrong tap, row or tile would be off by O(1). The same cases with
// allow_tf32() off (on cuda: the same kernel on FFMA, exact products summed in k order in
// f32) must match the exact-f32 bound: a recursive f32 sum of K exact products p_i errs
// by about sum_i d_i s_i with |d_i| <= u = 2^-24 (uniform-ish: std u / sqrt(3)) and s_i
// the partial sums, a random walk of std sqrt(i) rms(p); that gives std
// u rms(p) K / sqrt(6), and the difference of two such sums in different orders (the
// CPU's GEMM; blocked orders only err less) sigma = u rms(p) K / sqrt(3), rms(p) = 0.5
// here. A numpy simulation (2e4 outputs at K = 27, 144, 576, sequential against 8
// interleaved partial sums) peaked at 5.4 of this sigma; the test allows 8 sigma (8e-5
// at K = 576, about 2e-6 of the largest output) plus 1e-6 relative for the bias added
// before or after the sum.
// The geometries cover the kernel's paths and tails as in HalfPrecisionAgainstF32Cpu,
// at f32's sizes: K % 4 == 0 (16-byte cp.async weight pieces, two per thread) or not
// (scalar weights: C_in = 3, K = 27; 5x5 over 6 channels, K = 150), a weight at an odd
// element offset (K % 4 == 0 but misaligned: scalar weights), C_out 10, 24, 96 and 130,
// pixel counts that are not multiples of 128, stride, dilation, 1x1 (K = 4: less than a
// step), 5x5, 7x7 (49 taps: the general path), K = 288 over 10 pixel tiles and K = 576
// (18 steps), bias or not, an input at an odd offset and a channels-last
// (non-contiguous) input, which the front end makes contiguous.
// (On the CPU, where allow_tf32() changes nothing, both comparisons are with itself.)
TEST_P(Conv, F32Tf32AgainstF32Cpu) {
  const std::vector<ConvCase> cases = {
      {{2, 16, 12, 13}, {24, 16, 3, 3}, {.padding = {1, 1}}, true},
      {{3, 20, 11, 13}, {16, 20, 3, 3}, {.stride = {2, 2}, .padding = {1, 2}}, true},
      {{1, 8, 15, 15}, {5, 8, 3, 3}, {.padding = {2, 2}, .dilation = {2, 2}}, false},
      {{2, 40, 7, 7}, {130, 40, 1, 1}, {}, true},
      {{2, 3, 17, 19}, {10, 3, 3, 3}, {.padding = {1, 1}}, true},
      {{2, 6, 12, 13}, {20, 6, 5, 5}, {.padding = {2, 2}}, true},
      {{1, 3, 23, 21}, {24, 3, 7, 7}, {.stride = {2, 2}, .padding = {3, 3}}, true},
      {{2, 8, 10, 11}, {12, 8, 7, 7}, {.padding = {3, 3}}, false},
      {{2, 64, 9, 9}, {64, 64, 3, 3}, {.padding = {1, 1}}, true},
      {{1, 5, 9, 30}, {7, 5, 2, 5}, {.stride = {1, 3}, .padding = {0, 3}, .dilation = {2, 1}}, true},
      {{2, 3, 17, 19}, {70, 3, 3, 3}, {.stride = {2, 1}, .padding = {1, 0}}, true, 3},
      {{2, 16, 12, 13}, {24, 16, 3, 3}, {.padding = {1, 1}}, false, 0, true},
      {{2, 16, 12, 13}, {24, 16, 3, 3}, {.padding = {1, 1}}, true, 0, false, true},
      {{3, 32, 20, 21}, {96, 32, 3, 3}, {.padding = {1, 1}}, true},
      {{2, 4, 6, 7}, {8, 4, 1, 1}, {}, true},
  };
  manual_seed(7);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const ConvCase& c = cases[ci];
    SCOPED_TRACE("case " + std::to_string(ci));
    const Tensor x_full = randn(full_input_shape(c));
    const Tensor w = randn(Shape(c.w)) * 0.5;
    const Tensor b = c.bias ? randn(Shape{c.w[0]}) : Tensor{};
    Tensor x, xd;
    place_input(c, x_full, dev(), x, xd);
    if (c.channels_last) {
      xd = channels_last_view(xd);
      ASSERT_FALSE(xd.is_contiguous());
    }
    Tensor wd = w.to(dev());
    if (c.w_offset) {
      wd = zeros(Shape{w.numel() + 1}, DType::F32, dev()).narrow(0, 1, w.numel()).reshape(w.shape());
      wd.copy_(w.to(dev()));
      ASSERT_EQ(wd.offset(), 1);
    }
    const Tensor bd = c.bias ? b.to(dev()) : Tensor{};
    const Tensor want = conv2d(x, w, b, c.o);
    const double K = double(c.w[1] * c.w[2] * c.w[3]);
    const double sigma = std::sqrt(2.0 * K / 3.0) * std::ldexp(1.0, -11) * 0.5;
    {
      const AllowTf32Scope tf32(true);
      const Tensor y = conv2d(xd, wd, bd, c.o);
      ASSERT_EQ(y.dtype(), DType::F32);
      EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-5, 8 * sigma);
    }
    {
      const AllowTf32Scope exact(false);
      const double sigma_f32 = std::ldexp(1.0, -24) * 0.5 * K / std::sqrt(3.0);
      EXPECT_CLOSE(conv2d(xd, wd, bd, c.o).to(Device::cpu()), want, 1e-6, 8 * sigma_f32);
    }
  }
}

// Hand-derived values that tell TF32 (rounded to nearest, ties to even) from exact f32
// and from TF32 by truncation or with ties away from zero. v = 1 + 3 * 2^-12 lies between
// the TF32 neighbours 1 and 1 + 2^-10 (spacing 2^-10) and nearer the upper one, so TF32
// rounds it to 1 + 2^-10 (truncation would give 1); v = 1 + 2^-11 is a tie between them,
// rounded to the even 1 (ties away would give 1 + 2^-10); v = 1 + 3 * 2^-11 a tie between
// 1 + 2^-10 and 1 + 2^-9, rounded up to the even 1 + 2^-9. A conv without padding whose
// every input (or weight) is v and the other operand 1 sums K equal products: exactly
// K tf32(v) in TF32, K v in f32; every partial sum is a multiple of 2^-12 below 256,
// exact in f32 whatever the summation order. Covers the gathered inputs and the weights
// (cp.async pieces when K % 4 == 0, scalars otherwise) and the mask (K = 144, 27) and
// general (K = 98) paths, with K >= 64 in most. With allow_tf32 off the result is the
// exact one: the TF32 kernel ran exactly when it was allowed.
// The CPU ignores allow_tf32(): exact either way.
TEST_P(Conv, F32Tf32RoundsOperandsToNearest) {
  struct Value {
    double v, tf32;
  };
  const std::vector<Value> values = {{1.0 + 3.0 * std::ldexp(1.0, -12), 1.0 + std::ldexp(1.0, -10)},
                                     {1.0 + std::ldexp(1.0, -11), 1.0},
                                     {1.0 + 3.0 * std::ldexp(1.0, -11), 1.0 + std::ldexp(1.0, -9)}};
  struct Case {
    std::vector<int64_t> x, w;
  };
  for (const Case& c :
       {Case{{2, 16, 6, 7}, {8, 16, 3, 3}}, Case{{1, 3, 5, 9}, {10, 3, 3, 3}}, Case{{2, 2, 9, 8}, {5, 2, 7, 7}}}) {
    const int64_t K = c.w[1] * c.w[2] * c.w[3];
    for (const Value& val : values)
      for (bool v_in_x : {true, false}) {
        SCOPED_TRACE("K " + std::to_string(K) + " v - 1 = " + std::to_string(val.v - 1.0) +
                     (v_in_x ? " v in x" : " v in w"));
        const Tensor x = full(Shape(c.x), v_in_x ? val.v : 1.0, DType::F32, dev());
        const Tensor w = full(Shape(c.w), v_in_x ? 1.0 : val.v, DType::F32, dev());
        const Tensor b = full(Shape{c.w[0]}, 0.5, DType::F32, dev());
        for (bool allow : {true, false}) {
          const AllowTf32Scope scope(allow);
          const Tensor y = conv2d(x, w, b).to(Device::cpu());
          const bool tf32 = allow && dev().is_cuda();
          const double want = 0.5 + double(K) * (tf32 ? val.tf32 : val.v);
          const std::vector<float> got = y.to_vector<float>();
          EXPECT_TRUE(test::bits_equal(got, std::vector<float>(got.size(), float(want)))) << "allow_tf32 " << allow;
        }
      }
  }
}

// Hand-derived exactness of f32 convs with allow_tf32() off (on cuda: the implicit GEMM on
// FFMA), bit for bit, over the kernel's tails: K = 45 (K % 4 != 0: scalar weights; a
// partial second step), 288 (9 steps), 294 (7x7: the general path), 576 and 4 (less than
// a step), C_out 70 and 96 (partial channel tiles), pixel counts 286, 270, 90, 162 and 84
// (partial pixel tiles), bias or not. One operand holds integers a in [-2, 2], the other
// a' (1 + 2^-12) with integers a' in [-2, 2]; every product is m (1 + 2^-12) with |m| <= 4
// and every partial sum (bias included: integers c in [-3, 3]) is an integer n plus
// m' 2^-12 with |n|, |m'| <= 4 K + 3 < 4095, i.e. n 2^12 + m' < 2^24 at a scale of 2^-12:
// exact in f32 whatever the summation order. So the conv must equal the f64 conv of the
// same values rounded to f32 (exact too) bit for bit. An operand rounded to TF32 (10
// mantissa bits) or to f16/bf16 loses the 2^-12 and changes every output whose products
// do not sum to 0 (most of them: the test checks that it would notice).
TEST_P(Conv, F32ExactSumsAreBitExact) {
  const std::vector<ConvCase> cases = {
      {{2, 5, 11, 13}, {70, 5, 3, 3}, {.padding = {1, 1}}, true},
      {{3, 32, 10, 9}, {96, 32, 3, 3}, {.padding = {1, 1}}, true},
      {{1, 6, 9, 10}, {20, 6, 7, 7}, {.padding = {3, 3}}, false},
      {{2, 64, 9, 9}, {64, 64, 3, 3}, {.padding = {1, 1}}, true},
      {{2, 4, 6, 7}, {8, 4, 1, 1}, {}, true},
  };
  const double f = 1.0 + std::ldexp(1.0, -12);
  const AllowTf32Scope exact(false);
  manual_seed(5);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const ConvCase& c = cases[ci];
    const Tensor xi = clamp(round(randn(Shape(c.x))), -2, 2);
    const Tensor wi = clamp(round(randn(Shape(c.w))), -2, 2);
    const Tensor b = c.bias ? clamp(round(randn(Shape{c.w[0]}) * 1.5), -3, 3) : Tensor{};
    const Tensor b64 = c.bias ? b.to(DType::F64) : Tensor{};
    for (bool f_in_x : {true, false}) {
      SCOPED_TRACE("case " + std::to_string(ci) + (f_in_x ? " x (1 + 2^-12)" : " w (1 + 2^-12)"));
      const Tensor x = f_in_x ? xi * f : xi;
      const Tensor w = f_in_x ? wi : wi * f;
      const std::vector<float> want =
          conv2d(x.to(DType::F64), w.to(DType::F64), b64, c.o).to(DType::F32).to_vector<float>();
      const std::vector<float> rounded = conv2d(xi, wi, b, c.o).to_vector<float>();  // operands without the 2^-12
      size_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i) differ += want[i] != rounded[i];
      EXPECT_GT(differ, want.size() / 2);
      const Tensor y = conv2d(x.to(dev()), w.to(dev()), c.bias ? b.to(dev()) : Tensor{}, c.o);
      EXPECT_TRUE(test::bits_equal(y.to(Device::cpu()).to_vector<float>(), want));
    }
  }
}

// allow_tf32() concerns f32 only: f16/bf16 convs give bit-identical results either way.
TEST_P(Conv, Tf32LeavesHalfPrecisionAlone) {
  manual_seed(11);
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = randn(Shape{2, 16, 12, 13}).to(dtype).to(dev());
    const Tensor w = (randn(Shape{24, 16, 3, 3}) * 0.5).to(dtype).to(dev());
    const Tensor b = randn(Shape{24}).to(dtype).to(dev());
    const Conv2dOptions o{.padding = {1, 1}};
    Tensor off, on;
    {
      const AllowTf32Scope scope(false);
      off = conv2d(x, w, b, o).to(DType::F32).to(Device::cpu());
    }
    {
      const AllowTf32Scope scope(true);
      on = conv2d(x, w, b, o).to(DType::F32).to(Device::cpu());
    }
    EXPECT_TRUE(test::bits_equal(on.to_vector<float>(), off.to_vector<float>()));
  }
}

// ---- AllowTf32Scope -------------------------------------------------------------------------

// Each scope sets the flag and gives back exactly what it found, however deep the nesting
// and whichever value it started from.
TEST(AllowTf32Scope, NestedScopesRestoreThePreviousValue) {
  static_assert(!std::is_copy_constructible_v<AllowTf32Scope> && !std::is_copy_assignable_v<AllowTf32Scope>);
  static_assert(!std::is_convertible_v<bool, AllowTf32Scope>);  // explicit
  for (bool start : {false, true}) {
    SCOPED_TRACE(start ? "from on" : "from off");
    const AllowTf32Scope outer(start);  // a known starting value, itself restored at the end
    ASSERT_EQ(allow_tf32(), start);
    {
      const AllowTf32Scope flip(!start);
      EXPECT_EQ(allow_tf32(), !start);
      {
        const AllowTf32Scope back(start);
        EXPECT_EQ(allow_tf32(), start);
        {
          const AllowTf32Scope same(start);  // setting the value it already has
          EXPECT_EQ(allow_tf32(), start);
        }
        EXPECT_EQ(allow_tf32(), start);
        const AllowTf32Scope again(!start);
        EXPECT_EQ(allow_tf32(), !start);
      }
      EXPECT_EQ(allow_tf32(), !start);
    }
    EXPECT_EQ(allow_tf32(), start);
  }
}

// An exception thrown inside the scope (a wick::Error from a conv with a bad input, as a
// benchmark or test would meet it) still restores the previous value.
TEST(AllowTf32Scope, RestoresWhenAnExceptionLeavesTheScope) {
  for (bool start : {false, true}) {
    SCOPED_TRACE(start ? "from on" : "from off");
    const AllowTf32Scope outer(start);
    EXPECT_THROW(
        {
          const AllowTf32Scope flip(!start);
          EXPECT_EQ(allow_tf32(), !start);
          const AllowTf32Scope inner(start);
          const AllowTf32Scope inner2(!start);
          (void)conv2d(zeros(Shape{4, 5, 5}), zeros(Shape{6, 4, 3, 3}));  // rank 3: throws
        },
        Error);
    EXPECT_EQ(allow_tf32(), start);
  }
}

// ---- exact f32 over misaligned and strided operands, Inf and NaN ---------------------------

// t's values (a CPU tensor) in a new contiguous tensor on device whose data begins offset
// elements into its buffer (allocations are 256-byte aligned, so an offset of 1 or 3 f32
// is not 16-byte aligned, 4 is). The elements before it hold NaN: a kernel that read them
// would turn outputs into NaN.
Tensor at_offset(const Tensor& t, int64_t offset, Device device) {
  Tensor v = full(Shape{t.numel() + offset}, std::nan(""), t.dtype(), device).narrow(0, offset, t.numel());
  v = v.reshape(t.shape());
  v.copy_(t.to(device));
  return v;
}

// t's values (a CPU tensor) as a view on device narrowed along dim: indices [1, 1 + n) of a
// tensor 2 larger there, the rest NaN (read by mistake, it shows). Along the batch, a
// contiguous view at an offset of one image; along the channels, one at an offset of one
// H x W plane when the batch is 1 (strided otherwise); along the width, strided, every row
// one element in.
Tensor narrowed_view(const Tensor& t, int64_t dim, Device device) {
  std::vector<int64_t> big = t.shape().dims();
  big[size_t(dim)] += 2;
  Tensor v = full(Shape(big), std::nan(""), t.dtype(), device).narrow(dim, 1, t.dim(dim));
  v.copy_(t.to(device));
  return v;
}

// w's values (a CPU tensor) as a non-contiguous view on device: stored as
// (kh, kw, C_in, C_out) and permuted back to (C_out, C_in, kh, kw).
Tensor permuted_weight(const Tensor& w, Device device) {
  return w.permute({2, 3, 1, 0}).contiguous().to(device).permute({3, 2, 0, 1});
}

// An f32 conv y (on any device) against the f64 conv of the same f32 values x, w, b on the
// CPU, element by element: NaN where the reference is NaN, the same infinity where it is
// infinite, elsewhere within 2 (K + 1) 2^-24 (|b| + sum |x| |w|) of it: twice Higham's
// worst-case bound gamma_(K+1) for a sum of the bias and K products, rounded once per
// term (FFMA), in any order (the factor 2 also covers products rounded before their add).
// Reassociation stays far inside it (the typical error is about sqrt(K) 2^-24 of that
// magnitude), while a wrong, missing or doubled tap moves an output by a whole |x w| term,
// about 1/K of the magnitude: hundreds of times the bound at these K (<= 153).
::testing::AssertionResult matches_f64_conv(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b,
                                            const Conv2dOptions& o) {
  const Tensor x64 = x.to(DType::F64), w64 = w.to(DType::F64);
  const Tensor b64 = b.defined() ? b.to(DType::F64) : Tensor{};
  const Tensor want_t = conv2d(x64, w64, b64, o);
  if (y.dtype() != DType::F32) return ::testing::AssertionFailure() << "dtype " << dtype_name(y.dtype());
  if (y.shape() != want_t.shape())
    return ::testing::AssertionFailure() << "shape " << y.shape() << " != expected " << want_t.shape();
  const std::vector<double> want = want_t.to_vector<double>();
  const std::vector<double> mag = conv2d(abs(x64), abs(w64), b.defined() ? abs(b64) : Tensor{}, o).to_vector<double>();
  const std::vector<double> got = y.to(Device::cpu()).to_vector<double>();
  const double rel = 2.0 * double(w.dim(1) * w.dim(2) * w.dim(3) + 1) * std::ldexp(1.0, -24);
  std::ostringstream os;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], e = want[i];
    const bool ok = std::isnan(e) ? std::isnan(g) : std::isinf(e) ? g == e : std::fabs(g - e) <= rel * mag[i];
    if (!ok && ++bad <= 5)
      os << "\n  [" << i << "] got " << g << ", expected " << e << " (bound " << rel * mag[i] << ")";
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << want.size() << " values differ:" << os.str();
  return ::testing::AssertionSuccess();
}

// One geometry of the misaligned exact-f32 test.
struct MisalignedCase {
  std::vector<int64_t> x, w;
  Conv2dOptions o;
  bool bias;
  int64_t x_narrow_dim;  // -1: x contiguous; else narrowed_view along this dim (0, 1 or 3)
  int64_t w_offset;      // > 0: w at_offset this many elements; -1: a permuted_weight view
  int64_t b_offset = 0;  // > 0: the bias at_offset this many elements
};

// f32 convs with allow_tf32() off (on cuda: the implicit GEMM on FFMA,
// kernels_conv_igemm.cu) on operands that are not where its fast paths want them,
// against the f64 conv on the CPU (matches_f64_conv). The kernel loads the weight tile
// as 16-byte cp.async pieces only when K % 4 == 0 and w is 16-byte aligned, else as
// scalars: weights at element offsets 1 and 3 (misaligned; with K % 4 == 0 too: C_in 8
// and 16, K = 72, 16, 144), 4 (aligned, but not at the start of its buffer) and
// permuted (non-contiguous: the front end makes the copy the kernel sees). Inputs at an
// odd element offset (narrowed along the batch, or the channels of a batch of 1: the
// kernel sees the offset) or strided (narrowed channels of a batch of 3, or the width:
// every row misaligned; the front end makes them contiguous), biases at offsets 1 and 3.
// Channel counts off the multiples of 4/8/16 (C_in 3, 5, 7, 17; C_out 7, 33, 70), batch
// 1 and 3, 7x9 and 11x13 images (odd pixel counts per image and per channel row of the
// output), 3x3 with padding 1 and 1x1 (with padding 1 too: border outputs see only the
// bias), stride 1 and 2. Everything around an offset or narrowed operand is NaN.
TEST_P(Conv, F32ExactMisalignedOperandsAgainstF64Cpu) {
  const Conv2dOptions p1{.padding = {1, 1}}, s2p1{.stride = {2, 2}, .padding = {1, 1}}, s2{.stride = {2, 2}};
  const std::vector<MisalignedCase> cases = {
      {{1, 3, 7, 9}, {7, 3, 3, 3}, p1, true, 0, 1},       {{3, 5, 7, 9}, {33, 5, 3, 3}, s2p1, true, 0, 3},
      {{1, 17, 7, 9}, {7, 17, 3, 3}, p1, false, 1, 1},    {{3, 17, 7, 9}, {33, 17, 3, 3}, p1, true, 1, -1, 1},
      {{3, 17, 7, 9}, {33, 17, 1, 1}, {}, true, 0, 3},    {{3, 5, 7, 9}, {7, 5, 1, 1}, s2, true, 3, -1},
      {{1, 3, 7, 9}, {33, 3, 3, 3}, s2p1, true, 3, 1, 3}, {{1, 8, 7, 9}, {33, 8, 3, 3}, p1, true, 1, 1},
      {{3, 8, 7, 9}, {7, 8, 3, 3}, s2p1, true, 3, 4},     {{1, 16, 7, 9}, {33, 16, 1, 1}, p1, true, 1, 1},
      {{3, 16, 7, 9}, {33, 16, 1, 1}, s2, false, 3, 3},   {{3, 7, 11, 13}, {70, 7, 3, 3}, p1, true, 0, 1, 1},
      {{3, 16, 7, 9}, {33, 16, 3, 3}, p1, true, -1, 4},   {{3, 16, 7, 9}, {33, 16, 3, 3}, s2p1, true, -1, 3},
  };
  const AllowTf32Scope exact(false);
  manual_seed(13);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const MisalignedCase& c = cases[ci];
    SCOPED_TRACE("case " + std::to_string(ci));
    const Tensor x = randn(Shape(c.x));
    const Tensor w = randn(Shape(c.w)) * 0.5;
    const Tensor b = c.bias ? randn(Shape{c.w[0]}) : Tensor{};
    const Tensor xd = c.x_narrow_dim < 0 ? x.to(dev()) : narrowed_view(x, c.x_narrow_dim, dev());
    if (c.x_narrow_dim >= 0) {
      EXPECT_EQ(xd.is_contiguous(), c.x_narrow_dim == 0 || (c.x_narrow_dim == 1 && c.x[0] == 1));
      if (xd.is_contiguous()) {
        EXPECT_EQ(xd.offset() % 2, 1);
      }
    }
    const Tensor wd = c.w_offset < 0 ? permuted_weight(w, dev()) : at_offset(w, c.w_offset, dev());
    if (c.w_offset < 0)
      ASSERT_FALSE(wd.is_contiguous());
    else
      ASSERT_EQ(wd.offset(), c.w_offset);
    const Tensor bd = !c.bias ? Tensor{} : c.b_offset ? at_offset(b, c.b_offset, dev()) : b.to(dev());
    EXPECT_TRUE(matches_f64_conv(conv2d(xd, wd, bd, c.o), x, w, b, c.o));
  }
}

// IEEE propagation through exact-f32 convs (allow_tf32() off), against the f64 conv of the
// same values on the CPU (matches_f64_conv: NaN exactly where the reference is NaN, the
// same infinity where it is infinite). The input holds a NaN, a +Inf in a corner (its
// outputs clipped by the border) and a -Inf in the channel that meets the weight's +Inf
// (an Inf * Inf product, and outputs whose infinite terms differ in sign: NaN). The weight's
// +Inf sits at the kernel's centre tap, which with padding (k - 1) / 2 and any stride
// only ever meets real input pixels: at a tap over the zero padding 0 * Inf would make
// NaN only where an implementation multiplies the padding, which the test leaves open.
// Operands at odd offsets (the kernel's scalar paths) and not, 3x3 with stride 1 and 2,
// 1x1, C_in 5 and 17, C_out 7 and 33. An output touching none of the specials stays finite
// and within the f32 bound (a NaN or Inf that leaked through a wrong tap or tile shows).
TEST_P(Conv, F32ExactPropagatesInfAndNan) {
  struct Case {
    std::vector<int64_t> x, w;
    Conv2dOptions o;
    bool misaligned;  // x narrowed along the batch (an odd offset), w at offset 1
  };
  const std::vector<Case> cases = {
      {{2, 5, 7, 9}, {7, 5, 3, 3}, {.padding = {1, 1}}, false},
      {{2, 5, 7, 9}, {7, 5, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}}, true},
      {{2, 5, 7, 9}, {33, 5, 1, 1}, {}, true},
      {{2, 17, 7, 9}, {33, 17, 3, 3}, {.padding = {1, 1}}, true},
      {{2, 17, 7, 9}, {7, 17, 1, 1}, {.stride = {2, 2}}, false},
  };
  const double inf = std::numeric_limits<double>::infinity();
  const AllowTf32Scope exact(false);
  manual_seed(17);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    SCOPED_TRACE("case " + std::to_string(ci));
    const int64_t C = c.x[1], H = c.x[2], W = c.x[3], Ci = c.w[1], KH = c.w[2], KW = c.w[3];
    std::vector<float> xv = randn(Shape(c.x)).to_vector<float>();
    std::vector<float> wv = (randn(Shape(c.w)) * 0.5).to_vector<float>();
    auto xat = [&](int64_t n, int64_t ch, int64_t h, int64_t w_) -> float& {
      return xv[size_t(((n * C + ch) * H + h) * W + w_)];
    };
    xat(0, 1, 2, 4) = std::nanf("");  // even coordinates: 1x1 stride 2 samples them
    xat(1, 4, 0, W - 1) = float(inf);
    xat(1, 2, 4, 4) = float(-inf);
    wv[size_t(((3 * Ci + 2) * KH + KH / 2) * KW + KW / 2)] = float(inf);
    const Tensor x = Tensor::from_vector(xv, Shape(c.x)), w = Tensor::from_vector(wv, Shape(c.w));
    const Tensor b = randn(Shape{c.w[0]});
    const Tensor xd = c.misaligned ? narrowed_view(x, 0, dev()) : x.to(dev());
    const Tensor wd = c.misaligned ? at_offset(w, 1, dev()) : w.to(dev());
    if (c.misaligned) {
      ASSERT_EQ(xd.offset() % 2, 1);
      ASSERT_EQ(wd.offset(), 1);
    }
    // The reference must show all three kinds, and the NaN in every output channel.
    const std::vector<double> want = conv2d(x.to(DType::F64), w.to(DType::F64), b.to(DType::F64), c.o)
                                         .narrow(0, 0, 1)
                                         .to_vector<double>();  // image 0: the NaN's
    size_t nan = 0, infinite = 0, finite = 0;
    for (double v : want) (std::isnan(v) ? nan : std::isinf(v) ? infinite : finite) += 1;
    EXPECT_GE(nan, size_t(c.w[0]));
    EXPECT_GT(infinite, 0u);
    EXPECT_GT(finite, want.size() / 2);
    EXPECT_TRUE(matches_f64_conv(conv2d(xd, wd, b.to(dev()), c.o), x, w, b, c.o));
  }
}

// Hand-derived: a 1x1 input, 2x2 kernel of ones, stride 2 transposed: each input value
// is spread over a 2x2 block.
TEST_P(Conv, TransposeHandValues) {
  const Tensor x = Tensor::from_list<float>({1, 2, 3, 4}, Shape{1, 1, 2, 2}, dev());
  const Tensor w = ones(Shape{1, 1, 2, 2}, DType::F32, dev());
  const Tensor b = Tensor::from_list<float>({10}, Shape{1}, dev());
  Conv2dOptions o;
  o.stride = {2, 2};
  const Tensor y = conv_transpose2d(x, w, b, o);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 11, 12, 12, 11, 11, 12, 12, 13, 13, 14, 14, 13, 13, 14, 14}));
}

TEST_P(Conv, EmptyBatch) {
  const Tensor y = conv2d(zeros(Shape{0, 3, 5, 5}, DType::F32, dev()), zeros(Shape{2, 3, 3, 3}, DType::F32, dev()));
  EXPECT_EQ(y.shape(), (Shape{0, 2, 3, 3}));
}

TEST_P(Conv, BadInputs) {
  const Tensor x = zeros(Shape{1, 4, 5, 5}, DType::F32, dev());
  const Tensor w = zeros(Shape{6, 4, 3, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(conv2d(zeros(Shape{4, 5, 5}, DType::F32, dev()), w), ShapeMismatch,
                    "conv2d: expected input of rank 4");
  EXPECT_WICK_ERROR(conv1d(x, w), ShapeMismatch, "conv1d: expected input of rank 3");
  EXPECT_WICK_ERROR(conv2d(x, zeros(Shape{6, 4, 7, 7}, DType::F32, dev())), ShapeMismatch,
                    "conv2d: input 5x5 with kernel 7x7, stride 1x1, padding 0x0, dilation 1x1 gives an empty output");
  EXPECT_WICK_ERROR(conv1d(zeros(Shape{1, 4, 5}, DType::F32, dev()), zeros(Shape{2, 4, 3}, DType::F32, dev()), {},
                           Conv1dOptions{.dilation = 3}),
                    ShapeMismatch,
                    "conv1d: input 5 with kernel 3, stride 1, padding 0, dilation 3 gives an empty output");
  EXPECT_WICK_ERROR(conv2d(x, zeros(Shape{6, 3, 3, 3}, DType::F32, dev())), ShapeMismatch,
                    "conv2d: weight [6, 3, 3, 3] expects 3 input channels");
  EXPECT_WICK_ERROR(conv2d(x, zeros(Shape{6, 2, 3, 3}, DType::F32, dev()), {}, Conv2dOptions{.groups = 3}),
                    ShapeMismatch, "conv2d: input channels 4 are not divisible by groups 3");
  EXPECT_WICK_ERROR(conv2d(x, zeros(Shape{5, 2, 3, 3}, DType::F32, dev()), {}, Conv2dOptions{.groups = 2}),
                    ShapeMismatch, "conv2d: output channels 5 (weight dim 0) are not divisible by groups 2");
  EXPECT_WICK_ERROR(conv2d(x, w, {}, Conv2dOptions{.stride = {0, 1}}), InvalidArgument,
                    "conv2d: stride must be positive, got 0x1");
  EXPECT_WICK_ERROR(conv2d(x, w, {}, Conv2dOptions{.dilation = {1, -1}}), InvalidArgument,
                    "conv2d: dilation must be positive");
  EXPECT_WICK_ERROR(conv2d(x, w, {}, Conv2dOptions{.padding = {-1, 0}}), InvalidArgument,
                    "conv2d: padding must be non-negative");
  EXPECT_WICK_ERROR(conv2d(x, w, {}, Conv2dOptions{.groups = 0}), InvalidArgument, "conv2d: groups must be positive");
  EXPECT_WICK_ERROR(conv2d(x, w.to(DType::F64)), DTypeMismatch, "conv2d: input is f32 but weight is f64");
  EXPECT_WICK_ERROR(conv2d(x, w, zeros(Shape{6}, DType::F16, dev())), DTypeMismatch,
                    "conv2d: input is f32 but bias is f16");
  EXPECT_WICK_ERROR(conv2d(x.to(DType::I64), w.to(DType::I64)), DTypeMismatch,
                    "conv2d: expected a floating-point tensor, got i64");
  EXPECT_WICK_ERROR(conv2d(x, w, zeros(Shape{5}, DType::F32, dev())), ShapeMismatch,
                    "conv2d: bias must have shape (6), got [5]");
  EXPECT_WICK_ERROR(conv2d(x, w, {}, Conv2dOptions{.output_padding = {1, 1}}), InvalidArgument,
                    "conv2d: output_padding applies only to transposed convolutions");
  EXPECT_WICK_ERROR(conv_transpose2d(x, zeros(Shape{4, 2, 3, 3}, DType::F32, dev()), {},
                                     Conv2dOptions{.stride = {2, 2}, .output_padding = {2, 0}}),
                    InvalidArgument, "conv_transpose2d: output_padding 2x0 must be smaller than either stride 2x2");
  EXPECT_WICK_ERROR(conv_transpose2d(x, zeros(Shape{3, 2, 3, 3}, DType::F32, dev())), ShapeMismatch,
                    "conv_transpose2d: weight [3, 2, 3, 3] (C_in, C_out/groups, K...) expects 3 input channels");
  EXPECT_WICK_ERROR(conv2d(x, Tensor{}), InvalidArgument, "conv2d: input is an undefined tensor");
  if (dev().is_cuda())
    EXPECT_WICK_ERROR(conv2d(x, w.to(Device::cpu())), DeviceMismatch, "conv2d: expected all tensors on one device");
}

WICK_INSTANTIATE_DEVICE_TEST(Conv);

}  // namespace
}  // namespace wick
