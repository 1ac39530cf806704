// The fused linear (nn.h: linear with residual / LinearEpilogue, linear_epilogue) against a
// double-precision reference computed here from the same rounded inputs: every float dtype,
// decode-sized (the CUDA GEMV) and prefill-sized (GEMM + epilogue) row counts, K that the
// 16-byte GEMV takes and K that it does not, odd N, weight views (transposed, offset rows),
// every activation, the gated [gate; up] form, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "support/devices.h"
#include "support/golden.h"
#include "support/linear_reference.h"
#include "support/thrown.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Act = Activation;

struct Case {
  int64_t M, K, N;  // N: outputs (the weight has 2N rows with glu)
  LinearEpilogue e;
  bool bias, residual;
  bool norm = false;  // rms_norm_linear: x normalized (eps 1e-5, a weight g) first
};

class LinearFused : public test::DeviceTest {
 protected:
  // out = epilogue(x w^T + b) + r against the reference; w_view and x_view pick the layouts.
  // wdt: the weight's dtype when it differs from x's (an f32 x over an f16/bf16 weight).
  void check(const Case& c, DType dt, int w_view = 0, int x_view = 0, std::optional<DType> wdt = {}) {
    const DType wt_dt = wdt.value_or(dt);
    const int64_t rows = c.e.glu ? 2 * c.N : c.N;
    Tensor x;
    std::vector<double> xv;  // (M, K) row-major values (not a structured binding: the checks' lambda captures it)
    std::tie(x, xv) = test::rounded_random(Shape{c.M, c.K}, dt, dev(), 1);
    if (x_view == 1) {  // (K, M) stored, used transposed
      auto [xt, xtv] = test::rounded_random(Shape{c.K, c.M}, dt, dev(), 1);
      x = xt.t();
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t k = 0; k < c.K; ++k) xv[size_t(m * c.K + k)] = xtv[size_t(k * c.M + m)];
    } else if (x_view == 2) {  // rows 1.., columns 2.. of a larger matrix: offset, row stride K + 3
      auto [big, bigv] = test::rounded_random(Shape{c.M + 1, c.K + 3}, dt, dev(), 1);
      x = big.narrow(0, 1, c.M).narrow(1, 2, c.K);
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t k = 0; k < c.K; ++k) xv[size_t(m * c.K + k)] = bigv[size_t((m + 1) * (c.K + 3) + 2 + k)];
    }
    Tensor w;
    std::vector<double> wv;  // (rows, K) row-major values
    if (w_view == 0) {
      std::tie(w, wv) = test::rounded_random(Shape{rows, c.K}, wt_dt, dev(), 2, 0.2f);
    } else if (w_view == 1) {  // (K, rows) stored, used through .t() (GPT-2's layout on the CPU)
      auto [wt, wtv] = test::rounded_random(Shape{c.K, rows}, wt_dt, dev(), 2, 0.2f);
      w = wt.t();
      wv.resize(size_t(rows * c.K));
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t k = 0; k < c.K; ++k) wv[size_t(n * c.K + k)] = wtv[size_t(k * rows + n)];
    } else {  // rows 1.. of a larger matrix: an offset view (its start not 16-byte aligned)
      auto [big, bigv] = test::rounded_random(Shape{rows + 1, c.K}, wt_dt, dev(), 2, 0.2f);
      w = big.narrow(0, 1, rows);
      wv.assign(bigv.begin() + c.K, bigv.end());
    }
    Tensor b, r;
    std::vector<double> bv(size_t(rows), 0.0), rv(size_t(c.M * c.N), 0.0);
    if (c.bias) std::tie(b, bv) = test::rounded_random(Shape{rows}, dt, dev(), 3);
    if (c.residual) std::tie(r, rv) = test::rounded_random(Shape{c.M, c.N}, dt, dev(), 4);
    Tensor g;
    std::vector<double> gv;
    if (c.norm) {
      std::tie(g, gv) = test::rounded_random(Shape{c.K}, dt, dev(), 12);
      test::rms_normalize(xv, gv, c.M, c.K);  // the reference normalizes in double, unrounded
    }
    const Tensor out = c.norm ? rms_norm_linear(x, g, 1e-5, w, b, r, c.e) : linear(x, w, b, r, c.e);
    ASSERT_EQ(out.shape(), (Shape{c.M, c.N}));
    ASSERT_EQ(out.dtype(), dt);
    const std::vector<double> got = out.to(DType::F64).to_vector<double>();
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        auto dot = [&](int64_t row, double& mag) {
          double s = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const double t = xv[size_t(m * c.K + k)] * wv[size_t(row * c.K + k)];
            s += t;
            mag += std::abs(t);
          }
          return s + bv[size_t(row)];
        };
        double mag = 0;
        const double p = dot(n, mag);
        const double want =
            (c.e.glu ? test::epilogue_act(c.e.act, p) * dot(c.N + n, mag) : test::epilogue_act(c.e.act, p)) +
            rv[size_t(m * c.N + n)];
        // Roundings of the product (the GEMM path rounds it to the dtype before the epilogue)
        // and of the output, scaled by the magnitudes involved (the gate multiplies them).
        const double up = c.e.glu ? std::abs(dot(c.N + n, mag)) + 1 : 1;
        const double scale = std::abs(want) + (mag + std::abs(bv[size_t(n)]) + std::abs(rv[size_t(m * c.N + n)])) * up;
        const double tol = 4 * std::max(test::unit_roundoff(dt), 0x1p-22) * scale + 1e-12;
        ASSERT_NEAR(got[size_t(m * c.N + n)], want, tol)
            << "m " << m << " n " << n << " M " << c.M << " K " << c.K << " N " << c.N << " dtype " << dt;
      }
  }
};

