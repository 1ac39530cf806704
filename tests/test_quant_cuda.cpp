// The quant family on CUDA: QuantTensor::to, dequantize bit-exact with the CPU for every
// ggml type (the ggml-generated fixtures of tests/data/gguf), and quant_matmul against the
// CPU result. The host test of the shared block decoders runs everywhere; the device
// cases run on cpu and cuda:0 (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "io/quant/block_decode.h"
#include "support/devices.h"
#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/graph.h"
#include "wick/quant.h"

namespace wick {
namespace {

std::string fixture(const std::string& name) { return test::data_path("gguf/" + name); }

const gguf::File& quants() {
  static const gguf::File f = gguf::File::open(fixture("quants.gguf"));
  return f;
}

// The fixture types: quants.gguf's (ggml's own fixtures) and mxfp4.gguf's (gen_mxfp4.py:
// gguf-py's reference, with subnormal and overflowing scales in t3d.mxfp4).
const std::vector<std::string> kTypes = {"f32",  "f16",  "bf16", "q4_0", "q4_1", "q5_0", "q5_1",
                                         "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4"};

const QuantTensor& fixture_tensor(const std::string& name) {
  static const gguf::File mxfp4 = gguf::File::open(fixture("mxfp4.gguf"));
  return name.find("mxfp4") != std::string::npos ? mxfp4.tensor(name) : quants().tensor(name);
}

// Every fixture tensor with a block-quantized or float type: w.* (8, 512), t3d.* (3-D),
// odd.* (rows not a multiple of 8).
std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const std::string& set : {"w", "t3d"})
    for (const std::string& type : kTypes) names.push_back(set + "." + type);
  names.push_back("odd.f16");
  names.push_back("odd.f32");
  return names;
}

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// ---- the shared block decoders on the host ------------------------------------------------

// The WICK_HD decoders the CUDA kernels run, executed on the host: value() and decode8()
// must reproduce the CPU dequantizer bit for bit on every fixture.
TEST(QuantBlockDecode, HostDecodersMatchCpuDequantizer) {
  for (const std::string& name : fixture_names()) {
    SCOPED_TRACE(name);
    const QuantTensor& q = fixture_tensor(name);
    const std::vector<float> want = dequantize(q).to_vector<float>();
    const int64_t rows = q.rows(), n = q.row_elems();
    const size_t row_bytes = ggml_row_bytes(q.type, n);
    const auto* src = static_cast<const uint8_t*>(q.bytes.data());
    std::vector<float> by_value(want.size()), by_chunk(want.size());
    quant::dispatch_decoder(q.type, [&]<class D>() {
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = src + size_t(r) * row_bytes;
        for (int64_t e = 0; e < n; ++e) by_value[size_t(r * n + e)] = D::value(row, e);
        if (n % 8 == 0)
          for (int64_t e0 = 0; e0 < n; e0 += 8) quant::decode8<D>(row, e0, &by_chunk[size_t(r * n + e0)]);
      }
    });
    EXPECT_TRUE(test::bits_equal(by_value, want)) << "value()";
    if (n % 8 == 0) EXPECT_TRUE(test::bits_equal(by_chunk, want)) << "decode8()";
  }
}

// decode8_affine (the CUDA matrix-vector product's decoding) gives decode8's values as
// a * u + b with exact products: fma(a, u, b) (a * u without an offset) is bit-exact, and
// every u is a small integer.
TEST(QuantBlockDecode, AffineDecodeMatchesDecode8) {
  for (const std::string& name : fixture_names()) {
    SCOPED_TRACE(name);
    const QuantTensor& q = fixture_tensor(name);
    const int64_t rows = q.rows(), n = q.row_elems();
    if (n % 8 != 0) continue;
    const size_t row_bytes = ggml_row_bytes(q.type, n);
    const auto* src = static_cast<const uint8_t*>(q.bytes.data());
    quant::dispatch_decoder(q.type, [&]<class D>() {
      // Decoders without their own decode8_affine give u = decode8's values, a = 1.
      constexpr bool has_own = requires { D::kAffineOffset; };
      int bad = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = src + size_t(r) * row_bytes;
        for (int64_t e0 = 0; e0 < n; e0 += 8) {
          float want[8], u[8], a = 0, b = 0;
          quant::decode8<D>(row, e0, want);
          quant::decode8_affine<D>(row, e0, u, a, b);
          if (!quant::kAffineOffsetOf<D>) {
            EXPECT_EQ(b, 0.0f);
          }
          for (int k = 0; k < 8; ++k) {
            const float got = quant::kAffineOffsetOf<D> ? std::fma(a, u[k], b) : a * u[k];
            if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want[k]) && ++bad <= 4)
              ADD_FAILURE() << "row " << r << " value " << e0 + k << ": " << got << " vs " << want[k];
            if (has_own && (u[k] != std::nearbyint(u[k]) || std::fabs(u[k]) > 128) && ++bad <= 4)
              ADD_FAILURE() << "u not a small integer: " << u[k];
          }
        }
      }
      EXPECT_EQ(bad, 0);
    });
  }
}

