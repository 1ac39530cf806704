// Fused nn ops (softmax, log_softmax, layer_norm, rms_norm, linear) against PyTorch
// goldens from tests/data/gen_red.py.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "support/devices.h"
#include "support/golden.h"
#include "support/linear_reference.h"
#include "support/raw_golden.h"
#include "wick/nn.h"

namespace wick {
namespace {

using test::red_golden;

class NN : public test::DeviceTest {
 protected:
  Tensor g(const std::string& name) const { return red_golden().get(name).to(dev()); }
};

const DType kFloats[] = {DType::F64, DType::F32, DType::F16, DType::BF16};
double tol(DType dt) { return test::default_rtol(dt) * 4; }

TEST_P(NN, SoftmaxAndLogSoftmax) {
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    // The inputs are rounded to dt; log_softmax's error scales with |x| (up to 40).
    const Tensor x = g("nn.x").to(dt);
    EXPECT_EQ(softmax(x).dtype(), dt);
    EXPECT_CLOSE(softmax(x), g("nn.softmax"), tol(dt) * 20, tol(dt));
    EXPECT_CLOSE(log_softmax(x), g("nn.log_softmax"), tol(dt) * 20, tol(dt) * 40);
    // Transposed twice (non-unit last-dim stride) and offset views.
    const Tensor xt = x.t().contiguous().t();
    EXPECT_CLOSE(softmax(xt), g("nn.softmax"), tol(dt) * 20, tol(dt));
    EXPECT_CLOSE(
        log_softmax(x.narrow(0, 2, 3)), g("nn.log_softmax").narrow(0, 2, 3), tol(dt) * 20,
        tol(dt) * 40);  // And against the softmax of x as rounded to dt, computed in double: the kernels work in
    // f32 (f64 for f64; their exp within a few ulps) and round each output once, so each
    // probability is within an ulp of dt relative (f16's subnormals: absolutely within its
    // smallest step), each log-probability within an ulp plus f32's error on |x| <= 40. An
    // all-zero or doubled output fails.
    const std::vector<double> xr = x.to(Device::cpu()).to(DType::F64).to_vector<double>();
    const int64_t rows = x.dim(0), K = x.dim(1);
    std::vector<double> sm(xr.size()), lsm(xr.size());
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, z = 0;
      for (int64_t k = 0; k < K; ++k) mx = std::max(mx, xr[size_t(r * K + k)]);
      for (int64_t k = 0; k < K; ++k) z += std::exp(xr[size_t(r * K + k)] - mx);
      for (int64_t k = 0; k < K; ++k) {
        lsm[size_t(r * K + k)] = xr[size_t(r * K + k)] - mx - std::log(z);
        sm[size_t(r * K + k)] = std::exp(lsm[size_t(r * K + k)]);
      }
    }
    const double u = test::unit_roundoff(dt), work = dt == DType::F64 ? 1e-14 : 1e-5;
    EXPECT_CLOSE(softmax(x).to_vector<double>(), sm, u + work, dt == DType::F16 ? 0x1p-24 : 1e-300);
    EXPECT_CLOSE(log_softmax(x).to_vector<double>(), lsm, u, 50 * work);
  }
  // Large inputs do not overflow; a broadcast row gives identical rows.
  const Tensor big = Tensor::from_vector<float>({1000.f, 1000.f, -1000.f}).to(dev());
  EXPECT_CLOSE(softmax(big).to_vector<double>(), (std::vector<double>{0.5, 0.5, 0}), 1e-6, 1e-6);
  EXPECT_CLOSE(softmax(big.broadcast_as(Shape{2, 3})).to_vector<double>(),
               (std::vector<double>{0.5, 0.5, 0, 0.5, 0.5, 0}), 1e-6, 1e-6);
  // Edge shapes: scalar, size-1 rows, empty.
  EXPECT_EQ(softmax(full({}, Scalar(3.0), DType::F32, dev())).item<double>(), 1.0);
  EXPECT_EQ(log_softmax(full({4, 1}, Scalar(3.0), DType::F32, dev())).to_vector<double>(), std::vector<double>(4, 0));
  EXPECT_EQ(softmax(zeros({0, 5}, DType::F32, dev())).shape(), (Shape{0, 5}));
  EXPECT_EQ(softmax(zeros({3, 0}, DType::F32, dev())).shape(), (Shape{3, 0}));
}

// The f32 kernel uses its own vectorized exp: check it over the whole argument range,
// against double math on the same f32 inputs, and that -inf entries give exactly 0.
TEST_P(NN, SoftmaxF32ExpAccuracy) {
  const Tensor x = linspace(-95, 0, 1001, DType::F32, dev());
  const auto xv = x.to_vector<double>();
  double denom = 0;
  for (double v : xv) denom += std::exp(v);
  std::vector<double> expected, expected_log;
  for (double v : xv) {
    expected.push_back(std::exp(v) / denom);
    expected_log.push_back(v - std::log(denom));
  }
  EXPECT_CLOSE(softmax(x).to_vector<double>(), expected, 3e-6, 1e-44);
  EXPECT_CLOSE(log_softmax(x).to_vector<double>(), expected_log, 1e-6, 1e-5);
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor masked = Tensor::from_vector<float>({0.f, -inf, 1.f, -inf}).to(dev());
  const auto sm = softmax(masked).to_vector<double>();
  EXPECT_EQ(sm[1], 0.0);
  EXPECT_EQ(sm[3], 0.0);
  EXPECT_NEAR(sm[2], 1 / (1 + std::exp(-1.0)), 1e-7);
  EXPECT_TRUE(std::isnan(softmax(Tensor::from_vector<float>({1.f, NAN}).to(dev())).to_vector<double>()[0]));
}

