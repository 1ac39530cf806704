// max_pool2d, avg_pool2d and the upsample ops against PyTorch goldens
// (tests/data/gen_conv.py), every float dtype, integer dtypes where offered, strided
// inputs, hand-derived edge values and the argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/conv_goldens.h"
#include "support/devices.h"
#include "support/golden.h"
#include "wick/wick.h"

namespace wick {
namespace {

using test::ConvGoldens;

std::array<int64_t, 2> pair_of(const nlohmann::json& p, const char* key, int64_t dflt) {
  if (!p.contains(key) || p[key].is_null()) return {dflt, dflt};
  const auto& v = p[key];
  if (v.is_number()) return {v.get<int64_t>(), v.get<int64_t>()};
  return {v[0].get<int64_t>(), v[1].get<int64_t>()};
}

bool is_pool_case(const nlohmann::json& p) {
  const std::string op = p["op"];
  return op == "max_pool2d" || op == "avg_pool2d";
}
bool is_upsample_case(const nlohmann::json& p) { return p["op"].get<std::string>().rfind("upsample", 0) == 0; }

Tensor run_case(const nlohmann::json& p, const Tensor& x) {
  const std::string op = p["op"];
  if (is_pool_case(p)) {
    Pool2dOptions o;
    o.kernel = pair_of(p, "kernel_size", 1);
    o.stride = pair_of(p, "stride", 0);
    o.padding = pair_of(p, "padding", 0);
    o.count_include_pad = p.value("count_include_pad", true);
    return op == "max_pool2d" ? max_pool2d(x, o) : avg_pool2d(x, o);
  }
  const auto size = p["size"].get<std::vector<int64_t>>();
  if (op == "upsample_nearest")
    return x.rank() == 3 ? upsample_nearest1d(x, size[0]) : upsample_nearest2d(x, size[0], size[1]);
  return upsample_bilinear2d(x, size[0], size[1], p["align_corners"].get<bool>());
}

// x's values at an offset inside a larger buffer, transposed in storage (H and W swapped).
Tensor strided_view(const Tensor& x) {
  std::vector<int64_t> big = x.transpose(-1, -2).shape().dims();
  for (auto& d : big) d += 1;
  Tensor t = zeros(Shape(big), x.dtype(), x.device());
  Tensor v = t;
  for (size_t d = 0; d < x.rank(); ++d) v = v.narrow(int64_t(d), 1, big[d] - 1);
  v = v.transpose(-1, -2);
  v.copy_(x);
  return v;
}

class Pool : public test::DeviceTest {
 protected:
  template <class Select, class ViewFn>
  int check_all(DType dtype, Select select, ViewFn view_fn) {
    const auto& g = ConvGoldens::get();
    int n = 0;
    for (const auto& [name, p] : g.cases()) {
      if (!select(p)) continue;
      SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)));
      const Tensor x = view_fn(g.tensor(name + ".x").to(dtype).to(dev()));
      const Tensor y = run_case(p, x);
      EXPECT_EQ(y.dtype(), dtype);
      const Tensor& want = g.tensor(name + (dtype == DType::F64 ? ".y64" : ".y32"));
      const double scale = test::max_abs(want);
      switch (dtype) {
        case DType::F64: EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-12, 1e-12 * scale); break;
        case DType::F32: EXPECT_CLOSE(y.to(Device::cpu()), want, 1e-6, 1e-6 * scale); break;
        case DType::F16: EXPECT_CLOSE(y.to(Device::cpu()), want, 2e-3, 2e-3 * scale); break;
        default: EXPECT_CLOSE(y.to(Device::cpu()), want, 1.6e-2, 1.6e-2 * scale); break;
      }
      ++n;
    }
    return n;
  }
};

const auto kIdentity = [](const Tensor& t) { return t; };

TEST_P(Pool, PoolGoldens) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16})
    EXPECT_EQ(check_all(dt, is_pool_case, kIdentity), 7);
}
TEST_P(Pool, UpsampleGoldens) {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16})
    EXPECT_EQ(check_all(dt, is_upsample_case, kIdentity), 11);
}
TEST_P(Pool, StridedInputs) {
  EXPECT_EQ(check_all(DType::F64, is_pool_case, strided_view), 7);
  EXPECT_EQ(check_all(DType::F32, is_upsample_case, strided_view), 11);
}

