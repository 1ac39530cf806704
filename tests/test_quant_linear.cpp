// quant_linear / rms_norm_quant_linear (wick/quant.h): the fused linear for a packed weight,
// against a double-precision reference computed here from the dequantized weight (bit-exact
// with the CPU decoder) and the rounded inputs. On CUDA the small-M cases run the one
// matrix-vector kernel that stages x in its dtype, normalizes it and writes the epilogue;
// larger M, x too long to stage, and glu take the other routes; the CPU goes by parts.
// With q8 activations x is rounded to q8_0 per 32 values first: the reference rounds its
// own (unrounded) normalized x, and a value that lands on the other side of a rounding
// boundary moves one quantum, so that case is held to a share of the rounding's budget.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/devices.h"
#include "support/linear_reference.h"
#include "support/thrown.h"
#include "wick/quant.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Act = Activation;

struct Case {
  GgmlType type;
  DType x_dtype;
  QuantActivation qact;
  int64_t M, K, N;  // N outputs (2N weight rows with glu)
  bool norm = false, bias = false, residual = false;
  LinearEpilogue e = {};
  std::optional<DType> out_dtype = {};
};

class QuantLinear : public test::DeviceTest {
 protected:
  void check(const Case& c) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(c.type) << " x " << c.x_dtype << " q8 "
                                    << (c.qact == QuantActivation::Q8) << " M " << c.M << " K " << c.K << " N " << c.N
                                    << " norm " << c.norm << " glu " << c.e.glu);
    const int64_t rows = c.e.glu ? 2 * c.N : c.N;
    const DType out_dt = c.out_dtype.value_or(c.x_dtype);
    const QuantTensor wq =
        quantize(Tensor::from_vector(test::random_normal(size_t(rows * c.K), 2, 0.2f), Shape{rows, c.K}), c.type, "w");
    const std::vector<double> wv = dequantize(wq, DType::F32).to(DType::F64).to_vector<double>();
    Tensor x;
    std::vector<double> hv;  // not a structured binding: the checks' lambda captures it
    std::tie(x, hv) = test::rounded_random(Shape{c.M, c.K}, c.x_dtype, dev(), 1);
    Tensor g, b, r;
    std::vector<double> gv, bv(size_t(rows), 0.0), rv(size_t(c.M * c.N), 0.0);
    if (c.norm) {
      std::tie(g, gv) = test::rounded_random(Shape{c.K}, c.x_dtype, dev(), 12);
      test::rms_normalize(hv, gv, c.M, c.K);  // in double, unrounded
    }
    if (c.bias) std::tie(b, bv) = test::rounded_random(Shape{rows}, out_dt, dev(), 3);
    if (c.residual) std::tie(r, rv) = test::rounded_random(Shape{c.M, c.N}, out_dt, dev(), 4);
    // With q8 activations: what x becomes and each value's quantum d. Per 32 values to q8_0
    // (d = max|x| / 127 rounded to f16), or on the CPU for the K-quants per 256 to q8_K as
    // ggml's CPU rounds them (d = max|x| / 127 in f32; here in double, which the tolerance's
    // quanta cover).
    std::vector<double> quantum(hv.size(), 0.0);
    if (c.qact == QuantActivation::Q8) {
      std::vector<float> hf(hv.begin(), hv.end());
      const size_t block = dev().is_cpu() && ggml_type_info(c.type).block_elems == 256 ? 256 : 32;
      if (block == 32) {
        const Tensor ht = Tensor::from_vector(hf, Shape{c.M, c.K});
        hv = dequantize(quantize(ht, GgmlType::Q8_0), DType::F32).to(DType::F64).to_vector<double>();
      }
      for (size_t i = 0; i < hf.size(); i += block) {
        float amax = 0;
        for (size_t j = i; j < i + block; ++j) amax = std::max(amax, std::abs(hf[j]));
        for (size_t j = i; j < i + block; ++j) {
          quantum[j] = amax / 127.0;
          if (block == 256) hv[j] = amax == 0 ? 0.0 : std::nearbyint(hf[j] / quantum[j]) * quantum[j];
        }
      }
    }
    const Tensor out = c.norm ? rms_norm_quant_linear(x, g, 1e-5, wq.to(dev()), c.qact, b, r, c.e, c.out_dtype)
                              : quant_linear(x, wq.to(dev()), c.qact, b, r, c.e, c.out_dtype);
    ASSERT_EQ(out.shape(), (Shape{c.M, c.N}));
    ASSERT_EQ(out.dtype(), out_dt);
    const std::vector<double> got = out.to(DType::F64).to_vector<double>();
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double mag = 0, flips = 0;  // sum |h w|; sum quantum |w| (every value one quantum off)
        auto dot = [&](int64_t row) {
          double s = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const size_t i = size_t(m * c.K + k), j = size_t(row * c.K + k);
            s += hv[i] * wv[j];
            mag += std::abs(hv[i] * wv[j]);
            flips += quantum[i] * std::abs(wv[j]);
          }
          return s + bv[size_t(row)];
        };
        const double p = dot(n);
        const double up = c.e.glu ? dot(c.N + n) : 1.0;
        const double act = test::epilogue_act(c.e.act, p);
        const double want = (c.e.glu ? act * up : act) + rv[size_t(m * c.N + n)];
        // Roundings: f32 sums and the normalized x (in x's dtype on the by-parts route), the
        // output's dtype; with q8 a few values a quantum off. Past 8 rows CUDA may multiply
        // dequantized bands of W in x's dtype (a 16-bit W value within half an ulp; past 16
        // rows by default, WICK_CUDA_QUANT_MATVEC_ROWS moves that).
        const double gate = c.e.glu ? std::abs(up) + 1 : 1;
        const bool bands = dev().is_cuda() && c.M > 8 && c.x_dtype != DType::F32;
        const double x_round = c.norm || bands ? test::unit_roundoff(c.x_dtype) : 0x1p-20;
        const double scale =
            std::abs(want) + (mag + std::abs(bv[size_t(n)])) * gate + std::abs(rv[size_t(m * c.N + n)]);
        const double tol =
            4 * std::max({test::unit_roundoff(out_dt), x_round, 0x1p-20}) * scale + 0.1 * flips * gate + 1e-9;
        ASSERT_NEAR(got[size_t(m * c.N + n)], want, tol) << "m " << m << " n " << n;
      }
  }
};