// The wide byte form (16 values per read, the q8 kernel of the 4-6 bit types) gives exactly
// decode8_bytes(e0) and decode8_bytes(e0 + kWideStride).
TEST(QuantBlockDecode, WideBytesMatchTwoDecode8Bytes) {
  int checked = 0;
  for (const std::string& name : fixture_names()) {
    const QuantTensor& q = fixture_tensor(name);
    const int64_t rows = q.rows(), n = q.row_elems();
    const size_t row_bytes = ggml_row_bytes(q.type, n);
    const auto* src = static_cast<const uint8_t*>(q.bytes.data());
    quant::dispatch_decoder(q.type, [&]<class D>() {
      if constexpr (quant::kHasWideBytes<D>) {
        SCOPED_TRACE(name);
        ++checked;
        for (int64_t r = 0; r < rows; ++r) {
          const uint8_t* row = src + size_t(r) * row_bytes;
          constexpr int S = D::kWideStride;
          for (int64_t e0 = 0; e0 < n; e0 += 8) {
            if (e0 % (2 * S) >= S) continue;  // a high half
            quant::Bytes8 low{}, high{};
            quant::decode16_bytes<D>(row, e0, low, high);
            const quant::Bytes8 want_low = quant::decode8_bytes<D>(row, e0),
                                want_high = quant::decode8_bytes<D>(row, e0 + S);
            ASSERT_EQ(low.lo, want_low.lo) << "row " << r << " value " << e0;
            ASSERT_EQ(low.hi, want_low.hi) << "row " << r << " value " << e0;
            ASSERT_EQ(high.lo, want_high.lo) << "row " << r << " value " << e0 + S;
            ASSERT_EQ(high.hi, want_high.hi) << "row " << r << " value " << e0 + S;
          }
        }
      }
    });
  }
  EXPECT_EQ(checked, 16);  // w.* and t3d.* of q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K, mxfp4
}

// ---- device cases -------------------------------------------------------------------------

class QuantDevice : public test::DeviceTest {};

TEST_P(QuantDevice, ToKeepsBytesPackedAndRoundTrips) {
  const QuantTensor& q = fixture_tensor("w.q4_k");
  const QuantTensor d = q.to(dev());
  EXPECT_EQ(d.device(), dev());
  EXPECT_EQ(d.type, q.type);
  EXPECT_EQ(d.shape, q.shape);
  EXPECT_EQ(d.name, q.name);
  EXPECT_EQ(d.bytes.nbytes(), q.bytes.nbytes());
  const QuantTensor back = d.to(Device::cpu());
  ASSERT_EQ(back.bytes.nbytes(), q.bytes.nbytes());
  EXPECT_EQ(std::memcmp(back.bytes.data(), q.bytes.data(), q.bytes.nbytes()), 0);
}

TEST_P(QuantDevice, DequantizeIsBitExactWithCpuForEveryType) {
  for (const std::string& name : fixture_names()) {
    const QuantTensor& q = fixture_tensor(name);
    const QuantTensor d = q.to(dev());
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      SCOPED_TRACE(name + " -> " + std::string(dtype_name(dt)));
      const Tensor got = dequantize(d, dt);
      EXPECT_EQ(got.device(), dev());
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_EQ(got.shape(), q.shape);
      EXPECT_TRUE(test::bits_equal(got.to_vector<float>(), dequantize(q, dt).to_vector<float>()));
    }
  }
}

TEST_P(QuantDevice, DequantizeEmpty) {
  QuantTensor q = quantize(Tensor::empty(Shape{0, 256}), GgmlType::Q4_K, "empty");
  const Tensor got = dequantize(q.to(dev()));
  EXPECT_EQ(got.shape(), (Shape{0, 256}));
  EXPECT_EQ(got.device(), dev());
}

