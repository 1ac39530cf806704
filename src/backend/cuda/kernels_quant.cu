// The quant family on CUDA: dequantization (ONE kernel templated over a block decoder of
// io/quant/block_decode.h, the same code the host test checks bit for bit against the
// CPU dequantizer), the q8_0 rounding of activations, and the host side of the small-M
// matrix-vector product (its kernels: quant_matvec.cuh).
#include <cuda_runtime.h>

#include "backend/cuda/quant_matvec.cuh"

namespace wick::cuda {

namespace {

// One thread per output value (grid-stride): value e of row r. Narrow outputs are rounded
// with wick's own f16/bf16 conversions, the ones the CPU path uses, so the bits agree.
template <class D, class T>
__global__ void dequantize_kernel(const uint8_t* __restrict__ src, size_t row_bytes, int64_t row_elems, int64_t total,
                                  T* __restrict__ out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t r = i / row_elems, e = i - r * row_elems;
    const float v = D::value(src + size_t(r) * row_bytes, e);
    if constexpr (std::is_same_v<T, float>) {
      out[i] = v;
    } else {
      out[i] = T(v);
    }
  }
}

// Eight consecutive values per thread (rows of a multiple of 8: every block type), decoded by
// one decode8 (the block's scales read once, not once per value: a K-quant's value() decodes
// all eight to return one) and stored with 16-byte writes when out is aligned. The same
// floats and roundings as dequantize_kernel; about 8x (legacy blocks) to 60x (K-quants) less
// arithmetic, which is what bounded the per-value kernel (a 1B-shaped Q4_K_M weight set
// took ~10 ms to expand into f16).
template <class D, class T>
__global__ void dequantize8_kernel(const uint8_t* __restrict__ src, size_t row_bytes, int64_t row_elems, int64_t groups,
                                   bool aligned, T* __restrict__ out) {
  const int64_t per_row = row_elems / 8;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t r = g / per_row, e0 = (g - r * per_row) * 8;
    float v[8];
    quant::decode8<D>(src + size_t(r) * row_bytes, e0, v);
    alignas(16) T o[8];  // read back as uint4 below
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        o[k] = v[k];
      } else {
        o[k] = T(v[k]);
      }
    }
    T* dst = out + g * 8;
    if (aligned) {
      const uint4* from = reinterpret_cast<const uint4*>(o);
      uint4* to = reinterpret_cast<uint4*>(dst);
#pragma unroll
      for (int k = 0; k < int(8 * sizeof(T) / 16); ++k) to[k] = from[k];
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) dst[k] = o[k];
    }
  }
}

}  // namespace

void quant_dequantize(GgmlType type, const void* src, size_t row_bytes, int64_t rows, int64_t row_elems,
                      const Tensor& out) {
  const int64_t total = rows * row_elems;
  if (total == 0) return;
  CudaBackend& be = backend_of(out.device());
  const auto* s = static_cast<const uint8_t*>(src);
  quant::dispatch_decoder(type, [&]<class D>() {
    dispatch_float(out.dtype(), "dequantize", [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || is_half_v<T>) {
        T* o = static_cast<T*>(out.mutable_data());
        if (row_elems % 8 == 0) {
          const bool aligned = reinterpret_cast<uintptr_t>(o) % 16 == 0;
          dequantize8_kernel<D, T><<<std::min(grid_for(total / 8), resident_blocks()), kThreads, 0, be.stream()>>>(
              s, row_bytes, row_elems, total / 8, aligned, o);
        } else {
          dequantize_kernel<D, T><<<grid_for(total), kThreads, 0, be.stream()>>>(s, row_bytes, row_elems, total, o);
        }
        check_launch("dequantize");
      } else {
        fail(ErrorKind::DTypeMismatch, "dequantize: output dtype must be f32, f16 or bf16, got ", out.dtype());
      }
    });
  });
}

namespace {
bool float_kind(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }
qmv::XKind kind_of(DType d) {
  return d == DType::F32 ? qmv::XKind::F32 : d == DType::F16 ? qmv::XKind::F16 : qmv::XKind::BF16;
}
bool aligned16(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()) % 16 == 0; }
}  // namespace