const DType kDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};

TEST_P(LinearFused, PlainAndBiasAtDecodeAndPrefillSizes) {
  for (const DType dt : kDTypes)
    for (const int64_t M : {1, 2, 3, 8, 9, 33})
      for (const int64_t K : {64, 520, 100})  // 100: not a multiple of the GEMV's 16-byte chunk for 16-bit types
        for (const int64_t N : {1, 7, 130}) {
          check({M, K, N, {}, false, false}, dt);
          check({M, K, N, {}, true, false}, dt);
        }
}

TEST_P(LinearFused, ResidualAndActivations) {
  for (const DType dt : kDTypes)
    for (const int64_t M : {1, 4, 17})
      for (const Act a : {Act::None, Act::Silu, Act::GeluTanh, Act::GeluErf, Act::Relu})
        check({M, 256, 33, {.act = a}, true, true}, dt);
}

TEST_P(LinearFused, GatedUpProduct) {
  for (const DType dt : kDTypes)
    for (const int64_t M : {1, 3, 12})
      for (const Act a : {Act::Silu, Act::GeluTanh, Act::GeluErf}) {
        check({M, 128, 9, {.act = a, .glu = true}, false, false}, dt);
        check({M, 128, 64, {.act = a, .glu = true}, true, true}, dt);
      }
}

TEST_P(LinearFused, RmsNormFirst) {
  for (const DType dt : kDTypes)
    for (const int64_t M : {1, 3, 8, 20})
      for (const int64_t K : {256, 100}) {
        check({M, K, 17, {}, false, false, true}, dt);
        check({M, K, 16, {.act = Act::Silu, .glu = true}, true, true, true}, dt);
      }
}

// Long rows and few outputs: on CUDA 2 or 4 warps share two weight rows, each a slice of K
// (4104: 513 16-byte chunks of f16, not a multiple of the slices), summed in shared memory.
TEST_P(LinearFused, LongRowsFewOutputs) {
  for (const DType dt : {DType::F32, DType::F16, DType::BF16})
    for (const int64_t M : {1, 3, 8}) {
      check({M, 4104, 7, {}, true, true}, dt);
      check({M, 4104, 130, {.act = Act::Silu}, false, true, true}, dt);
      check({M, 2048, 5, {.act = Act::Silu, .glu = true}, true, false, true}, dt);
    }
}