// x (M, K) f32 rounded per 256 values to q8_K and back, by ggml's quantize_row_q8_K_ref
// written out here: the first value of largest magnitude maps to -127, ties to even.
Tensor round_to_q8_k(const Tensor& x) {
  std::vector<float> v = x.to(DType::F32).to_vector<float>();
  for (size_t i = 0; i < v.size(); i += 256) {
    float max = 0, amax = 0;
    for (size_t j = i; j < i + 256; ++j)
      if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), max = v[j];
    if (amax == 0) continue;
    const float iscale = -127.0f / max, d = 1.0f / iscale;
    for (size_t j = i; j < i + 256; ++j) v[j] = float(std::min(127.0f, std::nearbyint(iscale * v[j]))) * d;
  }
  return Tensor::from_vector(v, x.shape());
}

// quant_matmul on dev against the f64 product for the same x and W, with x first
// rounded for QuantActivation::Q8 as that mode promises on dev (per 32 to q8_0; per 256 to
// q8_K for the K-quants on the CPU): the product of the rounded x, whichever route computes
// it. Tolerance: f32 accumulation-order differences, relative to sum_k |x[m,k]| |W[n,k]|.
void expect_matmul_close(const Tensor& x_cpu, const Tensor& x_dev, const QuantTensor& w_cpu, Device dev,
                         QuantActivation act = QuantActivation::F32) {
  const QuantTensor w_dev = w_cpu.to(dev);
  const Tensor got = quant_matmul(x_dev, w_dev, act);
  EXPECT_EQ(got.device(), dev);
  EXPECT_EQ(got.dtype(), DType::F32);
  const int64_t M = x_cpu.dim(0), K = x_cpu.dim(1), N = w_cpu.shape[0];
  ASSERT_EQ(got.shape(), (Shape{M, N}));
  const std::vector<float> y = got.to_vector<float>();
  const bool q8_k = dev.is_cpu() && ggml_type_info(w_cpu.type).block_elems == 256;
  const Tensor x_ref = act != QuantActivation::Q8 ? x_cpu
                       : q8_k                     ? round_to_q8_k(x_cpu)
                                                  : dequantize(quantize(x_cpu, GgmlType::Q8_0));
  // The reference in double from the dequantized weight (dequantize is checked against
  // gguf-py's), not the CPU's quant_matmul, so the CPU cases do not compare it with itself.
  const std::vector<float> xv = x_cpu.to(DType::F32).to_vector<float>();
  const std::vector<float> xr = x_ref.to(DType::F32).to_vector<float>();
  const std::vector<float> wv = dequantize(w_cpu).to_vector<float>();
  std::vector<double> want(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) want[size_t(m * N + n)] += double(xr[size_t(m * K + k)]) * wv[size_t(n * K + k)];
  // Past 8 rows a 16-bit x may take the band route on CUDA (past 16 by default,
  // WICK_CUDA_QUANT_MATVEC_ROWS moves that): x and the dequantized band are rounded to x's
  // dtype for a tensor-core GEMM (each value within half an ulp: 2^-8 relative for bf16).
  const bool half_bands = dev.is_cuda() && M > 8 && (x_dev.dtype() == DType::F16 || x_dev.dtype() == DType::BF16);
  const double rel = half_bands ? 2 * (x_dev.dtype() == DType::BF16 ? 0x1p-8 : 0x1p-11) : 2e-5;
  int bad = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double mag = 0;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(xv[size_t(m * K + k)]) * wv[size_t(n * K + k)]);
      const double tol = rel * mag + 1e-6;
      const double diff = std::fabs(double(y[size_t(m * N + n)]) - want[size_t(m * N + n)]);
      if (!(diff <= tol) && ++bad <= 4)
        ADD_FAILURE() << "y[" << m << ", " << n << "] = " << y[size_t(m * N + n)] << ", cpu " << want[size_t(m * N + n)]
                      << " (tol " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(QuantDevice, MatmulMatchesCpuForTheMainTypes) {
  const int64_t N = 37, K = 512;
  const Tensor wsrc = Tensor::from_vector(random_values(size_t(N * K), 7), Shape{N, K});
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F16}) {
    const QuantTensor w = quantize(wsrc, type, "w");
    for (int64_t M : {1, 3, 8, 9, 16, 17, 64, 65}) {  // up to 16: matvec passes; more: bands
      for (DType dt : {DType::F32, DType::BF16}) {
        for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
          SCOPED_TRACE(std::string(ggml_type_name(type)) + " M=" + std::to_string(M) + " x " +
                       std::string(dtype_name(dt)) + (act == QuantActivation::Q8 ? " q8" : " f32"));
          const Tensor x = Tensor::from_vector(random_values(size_t(M * K), uint32_t(M)), Shape{M, K}).to(dt);
          expect_matmul_close(x, x.to(dev()), w, dev(), act);
        }
      }
    }
  }
}