bool quant_matvec_takes(GgmlType type, int64_t K, const MatvecOperands& o, bool q8_x) {
  const Tensor& x = o.x;
  const int64_t M = x.dim(0);
  if (M < 1 || M > kQuantMatvecMaxM || K % (q8_x ? qmv::kQ8Group : 8) != 0 || x.dim(1) != K) return false;
  if (!float_kind(x.dtype()) || !x.is_contiguous() || !aligned16(x)) return false;
  if (q8_x && !quant_matvec_q8_supported(type)) return false;
  if (o.e.glu || !float_kind(o.out.dtype()) || !o.out.is_contiguous() || o.out.dim(0) != M) return false;
  if (o.norm.defined() && (o.norm.dtype() != x.dtype() || !o.norm.is_contiguous() || !aligned16(o.norm))) return false;
  for (const Tensor* t : {&o.bias, &o.residual})
    if (t->defined() && (t->dtype() != o.out.dtype() || !t->is_contiguous())) return false;
  // Converted (f16/bf16) or normalized x is read only as the kernel stages it.
  return (x.dtype() == DType::F32 && !o.norm.defined()) || qmv::stages_x(q8_x, M, K);
}

void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const MatvecOperands& o,
                  bool q8_x) {
  WICK_CHECK(quant_matvec_takes(type, K, o, q8_x), Internal, "quant_matvec: bad arguments x ", o.x.shape(), " ",
             o.x.dtype(), " out ", o.out.shape(), " ", o.out.dtype(), " K ", K, " q8 ", q8_x);
  if (N == 0) return;
  qmv::MatvecArgs p{};
  p.w = static_cast<const uint8_t*>(w);
  p.row_bytes = row_bytes;
  p.N = N;
  p.K = K;
  p.M = int(o.x.dim(0));
  p.x = o.x.data();
  p.x_kind = kind_of(o.x.dtype());
  p.norm = o.norm.defined() ? o.norm.data() : nullptr;
  p.eps = o.eps;
  const bool plain =
      o.out.dtype() == DType::F32 && !o.bias.defined() && !o.residual.defined() && o.e.act == Activation::None;
  if (plain) {
    p.y = static_cast<float*>(o.out.mutable_data());
  } else {
    p.out = o.out.mutable_data();
    p.out_kind = kind_of(o.out.dtype());
    p.bias = o.bias.defined() ? o.bias.data() : nullptr;
    p.residual = o.residual.defined() ? o.residual.data() : nullptr;
    p.e = o.e;
  }
  CudaBackend& be = backend_of(o.out.device());
  if (q8_x) {
    qmv::matvec_q8(be, type, p);
  } else {
    qmv::matvec_f32(be, type, p);
  }
}

void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const Tensor& x,
                  const Tensor& y, bool q8_x) {
  WICK_CHECK(x.dtype() == DType::F32 && y.dtype() == DType::F32, Internal, "quant_matvec: the plain product is f32");
  MatvecOperands o;
  o.x = x;
  o.out = y;
  quant_matvec(type, w, row_bytes, N, K, o, q8_x);
}

namespace {
struct HasQ8Kernel {
  template <class D>
  bool operator()() const {
    return quant::kHasAffine<D>;
  }
};
}  // namespace

bool quant_matvec_q8_supported(GgmlType type) { return quant::dispatch_decoder(type, HasQ8Kernel{}); }

void quant_round_q8(const Tensor& x, const Tensor& out) {
  const int64_t total = x.numel();
  WICK_CHECK(x.dtype() == DType::F32 && out.dtype() == DType::F32 && x.is_contiguous() && out.is_contiguous() &&
                 total % qmv::kQ8Group == 0 && reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 &&
                 reinterpret_cast<uintptr_t>(out.data()) % 16 == 0,
             Internal, "quant_round_q8: bad arguments x ", x.shape(), " ", x.dtype());
  if (total == 0) return;
  CudaBackend& be = backend_of(x.device());
  qmv::quantize_q8_kernel<true><<<qmv::quantize_q8_blocks(total), qmv::kBlockWarps * qmv::kWarp, 0, be.stream()>>>(
      static_cast<const float*>(x.data()), total, nullptr, nullptr, static_cast<float*>(out.mutable_data()));
  check_launch("quant_matmul");
}

}  // namespace wick::cuda