// An f32 model over 16-bit weights (llama.cpp's way with f16/bf16 files on the CPU): the
// weight's exact values against f32 rows, f32 out; decode rows (the CPU's GEMVs that read the
// weight in place, both weight layouts), prefill rows (panel widening + sgemm), the bias-first
// and by-parts paths, views. Other devices widen the weight and must agree.
TEST_P(LinearFused, F32InputOver16BitWeights) {
  for (const DType wdt : {DType::F16, DType::BF16})
    for (const int64_t M : {1, 5, 8, 9, 40})
      for (const int view : {0, 1, 2}) {
        SCOPED_TRACE("weight " + std::string(dtype_name(wdt)) + " view " + std::to_string(view));
        check({M, 72, 29, {}, false, false}, DType::F32, view, 0, wdt);
        check({M, 64, 24, {.act = Act::GeluErf}, true, true}, DType::F32, view, view == 1 ? 2 : 0, wdt);
        check({M, 40, 12, {.act = Act::Silu, .glu = true}, true, false, true}, DType::F32, view, 0, wdt);
      }
  // A long row (the GEMV's K loop and its tail) and a batch dim.
  check({3, 4104, 9, {}, true, true}, DType::F32, 0, 0, DType::F16);
  const Tensor w = Tensor::from_vector(test::random_normal(6 * 16, 5, 1), Shape{6, 16}).to(DType::BF16).to(dev());
  const Tensor x = Tensor::from_vector(test::random_normal(2 * 3 * 16, 6, 1), Shape{2, 3, 16}).to(dev());
  const Tensor got = linear(x, w);
  ASSERT_EQ(got.dtype(), DType::F32);
  EXPECT_LT(max(abs(got - matmul(x, w.to(DType::F32).t()))).to(DType::F64).item<double>(), 1e-5);
}

TEST_P(LinearFused, WeightViews) {
  for (const DType dt : {DType::F32, DType::F16, DType::BF16})
    for (const int64_t M : {1, 5, 40})
      for (const int view : {1, 2}) check({M, 64, 24, {.act = Act::Silu}, true, true}, dt, view);
}

// The CPU's f32/f64 path fills the output with the bias (and the residual when there is no
// activation) and has BLAS add the product onto it, then applies the activation in place:
// every combination of bias, residual and activation, on input views, odd sizes, decode and
// prefill rows.
TEST_P(LinearFused, BiasFirstCombinationsOnInputViews) {
  for (const DType dt : {DType::F32, DType::F64})
    for (const int64_t M : {1, 6, 67})
      for (const Act a : {Act::None, Act::GeluErf, Act::Relu})
        for (const bool bias : {false, true})
          for (const bool residual : {false, true})
            for (const int x_view : {0, 1, 2}) {
              SCOPED_TRACE("x view " + std::to_string(x_view) + " act " + std::to_string(int(a)));
              check({M, 45, 29, {.act = a}, bias, residual}, dt, x_view == 1 ? 1 : 0, x_view);
            }
}

TEST_P(LinearFused, BatchDimsEmptyAndStridedInput) {
  const Tensor w = Tensor::from_vector(test::random_normal(6 * 16, 5, 1), Shape{6, 16}).to(dev());
  const Tensor x = Tensor::from_vector(test::random_normal(2 * 3 * 16, 6, 1), Shape{2, 3, 16}).to(dev());
  const Tensor r = Tensor::from_vector(test::random_normal(2 * 3 * 6, 7, 1), Shape{2, 3, 6}).to(dev());
  const Tensor got = linear(x, w, {}, r, {.act = Act::Relu});
  const Tensor want = relu(matmul(x, w.t())) + r;
  EXPECT_LT(max(abs(got - want)).to(DType::F64).item<double>(), 1e-5);
  // x's rows strided (every other column): taken as they are or copied, same values.
  const Tensor wide = Tensor::from_vector(test::random_normal(3 * 32, 8, 1), Shape{3, 32}).to(dev());
  const Tensor xs = wide.reshape({3, 16, 2}).select(2, 0);
  EXPECT_LT(max(abs(linear(xs, w) - matmul(xs.contiguous(), w.t()))).to(DType::F64).item<double>(), 1e-5);
  EXPECT_EQ(linear(Tensor::empty(Shape{0, 16}, DType::F32, dev()), w).shape(), (Shape{0, 6}));
  // K == 0: the product is zero and the epilogue still applies.
  const Tensor b = Tensor::from_vector(std::vector<float>{1, -2}, Shape{2}).to(dev());
  const Tensor y0 = linear(Tensor::empty(Shape{3, 0}, DType::F32, dev()), Tensor::empty(Shape{2, 0}, DType::F32, dev()),
                           b, {}, {.act = Act::Relu});
  EXPECT_EQ(y0.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 0, 1, 0, 1, 0}));
}