TEST_P(QuantDevice, MatmulMatchesCpuForEveryFixtureType) {
  for (const std::string& type : kTypes) {
    const QuantTensor& w = fixture_tensor("w." + type);  // (8, 512)
    for (int64_t M : {1, 5, 9}) {
      SCOPED_TRACE(type + " M=" + std::to_string(M));
      const Tensor x = Tensor::from_vector(random_values(size_t(M * 512), uint32_t(M + 100)), Shape{M, 512});
      expect_matmul_close(x, x.to(dev()), w, dev());
    }
  }
}

// A (N, K) weight of type made of fixture rows: row n is the concatenation of K / 512 rows
// of w.<type> (K >= 512), or the first K values of one (K < 512, whole blocks), so every
// ggml type (not only those wick quantizes) gets any N and K.
QuantTensor fixture_weight(const std::string& type, int64_t N, int64_t K) {
  const QuantTensor& f = fixture_tensor("w." + type);  // (8, 512)
  const size_t f_row = ggml_row_bytes(f.type, 512), row_bytes = ggml_row_bytes(f.type, K);
  const auto* src = static_cast<const uint8_t*>(f.bytes.data());
  std::vector<uint8_t> bytes(row_bytes * size_t(N));
  for (int64_t n = 0; n < N; ++n) {
    for (size_t done = 0, part = 0; done < row_bytes; ++part) {
      const size_t take = std::min(f_row, row_bytes - done);
      std::memcpy(&bytes[size_t(n) * row_bytes + done], src + size_t((n * 3 + int64_t(part)) % 8) * f_row, take);
      done += take;
    }
  }
  QuantTensor w;
  w.name = "w." + type;
  w.type = f.type;
  w.shape = Shape{N, K};
  w.bytes = Tensor::from_vector(bytes, Shape{int64_t(bytes.size())}).storage();
  return w;
}

// The small-M product (M <= 8) for every type and M, odd N (a partial last group of
// rows), K = 2048 (16-byte aligned rows, several chunks with a partial last one, x in
// shared memory for M <= 4 and read from global memory above) and a short K whose rows
// are not 16-byte aligned for most types (the byte-copy path).
// Both activation forms (q8: the dp4a kernel for the block types with a byte form, x
// rounded then the f32 kernel for the others).
TEST_P(QuantDevice, SmallMMatmulMatchesCpuForEveryTypeAndShape) {
  for (const std::string& type : kTypes) {
    const bool k_quant = type.size() == 4 && type[3] == 'k';
    for (int64_t K : {int64_t(2048), int64_t(k_quant ? 256 : 96)}) {
      const QuantTensor w = fixture_weight(type, 37, K);
      for (int64_t M = 1; M <= 8; ++M) {
        for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
          SCOPED_TRACE(type + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
                       (act == QuantActivation::Q8 ? " q8" : " f32"));
          const Tensor x = Tensor::from_vector(random_values(size_t(M * K), uint32_t(M * 7 + K)), Shape{M, K});
          expect_matmul_close(x, x.to(dev()), w, dev(), act);
        }
      }
    }
  }
}

// Few rows and long ones: the kernel splits a row group's chunks over several warps
// (5120 values: 5 q4_0 chunks over 4 warps leaves one warp an empty slice, 7 q6_K
// chunks), and x too large for shared memory (K = 16384 with M = 1, K = 4096 with M = 8)
// is read from global memory, for the q8 form after a rounding pre-pass.
TEST_P(QuantDevice, SmallMMatmulSplitsLongRows) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    for (auto [N, K, M] : {std::array<int64_t, 3>{37, 5120, 1}, {37, 5120, 3}, {13, 16384, 1}, {13, 4096, 8}}) {
      const QuantTensor w = quantize(Tensor::from_vector(random_values(size_t(N * K), uint32_t(K)), Shape{N, K}), type);
      for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                     " M=" + std::to_string(M) + (act == QuantActivation::Q8 ? " q8" : " f32"));
        const Tensor x = Tensor::from_vector(random_values(size_t(M * K), uint32_t(M + K)), Shape{M, K});
        expect_matmul_close(x, x.to(dev()), w, dev(), act);
      }
    }
  }
}