TEST_P(NN, LayerNormAndRmsNorm) {
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = g("nn.x").to(dt), w = g("nn.w").to(dt), b = g("nn.b").to(dt);
    const double t = tol(dt) * 4;
    EXPECT_CLOSE(layer_norm(x, w, b, 1e-5), g("nn.layer_norm"), t, t);
    EXPECT_CLOSE(layer_norm(x, {}, {}, 1e-5), g("nn.layer_norm.plain"), t, t);
    EXPECT_CLOSE(rms_norm(x, w, 1e-6), g("nn.rms_norm"), t, t);
    EXPECT_CLOSE(rms_norm(x, {}, 1e-6), g("nn.rms_norm.plain"), t, t);
    // Strided input and strided (every other element) weight.
    Tensor w2 = zeros({66}, dt, dev());
    w2.slice(0, 0, 66, 2).copy_(w);
    EXPECT_CLOSE(layer_norm(x.t().contiguous().t(), w2.slice(0, 0, 66, 2), b, 1e-5), g("nn.layer_norm"), t,
                 t);  // And against the same normalizations in double of x, w and b as rounded to dt: the
    // kernels work in f32 (f64 for f64) and round each output once (two roundings allowed:
    // the scale and the shift), so a result 5% off fails in every dtype.
    const std::vector<double> xr = x.to(Device::cpu()).to(DType::F64).to_vector<double>();
    const std::vector<double> wr = w.to(Device::cpu()).to(DType::F64).to_vector<double>();
    const std::vector<double> br = b.to(Device::cpu()).to(DType::F64).to_vector<double>();
    const int64_t rows = x.dim(0), K = x.dim(1);
    std::vector<double> ln(xr.size()), rn(xr.size()), mag(xr.size());
    for (int64_t r = 0; r < rows; ++r) {
      double mu = 0, var = 0, ss = 0;
      for (int64_t k = 0; k < K; ++k) mu += xr[size_t(r * K + k)] / double(K);
      for (int64_t k = 0; k < K; ++k) {
        const double d = xr[size_t(r * K + k)] - mu;
        var += d * d / double(K);
        ss += xr[size_t(r * K + k)] * xr[size_t(r * K + k)] / double(K);
      }
      for (int64_t k = 0; k < K; ++k) {
        const size_t i = size_t(r * K + k);
        ln[i] = (xr[i] - mu) / std::sqrt(var + 1e-5) * wr[size_t(k)] + br[size_t(k)];
        rn[i] = xr[i] / std::sqrt(ss + 1e-6) * wr[size_t(k)];
      }
    }
    const double u2 = 2 * test::unit_roundoff(dt), work = dt == DType::F64 ? 1e-13 : 1e-5;
    EXPECT_CLOSE(layer_norm(x, w, b, 1e-5).to_vector<double>(), ln, u2 + work, work * 10);
    EXPECT_CLOSE(rms_norm(x, w, 1e-6).to_vector<double>(), rn, u2 + work, work * 10);
  }
  // A constant row normalizes to the bias; rank-0 and size-1 rows work.
  const Tensor c = full({2, 5}, Scalar(7.0), DType::F32, dev());
  EXPECT_EQ(layer_norm(c, {}, {}, 1e-5).to_vector<double>(), std::vector<double>(10, 0.0));
  EXPECT_NEAR(rms_norm(full({1}, Scalar(2.0), DType::F32, dev()), {}, 0).item<double>(), 1.0, 1e-6);
}

TEST_P(NN, Linear) {
  for (DType dt : {DType::F64, DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = g("nn.lx").to(dt), w = g("nn.lw").to(dt), b = g("nn.lb").to(dt);
    const double t = tol(dt) * 8;
    EXPECT_EQ(linear(x, w, b).shape(), (Shape{4, 3, 7}));
    EXPECT_CLOSE(linear(x, w, b), g("nn.linear"), t, t);
    EXPECT_CLOSE(linear(x, w), g("nn.linear.nobias"), t, t);
    EXPECT_CLOSE(linear(x.select(0, 1).select(0, 2), w, b), g("nn.linear").select(0, 1).select(0, 2), t, t);
  }
}

TEST_P(NN, BadArguments) {
  const Tensor x = zeros({2, 4}, DType::F32, dev());
  EXPECT_WICK_ERROR(softmax(zeros({2}, DType::I64, dev())), DTypeMismatch, "softmax: expected a floating-point tensor");
  EXPECT_WICK_ERROR(layer_norm(x, zeros({3}, DType::F32, dev()), {}, 1e-5), ShapeMismatch,
                    "layer_norm: weight must have shape [4]");
  EXPECT_WICK_ERROR(layer_norm(x, {}, zeros({4}, DType::F64, dev()), 1e-5), DTypeMismatch,
                    "layer_norm: bias dtype f64 differs from input dtype f32");
  EXPECT_WICK_ERROR(rms_norm(x, {}, -1), InvalidArgument, "rms_norm: eps must be non-negative");
  EXPECT_WICK_ERROR(linear(x, zeros({3, 5}, DType::F32, dev())), ShapeMismatch,
                    "linear: input of shape [2, 4] does not match weight of shape [3, 5]");
  EXPECT_WICK_ERROR(linear(x, zeros({3, 4}, DType::F32, dev()), zeros({4}, DType::F32, dev())), ShapeMismatch,
                    "linear: bias must have shape [3]");
}

WICK_INSTANTIATE_DEVICE_TEST(NN);

}  // namespace
}  // namespace wick