TEST_P(LinearFused, EpilogueOnF32ProductIntoHalf) {
  // What a quantized linear does: quant_matmul's f32 product, the epilogue casting to f16.
  const auto [y, yv] = test::rounded_random(Shape{3, 20}, DType::F32, dev(), 9);
  const auto [b, bv] = test::rounded_random(Shape{20}, DType::F16, dev(), 10);
  const auto [r, rv] = test::rounded_random(Shape{3, 10}, DType::F16, dev(), 11);
  const Tensor out = linear_epilogue(y, b, r, {.act = Act::Silu, .glu = true}, DType::F16);
  ASSERT_EQ(out.dtype(), DType::F16);
  const std::vector<double> got = out.to(DType::F64).to_vector<double>();
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t n = 0; n < 10; ++n) {
      const double g = yv[size_t(m * 20 + n)] + bv[size_t(n)], u = yv[size_t(m * 20 + 10 + n)] + bv[size_t(10 + n)];
      const double want = test::epilogue_act(Act::Silu, g) * u + rv[size_t(m * 10 + n)];
      EXPECT_NEAR(got[size_t(m * 10 + n)], want, 2e-3 * (std::abs(want) + 1));
    }
}

// The one activation enum: configs' names map to what they compute ("gelu" is erf, the
// *_tanh / _new / _fast names the tanh approximation), and activate(x, a) applies it as an op
// (against the same double-precision reference as the epilogue).
TEST_P(LinearFused, ActivationNamesAndTheirOp) {
  const struct {
    const char* name;
    Act act;
  } names[] = {{"silu", Act::Silu},         {"swish", Act::Silu},         {"gelu_pytorch_tanh", Act::GeluTanh},
               {"gelu_new", Act::GeluTanh}, {"gelu_fast", Act::GeluTanh}, {"gelu", Act::GeluErf},
               {"relu", Act::Relu}};
  for (const auto& n : names) EXPECT_EQ(activation_named(n.name, "test"), n.act) << n.name;
  EXPECT_WICK_ERROR(activation_named("quick_gelu", "model: config key 'act'"), Unsupported,
                    "model: config key 'act' names activation 'quick_gelu' (supported: silu, swish");
  const std::vector<float> v = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f};
  const Tensor x = Tensor::from_vector(v).to(dev());
  for (const Act a : {Act::None, Act::Silu, Act::GeluTanh, Act::GeluErf, Act::Relu}) {
    const std::vector<float> got = activate(x, a).to(Device::cpu()).to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_NEAR(got[i], test::epilogue_act(a, double(v[i])), 1e-6) << int(a) << " at " << v[i];
  }
}

TEST_P(LinearFused, ClearErrors) {
  const Tensor x = Tensor::empty(Shape{2, 8}, DType::F32, dev());
  const Tensor w = Tensor::empty(Shape{5, 8}, DType::F32, dev());
  EXPECT_EQ(test::thrown_kind([&] { linear(x, w, {}, {}, {.glu = true}); }), ErrorKind::ShapeMismatch);  // odd rows
  EXPECT_EQ(test::thrown_kind([&] {
              linear(x, w, {}, Tensor::empty(Shape{2, 4}, DType::F32, dev()), {});
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x, w, Tensor::empty(Shape{5}, DType::F16, dev()), {}, {}); }),
            ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x, w, Tensor::empty(Shape{4}, DType::F32, dev()), {}, {}); }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] {
              linear(x, Tensor::empty(Shape{5, 7}, DType::F32, dev()));
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x.to(DType::I64), w.to(DType::I64)); }), ErrorKind::DTypeMismatch);
  // Mixed dtypes: only an f32 input over an f16/bf16 weight.
  EXPECT_EQ(test::thrown_kind([&] { linear(x.to(DType::F16), w); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x.to(DType::BF16), w.to(DType::F16)); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x, w.to(DType::F64)); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear(x, w.to(DType::F16), Tensor::empty(Shape{5}, DType::F16, dev())); }),
            ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { linear_epilogue(x, {}, {}, {}, DType::I64); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { rms_norm_linear(x, Tensor::empty(Shape{7}, DType::F32, dev()), 1e-5, w); }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { rms_norm_linear(x, Tensor::empty(Shape{8}, DType::F32, dev()), -1, w); }),
            ErrorKind::InvalidArgument);
  EXPECT_EQ(test::thrown_kind([&] { rms_norm_linear(x, Tensor(), 1e-5, w); }), ErrorKind::InvalidArgument);
  EXPECT_EQ(test::thrown_kind([&] {
              linear_epilogue(Tensor::empty(Shape{2, 7}, DType::F32, dev()), {}, {}, {.glu = true}, DType::F32);
            }),
            ErrorKind::ShapeMismatch);
}

WICK_INSTANTIATE_DEVICE_TEST(LinearFused);

}  // namespace
}  // namespace wick
