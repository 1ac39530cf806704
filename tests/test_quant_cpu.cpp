// The CPU's q8-activation quant_matmul kernels (backend/cpu/cpu_qdot_avx2.h): the AVX2
// activation quantizer against ggml's q8_0 reference rounding (quantize_run), the AVX2
// block dot products against their scalar references bit for bit, and both against the
// f64 product of the dequantized weight (the dequantize reference) with the
// q8-dequantized activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_qdot_avx2.h"
#include "backend/cpu/cpu_qdot_k.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"
#include "support/golden.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick {
namespace {

using cpu::qdot::ActQ8;

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = scale * (float(int64_t(s >> 40) % 20001) / 10000.0f - 1.0f);
  }
  return v;
}

// Activations with the awkward cases in: a zero block, exact halves (max 127 makes the
// scale 1, so x = k + 0.5 rounds away from zero), and a large outlier per row.
std::vector<float> activations(int64_t M, int64_t K, uint32_t seed) {
  std::vector<float> x = random_values(size_t(M * K), seed);
  for (int64_t m = 0; m < M; ++m) {
    float* r = x.data() + m * K;
    r[m % K] = 40.0f;
    if (K >= 64) {
      for (int j = 0; j < 32; ++j) r[K - 32 + j] = 0.0f;
    }
    if (K >= 96) {
      r[32] = 127.0f;
      for (int j = 1; j < 32; ++j) r[32 + j] = float(j % 7) - 3.5f + (j % 2 ? 0.0f : -60.0f);
    }
  }
  return x;
}

void expect_same_act(const ActQ8& a, const ActQ8& b) {
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.qs, b.qs);
  EXPECT_EQ(a.sum, b.sum);
  for (size_t i = 0; i < a.d.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(a.d[i]), std::bit_cast<uint32_t>(b.d[i]));
}

TEST(QuantCpu, ActivationQuantizerIsGgmlsQ8_0Rounding) {
  for (int64_t K : {32, 96, 256, 4096 + 32}) {
    SCOPED_TRACE(K);
    const int64_t M = 5;
    const std::vector<float> x = activations(M, K, uint32_t(K));
    ActQ8 simd, ref;
    cpu::qdot::quantize_act(x.data(), M, K, simd, true);
    cpu::qdot::quantize_act(x.data(), M, K, ref, false);
    expect_same_act(simd, ref);
    // The reference is quantize_run's q8_0 blocks, unpacked.
    std::vector<quant::BlockQ8_0> blk(size_t(M * K / 32));
    for (int64_t m = 0; m < M; ++m)
      quant::quantize_run(GgmlType::Q8_0, x.data() + m * K, reinterpret_cast<uint8_t*>(blk.data() + m * K / 32), K);
    for (size_t b = 0; b < blk.size(); ++b) {
      EXPECT_EQ(simd.d[b], quant::f16_value(blk[b].d));
      for (int j = 0; j < 32; ++j) EXPECT_EQ(simd.qs[b * 32 + j], blk[b].qs[j]) << "block " << b << " value " << j;
    }
  }
  // Halves round away from zero (roundf), not to even: x = 2.5 with scale 1 -> 3.
  std::vector<float> h(32, 0.0f);
  h[0] = 127.0f, h[1] = 2.5f, h[2] = -2.5f, h[3] = 0.5f, h[4] = -1.5f;
  ActQ8 a;
  cpu::qdot::quantize_act(h.data(), 1, 32, a);
  EXPECT_EQ(a.qs[1], 3);
  EXPECT_EQ(a.qs[2], -3);
  EXPECT_EQ(a.qs[3], 1);
  EXPECT_EQ(a.qs[4], -2);
}