// Enough rows that the persistent blocks take several rounds of row groups (the pipeline
// runs on from one round into the next; an H200 holds 4224 warps of the M = 1 q8 kernel).
TEST_P(QuantDevice, SmallMMatmulManyRows) {
  const int64_t N = 20001, K = 512;
  const Tensor wsrc = Tensor::from_vector(random_values(size_t(N * K), 61), Shape{N, K});
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q6_K}) {
    const QuantTensor w = quantize(wsrc, type, "w");
    for (int64_t M : {1, 2}) {
      for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " M=" + std::to_string(M) +
                     (act == QuantActivation::Q8 ? " q8" : " f32"));
        const Tensor x = Tensor::from_vector(random_values(size_t(M * K), uint32_t(62 + M)), Shape{M, K});
        expect_matmul_close(x, x.to(dev()), w, dev(), act);
      }
    }
  }
}

// Products chained on the device, each one's x the previous one's y, with no host
// synchronization between them: on CUDA the matrix-vector kernels launch with
// programmatic dependent launch (a product's grid may start while the previous kernel
// runs), so a missing dependency wait would read a stale x or race on y. The chain
// alternates a wide x (16384: read from global memory, after a rounding pre-pass in the
// q8 form) and a narrow one (256: staged in shared memory), in both activation forms,
// eagerly and recorded as a CUDA graph replayed twice; it must match the same chain on
// the CPU. The weights keep |W x| about |x|.
TEST_P(QuantDevice, ChainedProductsSeeThePreviousOutput) {
  const int64_t wide = 16384, narrow = 256;
  auto scaled = [](int64_t n, int64_t k, uint32_t seed) {
    return Tensor::from_vector(random_values(size_t(n * k), seed, 1.0f / std::sqrt(float(k))), Shape{n, k});
  };
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K}) {
    const QuantTensor down = quantize(scaled(narrow, wide, 71), type, "down");  // wide -> narrow
    const QuantTensor up = quantize(scaled(wide, narrow, 73), type, "up");      // narrow -> wide
    const QuantTensor down_d = down.to(dev()), up_d = up.to(dev());
    const Tensor x0 = Tensor::from_vector(random_values(size_t(wide), 72), Shape{1, wide});
    for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + (act == QuantActivation::Q8 ? " q8" : " f32"));
      auto chain = [&](Tensor x, const QuantTensor& wd, const QuantTensor& wu) {
        for (int step = 0; step < 4; ++step) x = quant_matmul(quant_matmul(x, wd, act), wu, act);
        return x;
      };
      const Tensor want = chain(x0, down, up);
      const double scale = test::max_abs(want);
      // f32: eight products in different summation orders, a few ulps each. q8: x is
      // rounded to q8_0 before every product, and a last-ulp difference can move a value
      // across a rounding boundary (one step of max|x| / 127 in one element). A stale or
      // raced x would be off by O(1).
      const double atol = (act == QuantActivation::Q8 ? 3e-2 : 1e-3) * scale;
      const Tensor xd0 = x0.to(dev());
      EXPECT_CLOSE(chain(xd0, down_d, up_d).to(Device::cpu()), want, 1e-3, atol);
      if (dev().is_cpu()) continue;
      Tensor out;
      const CudaGraph g = CudaGraph::capture(dev(), [&] { out = chain(xd0, down_d, up_d); });
      for (int replay = 0; replay < 2; ++replay) {
        g.replay();
        EXPECT_CLOSE(out.to(Device::cpu()), want, 1e-3, atol);
      }
    }
  }
}