const GgmlType kTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K};
const DType kXTypes[] = {DType::F32, DType::F16, DType::BF16};
const QuantActivation kActs[] = {QuantActivation::F32, QuantActivation::Q8};

// M 1 and 3 (one kernel), 9 and 70 (past the matrix-vector route on CUDA: 16-bit bands).
TEST_P(QuantLinear, EveryTypeDtypeAndRowCount) {
  for (const GgmlType t : kTypes)
    for (const DType dt : kXTypes)
      for (const QuantActivation a : kActs)
        for (const int64_t M : {1, 3, 9, 70}) check({t, dt, a, M, 512, 37});
}

TEST_P(QuantLinear, RmsNormFirst) {
  for (const GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K})
    for (const DType dt : kXTypes)
      for (const QuantActivation a : kActs)
        for (const int64_t M : {1, 5, 8, 12}) check({t, dt, a, M, 256, 21, true});
}

TEST_P(QuantLinear, Epilogues) {
  for (const DType dt : kXTypes)
    for (const QuantActivation a : kActs)
      for (const int64_t M : {1, 4, 17}) {
        check({GgmlType::Q4_0, dt, a, M, 256, 19, false, true, true});
        check({GgmlType::Q6_K, dt, a, M, 256, 19, true, true, true, {.act = Act::Silu}});
        check({GgmlType::Q8_0, dt, a, M, 256, 19, true, false, false, {.act = Act::GeluTanh}, DType::F32});
        // [gate; up]: the product, then one epilogue pass.
        check({GgmlType::Q4_K, dt, a, M, 256, 24, true, true, true, {.act = Act::Silu, .glu = true}});
      }
}

// x too long for the kernel's shared memory (16 KB for one q8 row): converted or normalized
// x goes by parts; plain f32 x still takes the kernel.
TEST_P(QuantLinear, RowsTooLongToStage) {
  for (const DType dt : {DType::F32, DType::F16})
    for (const QuantActivation a : kActs) {
      check({GgmlType::Q8_0, dt, a, 1, 16384, 3});
      check({GgmlType::Q4_K, dt, a, 2, 16384, 5, true, true, true});
    }
}

