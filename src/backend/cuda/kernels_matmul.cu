// matmul through cuBLAS: row-major C = A·B is computed as column-major Cᵀ = Bᵀ·Aᵀ, so
// row-major and transposed operands both go to cuBLAS without a copy (as op N / op T
// with their leading dimension); other stride patterns are copied to contiguous first.
// Batch dims (broadcast ones have stride 0) become one strided-batched call when every
// operand's batch dims collapse to a single stride, else one call per outer batch.
#include <cublas_v2.h>

#include <vector>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "wick/memory.h"

namespace wick {

using namespace cuda;

namespace {

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(ErrorKind::Device, "matmul: ", what, " failed (cuBLAS status ", int(s), ")");
}

// How cuBLAS sees one row-major (rows x cols) operand with strides (s_row, s_col).
struct Operand {
  Tensor t;                 // possibly a contiguous copy
  bool transposed = false;  // stored column-major
  int64_t ld = 0;
};

Operand as_blas(const Tensor& x, int64_t rows, int64_t cols) {
  const int64_t sr = x.strides()[x.rank() - 2], sc = x.strides()[x.rank() - 1];
  if ((sc == 1 || cols == 1) && sr >= std::max<int64_t>(1, cols)) return {x, false, sr};
  if ((sr == 1 || rows == 1) && sc >= std::max<int64_t>(1, rows)) return {x, true, sc};
  const Tensor c = x.contiguous();
  return {c, false, std::max<int64_t>(1, cols)};
}

// The single stride of x's batch dims (all but the last two) when they nest like one
// dim (broadcast dims have stride 0 and nest too); nullopt otherwise.
std::optional<int64_t> batch_stride(const Tensor& x) {
  int64_t stride = 0, expect = 0;
  bool have = false;
  for (size_t d = x.rank() - 2; d-- > 0;) {
    const int64_t size = x.shape()[d], st = x.strides()[d];
    if (size == 1) continue;
    if (have && st != expect) return std::nullopt;
    if (!have) stride = st;
    have = true;
    expect = st * size;
  }
  return stride;
}

struct BlasTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

BlasTypes blas_types(DType dt) {
  switch (dt) {
    case DType::F32: return {CUDA_R_32F, allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::F64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DType::F16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::BF16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default: fail(ErrorKind::Unsupported, "matmul: dtype ", dt, " is not supported on cuda (f16, bf16, f32, f64)");
  }
}

// Integer matmul (no BLAS has one): one thread per output, 64-bit accumulation that
// wraps into the output dtype like the CPU loop kernel. Correct, not fast.
struct IntMatmulArgs {
  int nb;
  int64_t batch_sizes[kMaxDims], a_batch[kMaxDims], b_batch[kMaxDims];
  int64_t M, N, K, a_m, a_k, b_k, b_n, a_off, b_off;
};

template <class T>
__global__ void int_matmul_kernel(IntMatmulArgs p, const T* __restrict__ a, const T* __restrict__ b,
                                  T* __restrict__ out, int64_t total) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i % p.N, m = (i / p.N) % p.M;
    int64_t rest = i / (p.N * p.M), oa = p.a_off, ob = p.b_off;
    for (int d = p.nb - 1; d >= 0; --d) {
      const int64_t idx = rest % p.batch_sizes[d];
      rest /= p.batch_sizes[d];
      oa += idx * p.a_batch[d];
      ob += idx * p.b_batch[d];
    }
    uint64_t acc = 0;
    for (int64_t k = 0; k < p.K; ++k)
      acc += uint64_t(a[oa + m * p.a_m + k * p.a_k]) * uint64_t(b[ob + k * p.b_k + n * p.b_n]);
    out[i] = T(acc);
  }
}