// got against the f64 dot of weight row n (dequantized: wd) with activation row m as
// quantized (a), within f32 accumulation error.
void expect_near_f64_dot(float got, const ActQ8& a, const std::vector<float>& wd, int64_t m, int64_t n, int64_t K) {
  double exact = 0, mag = 0;
  for (int64_t k = 0; k < K; ++k) {
    const double xq = double(a.d[size_t((m * K + k) / 32)]) * a.qs[size_t(m * K + k)];
    exact += double(wd[size_t(n * K + k)]) * xq;
    mag += std::fabs(double(wd[size_t(n * K + k)]) * xq);
  }
  EXPECT_NEAR(got, exact, 1e-5 * mag + 1e-6) << "m=" << m << " n=" << n;
}

struct Case {
  GgmlType type;
  std::vector<int64_t> ks;
};

// The dot of each weight row with each activation row: the AVX2 kernel at every row
// count R and quant_matmul (threads, row grouping) equal the scalar reference bit for bit;
// all are within f32 accumulation error of the f64 product.
TEST(QuantCpu, BlockDotsMatchScalarReferenceAndF64) {
  std::vector<Case> cases = {{GgmlType::Q8_0, {32, 96, 800, 2304, 4096}},
                             {GgmlType::Q4_0, {32, 96, 800, 2304, 4096}},
                             {GgmlType::MXFP4, {32, 96, 800, 2304, 4096}}};
  const int64_t N = 3;
  for (const Case& c : cases) {
    for (int64_t K : c.ks) {
      const QuantTensor w =
          quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K) + 7, 0.5f), Shape{N, K}), c.type, "w");
      const size_t row_bytes = ggml_row_bytes(c.type, K, "test");
      const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
      const std::vector<float> wd = dequantize(w).to_vector<float>();
      for (int64_t M : {1, 2, 5, 9}) {
        SCOPED_TRACE(std::string(ggml_type_name(c.type)) + " K=" + std::to_string(K) + " M=" + std::to_string(M));
        const std::vector<float> x = activations(M, K, uint32_t(K * 31 + M));
        ActQ8 a, a_ref;
        cpu::qdot::quantize_act(x.data(), M, K, a, true);
        cpu::qdot::quantize_act(x.data(), M, K, a_ref, false);
        const Tensor got = quant_matmul(Tensor::from_vector(x, Shape{M, K}), w, QuantActivation::Q8);
        const std::vector<float> y = got.to_vector<float>();
        for (int64_t n = 0; n < N; ++n) {
          const uint8_t* row = wp + size_t(n) * row_bytes;
          std::vector<float> ref(static_cast<size_t>(M)), simd(static_cast<size_t>(M));
          for (int64_t m = 0; m < M; ++m) cpu::qdot::dot_rows(c.type, row, a_ref, m, 1, &ref[size_t(m)], 1, false);
          // quant_matmul takes the wide kernel (and its lane order) past kMaxRows rows where
          // the CPU has AVX-512 VNNI.
          std::vector<float> mm_ref = ref;
          if (M > cpu::qdot::kMaxRows && cpu::qdot::has_wide_kernel(c.type) && cpu::qdot::wide_available()) {
            cpu::qdot::prepare_wide(a_ref);
            for (int64_t m = 0; m < M; ++m)
              cpu::qdot::dot_rows_wide(c.type, row, a_ref, m, 1, &mm_ref[size_t(m)], 1, false);
          }
          for (int R = 1; R <= cpu::qdot::kMaxRows; ++R) {
            for (int64_t m = 0; m < M; m += R)
              cpu::qdot::dot_rows(c.type, row, a, m, int(std::min<int64_t>(R, M - m)), &simd[size_t(m)], 1, true);
            for (int64_t m = 0; m < M; ++m)
              EXPECT_EQ(std::bit_cast<uint32_t>(simd[size_t(m)]), std::bit_cast<uint32_t>(ref[size_t(m)]))
                  << "R=" << R << " m=" << m << " n=" << n << ": " << simd[size_t(m)] << " vs " << ref[size_t(m)];
          }
          for (int64_t m = 0; m < M; ++m) {
            EXPECT_EQ(std::bit_cast<uint32_t>(y[size_t(m * N + n)]), std::bit_cast<uint32_t>(mm_ref[size_t(m)]))
                << "quant_matmul m=" << m << " n=" << n;
            expect_near_f64_dot(ref[size_t(m)], a_ref, wd, m, n, K);
          }
        }
      }
    }
  }
}