// Integer dtypes: max pooling and nearest upsampling only move values, so the f32 golden
// of an integer-valued input is exact.
TEST_P(Pool, IntegerMaxPoolAndNearest) {
  const auto& g = ConvGoldens::get();
  for (DType dt : {DType::U8, DType::U32, DType::I64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    for (const char* name : {"mp_pad", "mp_rect", "un2_mixed", "un1_up"}) {
      const auto& p = g.cases().at(name);
      // Values 0..255 with the golden's order: x * 20 + 128, rounded, kept in range.
      const Tensor xf = g.tensor(std::string(name) + ".x");
      std::vector<double> v = xf.to_vector<double>();
      for (double& e : v) e = std::clamp(std::round(e * 20 + 128), 0.0, 255.0);
      const Tensor xi = Tensor::from_vector(v, xf.shape()).to(dt).to(dev());
      const Tensor want = run_case(p, Tensor::from_vector(v, xf.shape()));  // f64, checked above
      const Tensor y = run_case(p, xi);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_CLOSE(y.to(Device::cpu()), want, 0, 0);
    }
  }
}

TEST_P(Pool, HandValues) {
  // 3x3 input, 2x2 windows with stride 1 and padding 1: 4x4 output.
  const Tensor x = Tensor::from_list<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{1, 1, 3, 3}, dev());
  const Pool2dOptions o{.kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1}};
  EXPECT_EQ(max_pool2d(x, o).to_vector<float>(), (std::vector<float>{1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 9, 7, 8, 9, 9}));
  // Corner windows hold one real value: / 4 with padding counted, / 1 without.
  EXPECT_EQ(avg_pool2d(x, o).to_vector<float>()[0], 0.25f);
  Pool2dOptions excl = o;
  excl.count_include_pad = false;
  EXPECT_EQ(avg_pool2d(x, excl).to_vector<float>()[0], 1.0f);
  EXPECT_EQ(avg_pool2d(x, excl).to_vector<float>()[1], 1.5f);
}

TEST_P(Pool, MaxPoolPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_list<float>({1, nan, 3, 4}, Shape{1, 1, 2, 2}, dev());
  EXPECT_TRUE(std::isnan(max_pool2d(x, {}).item<float>()));
}