void int_matmul(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream) {
  IntMatmulArgs p{};
  const size_t r = out.rank();
  p.nb = int(r - 2);
  WICK_CHECK(p.nb <= kMaxDims, Unsupported, "matmul: too many batch dims (", p.nb, ") on cuda");
  for (int d = 0; d < p.nb; ++d) {
    p.batch_sizes[d] = out.shape()[size_t(d)];
    p.a_batch[d] = a.strides()[size_t(d)];
    p.b_batch[d] = b.strides()[size_t(d)];
  }
  p.M = out.dim(-2);
  p.N = out.dim(-1);
  p.K = a.dim(-1);
  p.a_m = a.strides()[r - 2];
  p.a_k = a.strides()[r - 1];
  p.b_k = b.strides()[r - 2];
  p.b_n = b.strides()[r - 1];
  p.a_off = a.offset();
  p.b_off = b.offset();
  const int64_t total = out.numel();
  dispatch(out.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      int_matmul_kernel<T><<<std::min(grid_for(total), resident_blocks()), kThreads, 0, stream>>>(
          p, dptr<const T>(a), dptr<const T>(b), dptr<T>(out) + out.offset(), total);
      check_launch("matmul");
    }
  });
}

}  // namespace

void CudaBackend::matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  activate();
  const size_t r = out.rank();
  const int64_t M = out.dim(-2), N = out.dim(-1), K = a_in.dim(-1);
  const int64_t batch = M == 0 || N == 0 ? 0 : out.numel() / (M * N);
  if (out.numel() == 0) return;
  if (is_integer(out.dtype())) return int_matmul(a_in, b_in, out, stream_);
  // f16/bf16 operands may write an f32 out (quant_matmul's bands keep their f32 product).
  const BlasTypes types = blas_types(a_in.dtype());
  const cudaDataType_t out_type = blas_types(out.dtype()).data;
  WICK_CHECK(out.dtype() == a_in.dtype() ||
                 (out.dtype() == DType::F32 && (a_in.dtype() == DType::F16 || a_in.dtype() == DType::BF16)),
             Internal, "matmul: a ", a_in.dtype(), " into an out of ", out.dtype());
  WICK_CHECK(M < (int64_t(1) << 31) && N < (int64_t(1) << 31) && K < (int64_t(1) << 31), Unsupported, "matmul: dims ",
             M, " x ", K, " x ", N, " exceed cuBLAS's 32-bit limit");
  if (K == 0) {
    fill(out, Scalar(0));
    return;
  }
  const Operand a = as_blas(a_in, M, K), b = as_blas(b_in, K, N);
  cublasHandle_t h = cublas();
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool f64 = out.dtype() == DType::F64;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  const size_t esize = a_in.element_size(), out_esize = out.element_size();
  auto ptr = [&](const Tensor& t, int64_t element_offset) {
    return static_cast<const char*>(t.storage_data()) + size_t(element_offset) * esize;
  };
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  char* c = static_cast<char*>(const_cast<void*>(out.data()));
  const auto sa = batch_stride(a.t), sb = batch_stride(b.t);
  if (sa && sb) {
    check_cublas(
        cublasGemmStridedBatchedEx(h, op_b, op_a, int(N), int(M), int(K), alpha, ptr(b.t, b.t.offset()), types.data,
                                   int(b.ld), *sb, ptr(a.t, a.t.offset()), types.data, int(a.ld), *sa, beta, c,
                                   out_type, int(N), M * N, int(batch), types.compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
    return;
  }
  // Irregular batch strides: one GEMM per batch element, addressed by its multi-index.
  const size_t nb = r - 2;
  std::vector<int64_t> idx(nb, 0);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t oa = a.t.offset(), ob = b.t.offset();
    for (size_t d = 0; d < nb; ++d) {
      oa += idx[d] * a.t.strides()[d];
      ob += idx[d] * b.t.strides()[d];
    }
    check_cublas(cublasGemmEx(h, op_b, op_a, int(N), int(M), int(K), alpha, ptr(b.t, ob), types.data, int(b.ld),
                              ptr(a.t, oa), types.data, int(a.ld), beta, c + size_t(i * M * N) * out_esize, out_type,
                              int(N), types.compute, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
    for (size_t d = nb; d-- > 0;) {
      if (++idx[d] < out.shape()[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace wick