// The wide (AVX-512 VNNI) kernel at every row count equals its scalar reference bit for bit
// (odd block counts: the last block alone in its register), and the reference is within f32
// accumulation error of the f64 product. Where the CPU lacks AVX-512 VNNI both sides are the
// reference; the lane order is still checked against f64.
TEST(QuantCpu, WideBlockDotsMatchTheirReferenceAndF64) {
  const int64_t N = 3, M = 9;
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::MXFP4}) {
    for (int64_t K : {32, 96, 800, 4096}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " K=" + std::to_string(K));
      const QuantTensor w =
          quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K) + 11, 0.5f), Shape{N, K}), type, "w");
      const size_t row_bytes = ggml_row_bytes(type, K, "test");
      const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
      const std::vector<float> wd = dequantize(w).to_vector<float>();
      const std::vector<float> x = activations(M, K, uint32_t(K * 17 + 3));
      ActQ8 a;
      cpu::qdot::quantize_act(x.data(), M, K, a, true);
      cpu::qdot::prepare_wide(a);
      for (int64_t n = 0; n < N; ++n) {
        const uint8_t* row = wp + size_t(n) * row_bytes;
        std::vector<float> ref(static_cast<size_t>(M)), got(static_cast<size_t>(M));
        for (int64_t m = 0; m < M; ++m) cpu::qdot::dot_rows_wide(type, row, a, m, 1, &ref[size_t(m)], 1, false);
        for (int R = 1; R <= cpu::qdot::kMaxWideRows; ++R) {
          for (int64_t m = 0; m < M; m += R)
            cpu::qdot::dot_rows_wide(type, row, a, m, int(std::min<int64_t>(R, M - m)), &got[size_t(m)], 1, true);
          for (int64_t m = 0; m < M; ++m)
            EXPECT_EQ(std::bit_cast<uint32_t>(got[size_t(m)]), std::bit_cast<uint32_t>(ref[size_t(m)]))
                << "R=" << R << " m=" << m << " n=" << n << ": " << got[size_t(m)] << " vs " << ref[size_t(m)];
        }
        for (int64_t m = 0; m < M; ++m) {
          expect_near_f64_dot(ref[size_t(m)], a, wd, m, n, K);
        }
      }
    }
  }
  ActQ8 unprepared;
  const std::vector<float> x = activations(2, 64, 5);
  cpu::qdot::quantize_act(x.data(), 2, 64, unprepared, true);
  std::vector<uint8_t> w(2 * sizeof(quant::BlockQ8_0));
  float y = 0;
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_wide(GgmlType::Q8_0, w.data(), unprepared, 0, 1, &y, 1), InvalidArgument,
                    "prepare_wide");
  cpu::qdot::prepare_wide(unprepared);
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_wide(GgmlType::Q4_K, w.data(), unprepared, 0, 1, &y, 1), Unsupported,
                    "no kernel for q4_K");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_wide(GgmlType::Q8_0, w.data(), unprepared, 1, 2, &y, 1), InvalidArgument,
                    "outside");
}