TEST_P(QuantLinear, BatchDimsStridedAndEmptyInput) {
  const QuantTensor w =
      quantize(Tensor::from_vector(test::random_normal(6 * 64, 5, 1), Shape{6, 64}), GgmlType::Q8_0, "w").to(dev());
  const Tensor x = Tensor::from_vector(test::random_normal(2 * 3 * 64, 6, 1), Shape{2, 3, 64}).to(dev());
  const Tensor got = quant_linear(x, w, QuantActivation::F32);
  ASSERT_EQ(got.shape(), (Shape{2, 3, 6}));
  const Tensor want = quant_matmul(x.reshape({6, 64}), w).reshape({2, 3, 6});
  EXPECT_LT(max(abs(got - want)).to(DType::F64).item<double>(), 1e-5);
  // x's rows strided (every other value): the same values as the contiguous copy.
  const Tensor wide = Tensor::from_vector(test::random_normal(3 * 128, 8, 1), Shape{3, 128}).to(dev());
  const Tensor xs = wide.reshape({3, 64, 2}).select(2, 0);
  EXPECT_LT(max(abs(quant_linear(xs, w, QuantActivation::Q8) - quant_linear(xs.contiguous(), w, QuantActivation::Q8)))
                .to(DType::F64)
                .item<double>(),
            1e-6);
  EXPECT_EQ(quant_linear(Tensor::empty(Shape{0, 64}, DType::F16, dev()), w, QuantActivation::Q8).shape(),
            (Shape{0, 6}));
}

TEST_P(QuantLinear, ClearErrors) {
  const QuantTensor w =
      quantize(Tensor::from_vector(test::random_normal(6 * 64, 5, 1), Shape{6, 64}), GgmlType::Q4_0, "w").to(dev());
  const Tensor x = Tensor::empty(Shape{2, 64}, DType::F32, dev());
  const auto q8 = QuantActivation::Q8;
  EXPECT_EQ(test::thrown_kind([&] {
              quant_linear(Tensor::empty(Shape{2, 32}, DType::F32, dev()), w, q8);
            }),
            ErrorKind::ShapeMismatch);  // K
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x.to(DType::F64), w, q8); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x.to(DType::I64), w, q8); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(quant_linear(x, w, q8, {}, {}, {.glu = true}).shape(), (Shape{2, 3}));  // 6 rows: [gate; up] of 3
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x, w, q8, {}, {}, {}, DType::F64); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x, w, q8, Tensor::empty(Shape{6}, DType::F16, dev())); }),
            ErrorKind::DTypeMismatch);
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x, w, q8, Tensor::empty(Shape{5}, DType::F32, dev())); }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] {
              quant_linear(x, w, q8, {}, Tensor::empty(Shape{2, 5}, DType::F32, dev()));
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(
      test::thrown_kind([&] { rms_norm_quant_linear(x, Tensor::empty(Shape{63}, DType::F32, dev()), 1e-5, w, q8); }),
      ErrorKind::ShapeMismatch);
  EXPECT_EQ(
      test::thrown_kind([&] { rms_norm_quant_linear(x, Tensor::empty(Shape{64}, DType::F16, dev()), 1e-5, w, q8); }),
      ErrorKind::DTypeMismatch);
  EXPECT_EQ(
      test::thrown_kind([&] { rms_norm_quant_linear(x, Tensor::empty(Shape{64}, DType::F32, dev()), -1, w, q8); }),
      ErrorKind::InvalidArgument);
  EXPECT_EQ(test::thrown_kind([&] { rms_norm_quant_linear(x, Tensor(), 1e-5, w, q8); }), ErrorKind::InvalidArgument);
  QuantTensor lying = w;
  lying.shape = Shape{7, 64};  // holds 6 rows' bytes
  EXPECT_EQ(test::thrown_kind([&] { quant_linear(x, lying, q8); }), ErrorKind::ShapeMismatch);
  if (dev().is_cuda()) {
    EXPECT_EQ(test::thrown_kind([&] { quant_linear(x.to(Device::cpu()), w, q8); }), ErrorKind::DeviceMismatch);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(QuantLinear);

}  // namespace
}  // namespace wick