// Products each right after a kernel that rewrites x IN PLACE, with no host
// synchronization between them: on CUDA the matrix-vector product launches with
// programmatic dependent launch, so its grid may start while that kernel still writes x,
// and it must not read x (nor the q8 pre-pass its rounding of x) before its
// griddepcontrol.wait. The rewrites rotate through three in-place ops, each a kernel
// launched right before the product: fill_ with a constant, copy_ from a strided (1, K)
// view (the elementwise copy kernel; a contiguous source would be a cudaMemcpyAsync) and
// index_copy_ of the previous product's output, tiled over K and scattered to permuted
// positions (so x also depends on the product before). A product that read x early would
// compute W times the previous x, i.e. repeat the previous output; the test checks on the
// CPU that every output is far from the previous one beyond the tolerance. K = 4096 (M = 1:
// x staged in shared memory by the product itself, in both activation forms) and 16384 (x
// read from global memory; in the q8 form after a rounding pre-pass, itself an ordinary
// launch after the rewrite), q4_0, q8_0 and q4_K, both forms, against the same sequence on
// the CPU. The weights keep |W x| about |x|.
TEST_P(QuantDevice, ProductsSeeAnInPlaceRewriteOfX) {
  const int64_t N = 256;
  constexpr int kSteps = 9;  // three rounds of the three rewrites
  for (int64_t K : {int64_t(4096), int64_t(16384)}) {
    const Tensor wsrc =
        Tensor::from_vector(random_values(size_t(N * K), uint32_t(K + 1), 1.0f / std::sqrt(float(K))), Shape{N, K});
    // Column s of sources, transposed, is step s's strided (1, K) copy source.
    const Tensor sources = Tensor::from_vector(random_values(size_t(K * kSteps), uint32_t(K + 2)), Shape{K, kSteps});
    std::vector<int64_t> perm(static_cast<size_t>(K));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::shuffle(perm.begin(), perm.end(), std::mt19937(uint32_t(K + 3)));
    const Tensor positions = Tensor::from_vector(perm, Shape{K});
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K}) {
      const QuantTensor w = quantize(wsrc, type, "w");
      const QuantTensor w_dev = w.to(dev());
      for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " K=" + std::to_string(K) +
                     (act == QuantActivation::Q8 ? " q8" : " f32"));
        // The whole sequence on wq's device, outputs kept (read back only afterwards).
        auto run = [&](const QuantTensor& wq) {
          const Device d = wq.device();
          const Tensor src = sources.to(d), pos = positions.to(d);
          Tensor x = zeros(Shape{1, K}, DType::F32, d);
          std::vector<Tensor> ys;
          for (int s = 0; s < kSteps; ++s) {
            switch (s % 3) {
              case 0: x.copy_(src.narrow(1, s, 1).t()); break;
              case 1: {
                const Tensor tiled = ys.back().reshape({1, 1, N}).expand(Shape{1, K / N, N}).reshape({1, K});
                index_copy_(x, 1, pos, tiled);
                break;
              }
              default: x.fill_((s % 2 ? -0.75 : 1.25) * double(1 + s / 3)); break;
            }
            ys.push_back(quant_matmul(x, wq, act));
          }
          return ys;
        };
        const std::vector<Tensor> got = run(w_dev), want = run(w);
        ASSERT_EQ(got.size(), want.size());
        for (int s = 0; s < kSteps; ++s) {
          SCOPED_TRACE("step " + std::to_string(s));
          const double scale = test::max_abs(want[size_t(s)]);
          // As ChainedProductsSeeThePreviousOutput: f32, summation-order differences; q8,
          // a last-ulp difference in the previous output can move one value of x across a
          // q8_0 rounding boundary.
          const double atol = (act == QuantActivation::Q8 ? 3e-2 : 1e-3) * scale;
          EXPECT_EQ(got[size_t(s)].device(), dev());
          EXPECT_CLOSE(got[size_t(s)].to(Device::cpu()), want[size_t(s)], 1e-3, atol);
          if (s > 0) {
            EXPECT_FALSE(test::all_close(want[size_t(s)], want[size_t(s - 1)], 1e-3, atol)) << "x unchanged";
          }
        }
      }
    }
  }
}