// Prefill-sized q8_0 / q4_0 products take the tile kernel (bands of 16 weight rows, one row
// per vector lane) where the CPU has AVX-512 VNNI: N = 37 is two bands and 5 rows for the row
// kernels. The tile's outputs equal its arithmetic written out here (per block the exact
// integer sum, then one fma with d_w * d_x) bit for bit, and every output is within f32
// accumulation error of the f64 product.
TEST(QuantCpu, TileKernelMatchesItsArithmeticAndF64) {
  const int64_t N = 37;
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::MXFP4}) {
    for (int64_t K : {32, 96, 800, 2048}) {
      const QuantTensor w =
          quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K) + 13, 0.5f), Shape{N, K}), type, "w");
      const size_t row_bytes = ggml_row_bytes(type, K, "test");
      const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
      const std::vector<float> wd = dequantize(w).to_vector<float>();
      for (int64_t M : {4, 5, 9, 64}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " K=" + std::to_string(K) + " M=" + std::to_string(M));
        const std::vector<float> x = activations(M, K, uint32_t(K * 5 + M));
        ActQ8 a;
        cpu::qdot::quantize_act(x.data(), M, K, a, true);
        const std::vector<float> y =
            quant_matmul(Tensor::from_vector(x, Shape{M, K}), w, QuantActivation::Q8).to_vector<float>();
        std::vector<float> tile(size_t(M * 16));
        const bool tiles = cpu::qdot::avx512_dot_tile(type, wp, row_bytes, a, tile.data(), 16);
        int bad = 0;
        for (int64_t n = 0; n < 16; ++n)
          for (int64_t m = 0; m < M && tiles; ++m) {
            float acc = 0;
            for (int64_t b = 0; b < K / 32; ++b) {
              const uint8_t* blk = wp + size_t(n) * row_bytes + size_t(b) * ggml_type_info(type).block_bytes;
              // Value i of the block is q(i) * d: ggml's layouts (blocks.h) written out.
              const bool mx = type == GgmlType::MXFP4;
              uint16_t dbits;
              std::memcpy(&dbits, blk, 2);
              const float d = mx ? quant::e8m0_half(blk[0]) : quant::f16_value(dbits);
              int32_t sum = 0;
              for (int i = 0; i < 32; ++i) {
                const int nibble =
                    mx ? (blk[1 + i % 16] >> (i < 16 ? 0 : 4)) & 0x0F : (blk[2 + i % 16] >> (i < 16 ? 0 : 4)) & 0x0F;
                const int q = type == GgmlType::Q8_0 ? int(int8_t(blk[2 + i]))
                              : mx                   ? quant::mxfp4_value(uint32_t(nibble))
                                                     : nibble - 8;
                sum += q * a.qs[size_t((m * K / 32 + b) * 32 + i)];
              }
              acc = std::fma(float(sum), d * a.d[size_t(m * K / 32 + b)], acc);
            }
            if (std::bit_cast<uint32_t>(tile[size_t(m * 16 + n)]) != std::bit_cast<uint32_t>(acc) && ++bad <= 3)
              ADD_FAILURE() << "tile m=" << m << " n=" << n << ": " << tile[size_t(m * 16 + n)] << " vs " << acc;
            if (std::bit_cast<uint32_t>(y[size_t(m * N + n)]) != std::bit_cast<uint32_t>(acc) && ++bad <= 3)
              ADD_FAILURE() << "quant_matmul m=" << m << " n=" << n;
          }
        EXPECT_EQ(bad, 0);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t m = 0; m < M; ++m) expect_near_f64_dot(y[size_t(m * N + n)], a, wd, m, n, K);
      }
    }
  }
}

// quant_matmul takes x through to(F32).contiguous(): a transposed, offset view gives the
// same bits as its contiguous copy.
TEST(QuantCpu, StridedActivationView) {
  const int64_t M = 5, K = 512, N = 4;
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    SCOPED_TRACE(ggml_type_name(type));
    const QuantTensor w = quantize(Tensor::from_vector(random_values(size_t(N * K), 3), Shape{N, K}), type, "w");
    const Tensor big = Tensor::from_vector(random_values(size_t((M + 2) * K), 4), Shape{K, M + 2});
    const Tensor view = big.narrow(1, 2, M).t();  // (M, K), strides (1, M + 2), offset 2
    ASSERT_FALSE(view.is_contiguous());
    const auto a = quant_matmul(view, w, QuantActivation::Q8).to_vector<float>();
    const auto b = quant_matmul(view.contiguous(), w, QuantActivation::Q8).to_vector<float>();
    EXPECT_EQ(a, b);
  }
}

