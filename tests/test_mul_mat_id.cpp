// mul_mat_id (wick/experts.h), the expert-indexed product of MoE layers, against a
// double-precision reference computed here: each (token, slot) row of x times the expert its
// id names, from the values the dtypes (or the ggml blocks, dequantized bit-exactly) hold.
// Float experts in f32, f16, bf16 and 16-bit under an f32 x; packed experts of three block
// types; x shared by a token's slots or one row per slot; a glu epilogue; ids that leave
// experts unused or send every row to one; and the bad inputs, each a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/devices.h"
#include "support/linear_reference.h"
#include "support/thrown.h"
#include "wick/experts.h"
#include "wick/wick.h"

namespace wick {
namespace {

struct Case {
  DType x_dtype = DType::F32;
  DType w_dtype = DType::F32;           // float experts
  std::optional<GgmlType> packed = {};  // or packed ones
  int64_t N = 7, k = 2, E = 5, M = 12, K = 64;
  bool per_slot = false, glu = false, one_expert = false;
};

std::vector<int64_t> random_ids(const Case& c) {
  std::mt19937 rng(7);
  std::vector<int64_t> ids(size_t(c.N * c.k));
  for (int64_t n = 0; n < c.N; ++n) {
    std::vector<int64_t> all(size_t(c.E));
    for (int64_t e = 0; e < c.E; ++e) all[size_t(e)] = e;
    std::shuffle(all.begin(), all.end(), rng);  // k distinct experts per token, as a router picks
    for (int64_t s = 0; s < c.k; ++s) ids[size_t(n * c.k + s)] = c.one_expert ? 3 : all[size_t(s)];
  }
  return ids;
}

class MulMatId : public test::DeviceTest {
 protected:
  void check(const Case& c) {
    SCOPED_TRACE(testing::Message() << "x " << c.x_dtype << " w " << c.w_dtype << " packed "
                                    << (c.packed ? ggml_type_name(*c.packed) : "no") << " per_slot " << c.per_slot
                                    << " glu " << c.glu);
    const int64_t rows = c.glu ? 2 * c.M : c.M;
    const Tensor w32 =
        Tensor::from_vector(test::random_normal(size_t(c.E * rows * c.K), 2, 0.3f), Shape{c.E, rows, c.K});
    Tensor w;
    QuantTensor wq;
    std::vector<double> wv;
    if (c.packed) {
      wq = quantize(w32, *c.packed, "experts").to(dev());
      wv = dequantize(wq, DType::F32).to(DType::F64).to_vector<double>();
    } else {
      w = w32.to(c.w_dtype).to(dev());
      wv = w.to(DType::F64).to_vector<double>();
    }
    auto [x, xv] = test::rounded_random(c.per_slot ? Shape{c.N, c.k, c.K} : Shape{c.N, c.K}, c.x_dtype, dev(), 1);
    const std::vector<int64_t> idv = random_ids(c);
    const Tensor ids = Tensor::from_vector(idv, Shape{c.N, c.k}).to(dev());
    const LinearEpilogue e{.act = c.glu ? Activation::Silu : Activation::None, .glu = c.glu};
    const Tensor y = c.packed ? mul_mat_id(x, wq, ids, QuantActivation::F32, e) : mul_mat_id(x, w, ids, e);
    ASSERT_EQ(y.shape(), Shape({c.N, c.k, c.M}));
    ASSERT_EQ(y.dtype(), c.x_dtype);
    ASSERT_EQ(y.device(), dev());
    const std::vector<double> got = y.to(DType::F64).to_vector<double>();
    // Error budget per output: the output dtype's rounding of the value plus f32 summation
    // over K terms of the magnitudes.
    const double u = test::unit_roundoff(c.x_dtype);
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t s = 0; s < c.k; ++s) {
        const int64_t ex = idv[size_t(n * c.k + s)];
        const double* xr = &xv[size_t((c.per_slot ? n * c.k + s : n) * c.K)];
        auto dot = [&](int64_t row, double& mag) {
          double acc = 0;
          mag = 0;
          for (int64_t q = 0; q < c.K; ++q) {
            const double p = xr[q] * wv[size_t((ex * rows + row) * c.K + q)];
            acc += p;
            mag += std::fabs(p);
          }
          return acc;
        };
        for (int64_t m = 0; m < c.M; ++m) {
          double mag = 0, mag_up = 0, want = dot(m, mag);
          if (c.glu) {
            const double up = dot(c.M + m, mag_up);
            want = test::epilogue_act(Activation::Silu, want) * up;
            mag = mag * std::fabs(up) + mag_up * (std::fabs(want) + 1);
          }
          const double tol = 2 * u * std::fabs(want) + (c.K * 0x1p-23 + 2 * u) * mag + 1e-6;
          EXPECT_NEAR(got[size_t((n * c.k + s) * c.M + m)], want, tol)
              << "token " << n << " slot " << s << " row " << m;
        }
      }
  }
};

TEST_P(MulMatId, FloatExpertsMatchTheReference) {
  check({});
  check({.x_dtype = DType::F32, .w_dtype = DType::BF16});
  check({.x_dtype = DType::F32, .w_dtype = DType::F16});
  check({.x_dtype = DType::F16, .w_dtype = DType::F16});
  check({.x_dtype = DType::BF16, .w_dtype = DType::BF16, .per_slot = true});
  check({.per_slot = true, .glu = true});
  check({.N = 5, .k = 1, .one_expert = true});  // every row to expert 3, the others unused
  check({.N = 1, .k = 4, .E = 8});              // a decode step: one token, top 4 of 8 (pair by pair on every device)
  // More pairs than a CUDA call takes on the device: grouped by expert on the host there too.
  check({.N = 600, .k = 2, .E = 6, .M = 8, .K = 32});
}

TEST_P(MulMatId, PackedExpertsMatchTheReference) {
  for (const GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    check({.packed = t});
    check({.x_dtype = DType::BF16, .packed = t, .per_slot = true});
  }
  check({.packed = GgmlType::Q4_K, .K = 256});
  check({.packed = GgmlType::Q4_K, .N = 1, .k = 3, .K = 256});  // one token: the backend's per-pair entry
  check({.packed = GgmlType::Q6_K, .K = 256, .glu = true});
}

TEST_P(MulMatId, QuantizedActivationsStayWithinTheirRounding) {
  // x rounded to 8-bit blocks as ggml does: within 2% of the product's scale.
  const QuantTensor w = quantize(Tensor::from_vector(test::random_normal(4 * 16 * 256, 3, 0.3f), Shape{4, 16, 256}),
                                 GgmlType::Q4_K, "experts")
                            .to(dev());
  const Tensor x = Tensor::from_vector(test::random_normal(3 * 256, 4, 1.0f), Shape{3, 256}).to(dev());
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{0, 3, 2, 1, 3, 0}, Shape{3, 2}).to(dev());
  const Tensor exact = mul_mat_id(x, w, ids, QuantActivation::F32);
  const Tensor rounded = mul_mat_id(x, w, ids, QuantActivation::Q8);
  const double scale = max(abs(exact)).to(DType::F64).to_vector<double>()[0];
  const double err = max(abs(exact - rounded)).to(DType::F64).to_vector<double>()[0];
  EXPECT_GT(err, 0.0);  // the rounding happened
  EXPECT_LE(err, 2e-2 * scale);
}