TEST_P(QuantDevice, MatmulTakesStridedActivations) {
  const int64_t N = 37, K = 256;
  const QuantTensor w =
      quantize(Tensor::from_vector(random_values(size_t(N * K), 11), Shape{N, K}), GgmlType::Q4_K, "w");
  for (int64_t M : {3, 17}) {
    SCOPED_TRACE("M=" + std::to_string(M));
    // A transposed view: (K, M) storage seen as (M, K).
    const Tensor xt = Tensor::from_vector(random_values(size_t(M * K), 12), Shape{K, M});
    expect_matmul_close(xt.t(), xt.to(dev()).t(), w, dev());
    // A narrowed view: rows of length K + 64 with an offset.
    const Tensor wide = Tensor::from_vector(random_values(size_t((M + 1) * (K + 64)), 13), Shape{M + 1, K + 64});
    const Tensor xn = wide.narrow(0, 1, M).narrow(1, 32, K);
    expect_matmul_close(xn, wide.to(dev()).narrow(0, 1, M).narrow(1, 32, K), w, dev());
    // A contiguous x whose data is not 16-byte aligned (offset by one element).
    const Tensor flat = Tensor::from_vector(random_values(size_t(M * K + 1), 14), Shape{M * K + 1});
    for (QuantActivation act : {QuantActivation::F32, QuantActivation::Q8})
      expect_matmul_close(flat.narrow(0, 1, M * K).reshape(Shape{M, K}),
                          flat.to(dev()).narrow(0, 1, M * K).reshape(Shape{M, K}), w, dev(), act);
  }
}

// K not a multiple of 8 (a float weight type) takes the banded path even for M = 1.
TEST_P(QuantDevice, MatmulOddK) {
  const int64_t N = 5, K = 13;
  const QuantTensor w = quantize(Tensor::from_vector(random_values(size_t(N * K), 21), Shape{N, K}), GgmlType::F16);
  for (int64_t M : {1, 10}) {
    const Tensor x = Tensor::from_vector(random_values(size_t(M * K), 22), Shape{M, K});
    expect_matmul_close(x, x.to(dev()), w, dev());
  }
}

// More than one band of W rows (16 Mi f32 of scratch per band) on the large-M path.
TEST_P(QuantDevice, MatmulOverSeveralBands) {
  if (dev().is_cpu()) GTEST_SKIP() << "the banded path is the CUDA one";
  const int64_t N = 4100, K = 4096, M = 9;
  const QuantTensor w =
      quantize(Tensor::from_vector(random_values(size_t(N * K), 31), Shape{N, K}), GgmlType::Q4_0, "big");
  const Tensor x = Tensor::from_vector(random_values(size_t(M * K), 32), Shape{M, K});
  const Tensor got = quant_matmul(x.to(dev()), w.to(dev()));
  const std::vector<float> y = got.to_vector<float>(), want = quant_matmul(x, w).to_vector<float>();
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], 1e-2f + 1e-3f * std::fabs(want[i])) << i;
}

TEST_P(QuantDevice, MatmulEmptyShapes) {
  const QuantTensor w = quantize(Tensor::from_vector(random_values(37 * 64, 41), Shape{37, 64}), GgmlType::Q8_0);
  const Tensor y = quant_matmul(Tensor::empty(Shape{0, 64}, DType::F32, dev()), w.to(dev()));
  EXPECT_EQ(y.shape(), (Shape{0, 37}));
  EXPECT_EQ(y.device(), dev());
}

TEST_P(QuantDevice, BadInputsAreErrors) {
  const QuantTensor w = quantize(Tensor::from_vector(random_values(8 * 64, 51), Shape{8, 64}), GgmlType::Q8_0, "wq");
  const QuantTensor wd = w.to(dev());
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{2, 32}, DType::F32, dev()), wd), ShapeMismatch, "disagree on K");
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{64}, DType::F32, dev()), wd), ShapeMismatch,
                    "expected x (M, K) and W (N, K)");
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{2, 64}, DType::I64, dev()), wd), DTypeMismatch,
                    "x must be floating point");
  EXPECT_WICK_ERROR(dequantize(wd, DType::I64), DTypeMismatch, "must be f32, f16 or bf16");
  QuantTensor short_w = wd;
  short_w.shape = Shape{9, 64};
  EXPECT_WICK_ERROR(dequantize(short_w), ShapeMismatch, "needs");
  if (dev().is_cuda()) {
    EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{2, 64}), wd), DeviceMismatch, "is on cuda:0");
  }
  const QuantTensor w40 =
      quantize(Tensor::from_vector(random_values(2 * 40, 52), Shape{2, 40}), GgmlType::F16, "w40").to(dev());
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{1, 40}, DType::F32, dev()), w40, QuantActivation::Q8),
                    ShapeMismatch, "K must be a multiple of 32");
}

WICK_INSTANTIATE_DEVICE_TEST(QuantDevice);

}  // namespace
}  // namespace wick