TEST(QuantCpu, KernelErrors) {
  ActQ8 a;
  std::vector<float> x(64, 1.0f);
  EXPECT_WICK_ERROR(cpu::qdot::quantize_act(x.data(), 1, 40, a), ShapeMismatch, "K must be a multiple of 32");
  cpu::qdot::quantize_act(x.data(), 2, 32, a);
  std::vector<uint8_t> w(256);
  float y[4];
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows(GgmlType::Q5_0, w.data(), a, 0, 1, y, 1), Unsupported, "no kernel for q5_0");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows(GgmlType::Q8_0, w.data(), a, 1, 2, y, 1), InvalidArgument, "outside");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows(GgmlType::Q8_0, w.data(), a, 0, 0, y, 1), InvalidArgument, "outside");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows(GgmlType::Q4_K, w.data(), a, 0, 1, y, 1), Unsupported, "no kernel for q4_K");
}

// ---- K-quants against q8_K activations (cpu_qdot_k.h) -----------------------------------

using cpu::qdot::ActQ8K;

// N rows of K values of a K-quant type as random packed bytes with finite f16 factors in
// [2^-8, 2^-7) (wick quantizes to q4_K and q6_K but not to q2_K, q3_K or q5_K; every bit
// pattern of the quants and scales is a valid block).
QuantTensor random_k_blocks(GgmlType type, int64_t N, int64_t K, uint32_t seed) {
  const size_t row_bytes = ggml_row_bytes(type, K, "test"), bytes = size_t(N) * row_bytes;
  QuantTensor q{"w", type, Shape{N, K}, Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(bytes)})};
  auto* p = static_cast<uint8_t*>(q.bytes.mutable_data());
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (size_t i = 0; i < bytes; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = uint8_t(s >> 56);
  }
  std::vector<size_t> f16_at;  // the f16 factors' offsets in a block
  size_t block = 0;
  if (type == GgmlType::Q2_K)
    f16_at = {offsetof(quant::BlockQ2_K, d), offsetof(quant::BlockQ2_K, dmin)}, block = sizeof(quant::BlockQ2_K);
  if (type == GgmlType::Q3_K) f16_at = {offsetof(quant::BlockQ3_K, d)}, block = sizeof(quant::BlockQ3_K);
  if (type == GgmlType::Q5_K)
    f16_at = {offsetof(quant::BlockQ5_K, d), offsetof(quant::BlockQ5_K, dmin)}, block = sizeof(quant::BlockQ5_K);
  for (size_t b = 0; b < bytes / block; ++b)
    for (size_t at : f16_at) {
      const uint16_t h = uint16_t(0x1C00 | (p[b * block + at] & 0x3FF));  // 2^-8 * (1 + m / 1024)
      std::memcpy(p + b * block + at, &h, 2);
    }
  return q;
}

ActQ8K quantize_k(const std::vector<float>& x, int64_t M, int64_t K, bool simd) {
  ActQ8K a;
  cpu::qdot::resize_act_k(a, M, K);
  cpu::qdot::quantize_act_k_rows(x.data(), K, 0, M, a, simd);
  return a;
}