TEST_P(MulMatId, JoinedGateAndUpExpertsTakeOneGluProduct) {
  // What the CUDA loader does with a MoE layer's gate and up stacks: joined per expert, one
  // product with a glu epilogue equals act(gate) * up from the two stacks.
  auto stack = [&](uint32_t seed) {
    return quantize(Tensor::from_vector(test::random_normal(6 * 24 * 64, seed, 0.3f), Shape{6, 24, 64}), GgmlType::Q8_0,
                    "experts")
        .to(dev());
  };
  const QuantTensor gate = stack(8), up = stack(9);
  const QuantTensor joined = join_experts(gate, up);
  ASSERT_EQ(joined.shape, Shape({6, 48, 64}));
  const Tensor x = Tensor::from_vector(test::random_normal(5 * 64, 10, 1.0f), Shape{5, 64}).to(dev());
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{5, 0, 2, 3, 1, 5, 4, 2, 0, 1}, Shape{5, 2}).to(dev());
  const Tensor fused = mul_mat_id(x, joined, ids, QuantActivation::F32, {.act = Activation::Silu, .glu = true});
  const Tensor apart = activate(mul_mat_id(x, gate, ids, QuantActivation::F32), Activation::Silu) *
                       mul_mat_id(x, up, ids, QuantActivation::F32);
  ASSERT_EQ(fused.shape(), Shape({5, 2, 24}));
  const double scale = max(abs(apart)).to(DType::F64).to_vector<double>()[0];
  EXPECT_LE(max(abs(fused - apart)).to(DType::F64).to_vector<double>()[0], 1e-5 * scale);
  EXPECT_EQ(test::thrown_kind([&] {
              join_experts(gate, quantize(zeros(Shape{6, 24, 32}, DType::F32), GgmlType::Q8_0));
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(test::thrown_kind([&] {
              join_experts(gate, quantize(zeros(Shape{6, 24, 64}, DType::F32), GgmlType::Q4_0).to(dev()));
            }),
            ErrorKind::DTypeMismatch);
}

TEST_P(MulMatId, BadInputsAreClearErrors) {
  using test::thrown_kind;
  const Tensor w = zeros(Shape{4, 8, 16}, DType::F32, dev());
  const Tensor x = zeros(Shape{3, 16}, DType::F32, dev());
  auto ids = [&](std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, s).to(dev()); };
  const Tensor good = ids({0, 1, 2, 3, 1, 0}, Shape{3, 2});
  EXPECT_EQ(mul_mat_id(x, w, good).shape(), Shape({3, 2, 8}));
  EXPECT_EQ(thrown_kind([&] {
              (void)mul_mat_id(x, w, ids({0, 1, 2, 4, 1, 0}, Shape{3, 2})).to(Device::cpu());
            }),
            ErrorKind::IndexOutOfRange);
  EXPECT_EQ(thrown_kind([&] {
              (void)mul_mat_id(x, w, ids({0, 1, -1, 3, 1, 0}, Shape{3, 2})).to(Device::cpu());
            }),
            ErrorKind::IndexOutOfRange);
  EXPECT_EQ(thrown_kind([&] { mul_mat_id(x, w, ids({0, 1, 2}, Shape{3})); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(thrown_kind([&] { mul_mat_id(x, w, good.to(DType::F32)); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(thrown_kind([&] {
              mul_mat_id(zeros(Shape{3, 15}, DType::F32, dev()), w, good);
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(thrown_kind([&] {
              mul_mat_id(zeros(Shape{2, 16}, DType::F32, dev()), w, good);
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(thrown_kind([&] { mul_mat_id(x, w.select(0, 0), good); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(thrown_kind([&] {
              mul_mat_id(x, w, ids({0, 1, 2, 3, 1, 0}, Shape{3, 2}).to(Device::cpu()).reshape({2, 3}));
            }),
            ErrorKind::ShapeMismatch);
  const QuantTensor q = quantize(zeros(Shape{4, 8, 32}, DType::F32), GgmlType::Q8_0, "q");
  EXPECT_EQ(thrown_kind([&] { expert_matrix(q, 4); }), ErrorKind::IndexOutOfRange);
  EXPECT_EQ(expert_matrix(q, 3).shape, Shape({8, 32}));
}

WICK_INSTANTIATE_DEVICE_TEST(MulMatId);

}  // namespace
}  // namespace wick