TEST_P(Pool, NearestHandValues) {
  // 3 -> 7: floor(o * 3/7) = 0 0 0 1 1 2 2; 1-D sees the same rule.
  const Tensor x = Tensor::from_list<float>({10, 20, 30}, Shape{1, 1, 3}, dev());
  EXPECT_EQ(upsample_nearest1d(x, 7).to_vector<float>(), (std::vector<float>{10, 10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(upsample_nearest1d(x, 7).shape(), (Shape{1, 1, 7}));
  // Bilinear, align_corners: the corners are kept and the middle is the mean.
  const Tensor y = Tensor::from_list<double>({0, 2, 4, 6}, Shape{1, 1, 2, 2}, dev());
  EXPECT_EQ(upsample_bilinear2d(y, 3, 3, true).to_vector<double>(), (std::vector<double>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
}

TEST_P(Pool, BadInputs) {
  const Tensor x = zeros(Shape{1, 2, 5, 5}, DType::F32, dev());
  EXPECT_WICK_ERROR(max_pool2d(zeros(Shape{2, 5, 5}, DType::F32, dev()), {}), ShapeMismatch,
                    "max_pool2d: expected input of rank 4 (N, C, H, W), got shape [2, 5, 5]");
  EXPECT_WICK_ERROR(max_pool2d(x, {.kernel = {3, 3}, .padding = {2, 1}}), InvalidArgument,
                    "max_pool2d: padding 2x1 must be between 0 and half the kernel size 3x3");
  EXPECT_WICK_ERROR(avg_pool2d(x, {.kernel = {0, 2}}), InvalidArgument, "avg_pool2d: kernel size must be positive");
  EXPECT_WICK_ERROR(avg_pool2d(x, {.kernel = {2, 2}, .stride = {-1, 1}}), InvalidArgument,
                    "avg_pool2d: stride must be positive");
  EXPECT_WICK_ERROR(max_pool2d(x, {.kernel = {6, 2}}), ShapeMismatch,
                    "max_pool2d: input 5x5 with kernel 6x2, stride 6x2, padding 0x0 gives an empty output");
  EXPECT_WICK_ERROR(avg_pool2d(x.to(DType::I64), {}), DTypeMismatch,
                    "avg_pool2d: expected a floating-point tensor, got i64");
  EXPECT_WICK_ERROR(upsample_bilinear2d(x.to(DType::U8), 3, 3, false), DTypeMismatch,
                    "upsample_bilinear2d: expected a floating-point tensor, got u8");
  EXPECT_WICK_ERROR(upsample_nearest2d(x, 0, 3), InvalidArgument,
                    "upsample_nearest2d: output size must be positive, got 0x3");
  EXPECT_WICK_ERROR(upsample_nearest1d(zeros(Shape{1, 2, 5}, DType::F32, dev()), -2), InvalidArgument,
                    "upsample_nearest1d: output size must be positive, got -2");
  EXPECT_WICK_ERROR(upsample_nearest1d(x, 4), ShapeMismatch, "upsample_nearest1d: expected input of rank 3 (N, C, L)");
  EXPECT_WICK_ERROR(upsample_bilinear2d(zeros(Shape{1, 2, 0, 5}, DType::F32, dev()), 3, 3, true), ShapeMismatch,
                    "upsample_bilinear2d: input spatial sizes must be positive");
  EXPECT_WICK_ERROR(max_pool2d(Tensor{}, {}), InvalidArgument, "max_pool2d: input is an undefined tensor");
}

WICK_INSTANTIATE_DEVICE_TEST(Pool);

// The device kernels against the CPU backend on shapes that reach every CUDA path: the
// row-vector kernels (output rows a multiple of 16 / sizeof(dtype) elements or not: the
// element kernel), the span path of kh == kw == sw <= 4 without column padding (rows of
// x 16-byte aligned or not: an input at a one-element offset), the unrolled and looped
// window paths, the dyadic and float nearest rules. Values are small integers (NaN in
// some float windows), so every dtype is exact; avg sums in the same order on both
// backends (rows, then columns, in the compute type), so it matches exactly too.
class PoolVsCpu : public test::DeviceTest {
 protected:
  // N x C x H x W small integers in dtype on dev(); NaN at every 29th element for floats
  // when nan is set; at a one-element offset in its storage when misaligned is set.
  Tensor input(const Shape& shape, DType dtype, bool nan, bool misaligned) const {
    std::vector<double> v(size_t(shape.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7 + 3) % 13);
    if (nan && is_float(dtype))
      for (size_t i = 5; i < v.size(); i += 29) v[i] = std::numeric_limits<double>::quiet_NaN();
    const Tensor x = Tensor::from_vector(v, shape).to(dtype);
    if (!misaligned) return x.to(dev());
    Tensor flat = zeros(Shape{shape.numel() + 1}, dtype, dev());
    Tensor view = flat.narrow(0, 1, shape.numel()).reshape(shape.dims());
    EXPECT_EQ(view.offset(), 1);
    view.copy_(x.to(dev()));
    return view;
  }
};

TEST_P(PoolVsCpu, Pooling) {
  struct Window {
    std::array<int64_t, 2> k, s, p;
  };
  const std::vector<Window> windows = {
      {{2, 2}, {2, 2}, {0, 0}},  // span, k2s2
      {{3, 3}, {3, 3}, {0, 0}},  // span, k3s3
      {{4, 4}, {4, 4}, {1, 0}},  // span, row padding only
      {{3, 3}, {2, 2}, {1, 1}},  // rows, unrolled kw 3 (ResNet's stem)
      {{2, 2}, {1, 1}, {0, 0}},  // rows, unrolled kw 2, overlapping
      {{3, 3}, {3, 3}, {1, 1}},  // kw == sw with column padding: rows
      {{2, 3}, {2, 3}, {0, 0}},  // kh != kw: rows
      {{5, 5}, {5, 5}, {2, 2}},  // rows, looped kw 5
  };
  // Output widths around 1, 2, 4, 8 and 16 vector lanes, and between them.
  const std::vector<int64_t> out_widths = {1, 4, 8, 9, 16, 32, 33};
  int n = 0;
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::U8, DType::U32, DType::I64}) {
    for (const Window& win : windows)
      for (int64_t wo : out_widths)
        for (bool misaligned : {false, true}) {
          const int64_t spare = win.s[1] > 1 ? wo % 2 : 0;  // odd widths: a column no window reaches
          const int64_t w = (wo - 1) * win.s[1] + win.k[1] - 2 * win.p[1] + spare;
          const Shape shape{2, 3, 5 + win.k[0], w};
          SCOPED_TRACE(std::string(dtype_name(dt)) + " kernel " + std::to_string(win.k[0]) + "x" +
                       std::to_string(win.k[1]) + " stride " + std::to_string(win.s[1]) + " pad " +
                       std::to_string(win.p[0]) + "x" + std::to_string(win.p[1]) + " input " + shape.to_string() +
                       (misaligned ? " at offset 1" : ""));
          const Tensor x = input(shape, dt, true, misaligned);
          const Tensor xc = x.to(Device::cpu());
          for (bool include_pad : {true, false}) {
            const Pool2dOptions o{.kernel = win.k, .stride = win.s, .padding = win.p, .count_include_pad = include_pad};
            if (include_pad) {
              const Tensor y = max_pool2d(x, o);
              ASSERT_EQ(y.dim(3), wo);
              EXPECT_CLOSE(y.to(Device::cpu()), max_pool2d(xc, o), 0, 0);
              ++n;
            }
            if (is_float(dt)) {
              EXPECT_CLOSE(avg_pool2d(x, o).to(Device::cpu()), avg_pool2d(xc, o), 0, 0);
              ++n;
            }
          }
        }
  }
  EXPECT_EQ(n, 7 * 8 * 7 * 2 + 4 * 8 * 7 * 2 * 2);
}

TEST_P(PoolVsCpu, Upsampling) {
  struct Resize {
    int64_t h, w, ho, wo;
  };
  const std::vector<Resize> sizes = {
      {5, 8, 10, 16},  // x2: the dyadic rule
      {3, 16, 6, 32},  // x2, 16 u8 lanes per row
      {4, 6, 12, 18},  // x3: the float rule, rows not a multiple of most vectors
      {4, 8, 12, 24},  // x3, whole bf16 / f32 vectors
      {5, 5, 7, 7},    // 5 -> 7: element kernel
      {5, 6, 7, 16},   // 6 -> 16: the float rule in the row-vector kernel
      {8, 32, 4, 16},  // x 1/2: dyadic downsampling
      {6, 16, 6, 16},  // same size
      {1, 5, 1, 16},   // 1-D
      {1, 3, 1, 7},    // 1-D, odd
  };
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::U8, DType::U32, DType::I64})
    for (const Resize& r : sizes)
      for (bool misaligned : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(r.h) + "x" + std::to_string(r.w) + " -> " +
                     std::to_string(r.ho) + "x" + std::to_string(r.wo) + (misaligned ? " at offset 1" : ""));
        const Tensor x = input(Shape{2, 3, r.h, r.w}, dt, false, misaligned);
        const Tensor xc = x.to(Device::cpu());
        EXPECT_CLOSE(upsample_nearest2d(x, r.ho, r.wo).to(Device::cpu()), upsample_nearest2d(xc, r.ho, r.wo), 0, 0);
        if (r.h == 1) {
          const Tensor x1 = x.reshape({2, 3, r.w});
          EXPECT_CLOSE(upsample_nearest1d(x1, r.wo).to(Device::cpu()),
                       upsample_nearest1d(xc.reshape({2, 3, r.w}), r.wo), 0, 0);
        }
        if (!is_float(dt)) continue;
        // Bilinear: the same rounded operations on both sides, up to the host compiler's
        // freedom to contract a * b + c into an FMA.
        const double tol = dt == DType::F64 ? 1e-12 : dt == DType::F32 ? 1e-6 : 1e-2;
        for (bool align : {false, true})
          EXPECT_CLOSE(upsample_bilinear2d(x, r.ho, r.wo, align).to(Device::cpu()),
                       upsample_bilinear2d(xc, r.ho, r.wo, align), tol, tol * 12);
      }
}

WICK_INSTANTIATE_DEVICE_TEST(PoolVsCpu);

}  // namespace
}  // namespace wick