// ggml's quantize_row_q8_K_ref on hand-made blocks: the first value of largest magnitude
// maps to -127 (its sign sets the scale's), ties round to even, d = 1 / iscale, the sums of
// 16; an all-zero block is d = 0. The AVX2 quantizer gives the same bytes on activations
// with outliers, zero blocks and halves.
TEST(QuantCpuK, ActivationQuantizerIsGgmlsQ8_KRounding) {
  std::vector<float> x(512, 0.0f);
  x[3] = -127.0f, x[7] = 127.0f;  // the first of the two largest is -127: iscale = 1
  x[0] = 2.5f, x[1] = 1.5f, x[2] = -2.5f, x[16] = 0.5f, x[17] = 3.5f;
  for (bool simd : {false, true}) {
    SCOPED_TRACE(simd ? "avx2" : "reference");
    const ActQ8K a = quantize_k(x, 1, 512, simd);
    EXPECT_EQ(a.d[0], 1.0f);
    EXPECT_EQ(a.qs[3], -127);
    EXPECT_EQ(a.qs[7], 127);
    EXPECT_EQ(a.qs[0], 2);
    EXPECT_EQ(a.qs[1], 2);
    EXPECT_EQ(a.qs[2], -2);
    EXPECT_EQ(a.qs[16], 0);
    EXPECT_EQ(a.qs[17], 4);
    EXPECT_EQ(a.bsums[0], 2 + 2 - 2 - 127 + 127);
    EXPECT_EQ(a.bsums[1], 4);
    EXPECT_EQ(a.d[1], 0.0f);  // the second block is all zero
    for (int g = 16; g < 32; ++g) EXPECT_EQ(a.bsums[size_t(g)], 0);
  }
  for (int64_t K : {256, 768, 4096}) {
    SCOPED_TRACE(K);
    const int64_t M = 5;
    const std::vector<float> xs = activations(M, K, uint32_t(K + 1));
    const ActQ8K ref = quantize_k(xs, M, K, false), simd = quantize_k(xs, M, K, true);
    EXPECT_EQ(simd.qs, ref.qs);
    EXPECT_EQ(simd.bsums, ref.bsums);
    for (size_t i = 0; i < ref.d.size(); ++i)
      EXPECT_EQ(std::bit_cast<uint32_t>(simd.d[i]), std::bit_cast<uint32_t>(ref.d[i]));
    // Each value within half a step of its quantized form.
    for (int64_t i = 0; i < M * K; ++i) {
      const float d = ref.d[size_t(i / 256)];
      EXPECT_LE(std::fabs(d * ref.qs[size_t(i)] - xs[size_t(i)]), std::fabs(d) * 0.5f + 1e-6f) << i;
    }
  }
}

// Each K-quant weight row against each activation row: the kernel the CPU takes (AVX-512
// VNNI, or AVX2 under the avx2. prefix of ctest) at every row count R and quant_matmul equal
// the scalar reference bit for bit, and the reference is within f32 accumulation error of
// the f64 product of the dequantized weight with the q8_K-dequantized activations.
TEST(QuantCpuK, BlockDotsMatchScalarReferenceAndF64) {
  const int64_t N = 3;
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (int64_t K : {256, 768, 2304, 4096}) {
      const QuantTensor w =
          type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q5_K
              ? random_k_blocks(type, N, K, uint32_t(K))
              : quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K) + 7, 0.5f), Shape{N, K}), type,
                         "w");
      const size_t row_bytes = ggml_row_bytes(type, K, "test");
      const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
      const std::vector<float> wd = dequantize(w).to_vector<float>();
      for (int64_t M : {1, 2, 5, 9, 17}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " K=" + std::to_string(K) + " M=" + std::to_string(M));
        const std::vector<float> x = activations(M, K, uint32_t(K * 31 + M));
        const ActQ8K a = quantize_k(x, M, K, true);
        const std::vector<float> y =
            quant_matmul(Tensor::from_vector(x, Shape{M, K}), w, QuantActivation::Q8).to_vector<float>();
        for (int64_t n = 0; n < N; ++n) {
          const uint8_t* row = wp + size_t(n) * row_bytes;
          std::vector<float> ref(static_cast<size_t>(M)), got(static_cast<size_t>(M));
          for (int64_t m = 0; m < M; ++m) cpu::qdot::dot_rows_k(type, row, a, m, 1, &ref[size_t(m)], 1, false);
          for (int R = 1; R <= cpu::qdot::kMaxKRows; ++R) {
            for (int64_t m = 0; m < M; m += R)
              cpu::qdot::dot_rows_k(type, row, a, m, int(std::min<int64_t>(R, M - m)), &got[size_t(m)], 1, true);
            for (int64_t m = 0; m < M; ++m)
              EXPECT_EQ(std::bit_cast<uint32_t>(got[size_t(m)]), std::bit_cast<uint32_t>(ref[size_t(m)]))
                  << "R=" << R << " m=" << m << " n=" << n << ": " << got[size_t(m)] << " vs " << ref[size_t(m)];
          }
          for (int64_t m = 0; m < M; ++m) {
            EXPECT_EQ(std::bit_cast<uint32_t>(y[size_t(m * N + n)]), std::bit_cast<uint32_t>(ref[size_t(m)]))
                << "quant_matmul m=" << m << " n=" << n;
            double exact = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double xq = double(a.d[size_t((m * K + k) / 256)]) * a.qs[size_t(m * K + k)];
              exact += double(wd[size_t(n * K + k)]) * xq;
              mag += std::fabs(double(wd[size_t(n * K + k)]) * xq);
            }
            EXPECT_NEAR(ref[size_t(m)], exact, 1e-5 * mag + 1e-6) << "m=" << m << " n=" << n;
          }
        }
      }
    }
  }
}

// Prefill-sized products take the tile kernel (bands of 16 weight rows, each vector lane
// one row's sum) where the CPU has AVX-512 VNNI, and the row kernel for the rows past the
// last band: N = 37 is two bands and 5 rows. Every output equals the scalar reference bit
// for bit (the same integers, the same two roundings per super-block).
TEST(QuantCpuK, TileKernelMatchesTheReference) {
  const int64_t N = 37;
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (int64_t K : {256, 2304}) {
      const QuantTensor w =
          type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q5_K
              ? random_k_blocks(type, N, K, uint32_t(K) + 3)
              : quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K) + 5, 0.5f), Shape{N, K}), type,
                         "w");
      const size_t row_bytes = ggml_row_bytes(type, K, "test");
      const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
      for (int64_t M : {4, 5, 7, 17, 64}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " K=" + std::to_string(K) + " M=" + std::to_string(M));
        const std::vector<float> x = activations(M, K, uint32_t(K * 7 + M));
        const ActQ8K a = quantize_k(x, M, K, true);
        const std::vector<float> y =
            quant_matmul(Tensor::from_vector(x, Shape{M, K}), w, QuantActivation::Q8).to_vector<float>();
        std::vector<float> tile(size_t(M * 16));
        const bool tiles = cpu::qdot::avx512_dot_tile_k(type, wp, row_bytes, a, tile.data(), 16);
        int bad = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t m = 0; m < M; ++m) {
            float ref = 0;
            cpu::qdot::dot_rows_k(type, wp + size_t(n) * row_bytes, a, m, 1, &ref, 1, false);
            if (std::bit_cast<uint32_t>(y[size_t(m * N + n)]) != std::bit_cast<uint32_t>(ref) && ++bad <= 3)
              ADD_FAILURE() << "quant_matmul m=" << m << " n=" << n << ": " << y[size_t(m * N + n)] << " vs " << ref;
            if (tiles && n < 16 && std::bit_cast<uint32_t>(tile[size_t(m * 16 + n)]) != std::bit_cast<uint32_t>(ref) &&
                ++bad <= 3)
              ADD_FAILURE() << "tile m=" << m << " n=" << n << ": " << tile[size_t(m * 16 + n)] << " vs " << ref;
          }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

TEST(QuantCpuK, KernelErrors) {
  ActQ8K a;
  std::vector<float> x(512, 1.0f);
  EXPECT_WICK_ERROR(cpu::qdot::resize_act_k(a, 1, 288), ShapeMismatch, "K must be a multiple of 256");
  cpu::qdot::resize_act_k(a, 2, 256);
  EXPECT_WICK_ERROR(cpu::qdot::quantize_act_k_rows(x.data(), 256, 1, 3, a), InvalidArgument, "outside");
  cpu::qdot::quantize_act_k_rows(x.data(), 256, 0, 2, a);
  std::vector<uint8_t> w(sizeof(quant::BlockQ6_K));
  float y[9];
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_k(GgmlType::Q4_0, w.data(), a, 0, 1, y, 1), Unsupported, "no kernel for q4_0");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_k(GgmlType::Q6_K, w.data(), a, 1, 2, y, 1), InvalidArgument, "outside");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_k(GgmlType::Q6_K, w.data(), a, 0, 0, y, 1), InvalidArgument, "outside");
  EXPECT_WICK_ERROR(cpu::qdot::dot_rows_k(GgmlType::Q6_K, w.data(), a, 0, 9, y, 1), InvalidArgument, "outside");
}

}  // namespace
}  // namespace wick
