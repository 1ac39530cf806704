// Indexing on CUDA: index_select, gather, scatter (set/add) and index_add, with the
// semantics of the CPU backend (src/backend/cpu/cpu_index.cpp).
//
// Every index is checked on the GPU: a negative or too large one is recorded into the
// backend's DeviceErrorRecord (first one wins) and its write is skipped; the host raises
// IndexOutOfRange naming the op, the value and the bound at the next synchronization.
//
// Addressing: each kernel walks one shape with an OffsetCalc over several operands whose
// stride along `dim` is zeroed (or, for 1-D index lists, a pseudo-operand whose only
// non-zero stride is the list's stride at `dim`); the index value then adds
// value * stride[dim] in 64 bits. So any strides work, and the usual dim collapsing
// applies to the rest.
//
// Write conflicts: index_select/gather write each output once. scatter (set) gives each
// thread one position outside `dim` and applies the indices along `dim` in order, so
// duplicates resolve as on the CPU (last write wins). scatter_add and index_add run one
// thread per source element and accumulate with atomics (float sums of duplicate
// indices may then differ from the CPU in the last bits: the order is not fixed).
#include <algorithm>
#include <vector>

#include "backend/cuda/kernels_index.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "wick/tensor.h"

namespace wick {

using namespace cuda;

namespace {

// `strides` with the entry at `dim` replaced by `at_dim`.
std::vector<int64_t> strides_with(std::vector<int64_t> strides, size_t dim, int64_t at_dim) {
  strides[dim] = at_dim;
  return strides;
}

// A layout of `shape` that advances only along `dim` (by `stride`): how a 1-D index
// list is addressed from a position of the full shape.
Layout along_dim(const Shape& shape, size_t dim, int64_t stride, int64_t offset) {
  std::vector<int64_t> s(shape.rank(), 0);
  s[dim] = stride;
  return Layout(shape, std::move(s), offset);
}

// Calls launch.template operator()<I>(offset calc) with the narrowest index type.
template <int N, class F>
void with_index_type(const Geometry<N>& g, F&& launch) {
  if (g.fits_32bit)
    launch.template operator()<uint32_t>(g.template calc<uint32_t>());
  else
    launch.template operator()<int64_t>(g.template calc<int64_t>());
}

// ---- index_select --------------------------------------------------------------------

// The hot case (embedding lookups): src and out contiguous, so each selected slice is
// one run of `row_words` words of type W. One warp per output row, grid-stride.
template <class W, class Idx>
__global__ void select_rows_kernel(int64_t rows, int64_t n, int64_t bound, int64_t row_words, W* __restrict__ out,
                                   const W* __restrict__ src, const Idx* __restrict__ idx, int64_t istride,
                                   DeviceErrorRecord* rec) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < rows; r += warps) {
    const int64_t o = r / n, j = r - o * n;
    const Idx raw = idx[j * istride];
    if (!index_ok(raw, bound, rec, IndexOpId::IndexSelect)) continue;
    const W* s = src + (o * bound + int64_t(raw)) * row_words;
    W* d = out + r * row_words;
    for (int64_t k = lane; k < row_words; k += 32) d[k] = s[k];
  }
}

// Operands: 0 out, 1 src (dim stride 0), 2 the index list (along dim only).
template <class I, class D, class Idx>
__global__ void index_select_kernel(I n, OffsetCalc<3, I> oc, D* __restrict__ out, const D* __restrict__ src,
                                    const Idx* __restrict__ idx, int64_t src_dim_stride, int64_t bound,
                                    DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I off[3];
    oc.get(i, off);
    const Idx raw = idx[off[2]];
    if (!index_ok(raw, bound, rec, IndexOpId::IndexSelect)) continue;
    out[off[0]] = src[int64_t(off[1]) + int64_t(raw) * src_dim_stride];
  }
}

// The widest word (16, 8, 4, 2 or 1 bytes) dividing the row and both base addresses.
template <class F>
void with_word_type(size_t row_bytes, uintptr_t a, uintptr_t b, F&& f) {
  const uintptr_t bits = uintptr_t(row_bytes) | a | b;
  if (bits % 16 == 0)
    f.template operator()<uint4>();
  else if (bits % 8 == 0)
    f.template operator()<uint2>();
  else if (bits % 4 == 0)
    f.template operator()<uint32_t>();
  else if (bits % 2 == 0)
    f.template operator()<uint16_t>();
  else
    f.template operator()<uint8_t>();
}

}  // namespace

void CudaBackend::index_select(const Tensor& src, size_t dim, const Tensor& indices, const Tensor& out) {
  activate();
  if (out.numel() == 0) return;
  const int64_t n = indices.numel(), bound = src.shape()[dim];
  DeviceErrorRecord* rec = error_record();
  dispatch_index(indices.dtype(), "index_select", [&]<class Idx>() {
    const Idx* idx = dptr<const Idx>(indices) + indices.offset();
    const int64_t istride = indices.rank() == 1 ? indices.strides()[0] : 0;
    if (src.is_contiguous() && out.is_contiguous()) {
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < dim; ++d) outer *= src.shape()[d];
      for (size_t d = dim + 1; d < src.rank(); ++d) inner *= src.shape()[d];
      const size_t es = src.element_size(), row_bytes = size_t(inner) * es;
      const char* s = static_cast<const char*>(src.storage_data()) + src.offset() * es;
      char* o = static_cast<char*>(out.storage_mutable_data()) + out.offset() * es;
      const int64_t rows = outer * n;
      with_word_type(row_bytes, reinterpret_cast<uintptr_t>(s), reinterpret_cast<uintptr_t>(o), [&]<class W>() {
        const unsigned blocks = unsigned(std::min<int64_t>((rows + 7) / 8, resident_blocks()));
        select_rows_kernel<W, Idx><<<blocks, kThreads, 0, stream_>>>(rows, n, bound, int64_t(row_bytes / sizeof(W)),
                                                                     reinterpret_cast<W*>(o),
                                                                     reinterpret_cast<const W*>(s), idx, istride, rec);
      });
      check_launch("index_select");
      return;
    }
    const Layout src_rest(out.shape(), strides_with(src.strides(), dim, 0), src.offset());
    const Layout list = along_dim(out.shape(), dim, istride, 0);
    const Geometry<3> g({&out.layout(), &src_rest, &list}, "index_select");
    const int64_t sds = src.strides()[dim];
    dispatch(src.dtype(), [&]<class T>() {
      using D = dev_t<T>;
      with_index_type(g, [&]<class I>(const OffsetCalc<3, I>& oc) {
        index_select_kernel<I, D, Idx><<<std::min(grid_for(g.numel, 4), resident_blocks()), kThreads, 0, stream_>>>(
            I(g.numel), oc, dptr<D>(out), dptr<const D>(src), idx, sds, bound, rec);
      });
    });
    check_launch("index_select");
  });
}

// ---- gather ----------------------------------------------------------------------------

namespace {

// Operands: 0 out, 1 index, 2 src (dim stride 0); all walk index's shape.
template <class I, class D, class Idx>
__global__ void gather_kernel(I n, OffsetCalc<3, I> oc, D* __restrict__ out, const Idx* __restrict__ index,
                              const D* __restrict__ src, int64_t src_dim_stride, int64_t bound,
                              DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I off[3];
    oc.get(i, off);
    const Idx raw = index[off[1]];
    if (!index_ok(raw, bound, rec, IndexOpId::Gather)) continue;
    out[off[0]] = src[int64_t(off[2]) + int64_t(raw) * src_dim_stride];
  }
}

// The common layout (out and index with stride 1 along their innermost collapsed dim, its
// size a multiple of kGatherRun): a thread takes kGatherRun consecutive elements of one
// innermost run, so one offset computation serves them all and their index loads, then
// their source loads, are all in flight together (the element kernel has one index ->
// source round trip in flight per thread). A bad index loads element 0 of the run's
// source row instead (bound > 0, so it exists) and skips its write.
constexpr int kGatherRun = 4;

template <class I, class D, class Idx>
__global__ void gather_runs_kernel(I runs, OffsetCalc<3, I> oc, D* __restrict__ out, const Idx* __restrict__ index,
                                   const D* __restrict__ src, int64_t src_dim_stride, int64_t src_inner_stride,
                                   int64_t bound, DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I v = I(blockIdx.x) * blockDim.x + threadIdx.x; v < runs; v += step) {
    I off[3];
    oc.get(v * kGatherRun, off);
    Idx raw[kGatherRun];
#pragma unroll
    for (int k = 0; k < kGatherRun; ++k) raw[k] = index[off[1] + k];
    bool ok[kGatherRun];
    D val[kGatherRun];
#pragma unroll
    for (int k = 0; k < kGatherRun; ++k) {
      ok[k] = index_ok(raw[k], bound, rec, IndexOpId::Gather);
      val[k] = src[int64_t(off[2]) + k * src_inner_stride + (ok[k] ? int64_t(raw[k]) : 0) * src_dim_stride];
    }
#pragma unroll
    for (int k = 0; k < kGatherRun; ++k)
      if (ok[k]) out[off[0] + k] = val[k];
  }
}

}  // namespace

void CudaBackend::gather(const Tensor& src, size_t dim, const Tensor& index, const Tensor& out) {
  activate();
  if (out.numel() == 0) return;
  const Layout src_rest(index.shape(), strides_with(src.strides(), dim, 0), src.offset());
  const Geometry<3> g({&out.layout(), &index.layout(), &src_rest}, "gather");
  const int64_t sds = src.strides()[dim], bound = src.shape()[dim];
  DeviceErrorRecord* rec = error_record();
  const bool runs = bound > 0 && !g.dims.shape.empty() && g.dims.shape.back() % kGatherRun == 0 &&
                    g.dims.strides[0].back() == 1 && g.dims.strides[1].back() == 1;
  dispatch_index(index.dtype(), "gather", [&]<class Idx>() {
    dispatch(src.dtype(), [&]<class T>() {
      using D = dev_t<T>;
      with_index_type(g, [&]<class I>(const OffsetCalc<3, I>& oc) {
        if (runs) {
          gather_runs_kernel<I, D, Idx><<<grid_for(g.numel / kGatherRun), kThreads, 0, stream_>>>(
              I(g.numel / kGatherRun), oc, dptr<D>(out), dptr<const Idx>(index), dptr<const D>(src), sds,
              g.dims.strides[2].back(), bound, rec);
        } else {
          gather_kernel<I, D, Idx><<<std::min(grid_for(g.numel, 4), resident_blocks()), kThreads, 0, stream_>>>(
              I(g.numel), oc, dptr<D>(out), dptr<const Idx>(index), dptr<const D>(src), sds, bound, rec);
        }
      });
    });
  });
  check_launch("gather");
}

// ---- scatter ----------------------------------------------------------------------------

namespace {

// Set: one thread per position outside dim (operands 0 index, 1 src, 2 dst with dim
// stride 0, walking index's shape with dim of size 1); indices along dim applied in order.
template <class I, class D, class Idx>
__global__ void scatter_set_kernel(I n, OffsetCalc<3, I> oc, int64_t len, int64_t index_dim_stride,
                                   int64_t src_dim_stride, int64_t dst_dim_stride, int64_t bound,
                                   const Idx* __restrict__ index, const D* __restrict__ src, D* __restrict__ dst,
                                   DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I off[3];
    oc.get(i, off);
    for (int64_t j = 0; j < len; ++j) {
      const Idx raw = index[int64_t(off[0]) + j * index_dim_stride];
      if (!index_ok(raw, bound, rec, IndexOpId::Scatter)) continue;
      dst[int64_t(off[2]) + int64_t(raw) * dst_dim_stride] = src[int64_t(off[1]) + j * src_dim_stride];
    }
  }
}

// Add: one thread per index element (operands 0 index, 1 src, 2 dst with dim stride 0).
template <class I, class D, class Idx>
__global__ void scatter_add_kernel(I n, OffsetCalc<3, I> oc, int64_t dst_dim_stride, int64_t bound,
                                   const Idx* __restrict__ index, const D* __restrict__ src, D* dst,
                                   DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I off[3];
    oc.get(i, off);
    const Idx raw = index[off[0]];
    if (!index_ok(raw, bound, rec, IndexOpId::ScatterAdd)) continue;
    atomic_add(dst + int64_t(off[2]) + int64_t(raw) * dst_dim_stride, src[off[1]]);
  }
}

}  // namespace

void CudaBackend::scatter(const Tensor& dst, size_t dim, const Tensor& index, const Tensor& src, ScatterMode mode) {
  activate();
  if (index.numel() == 0) return;
  const int64_t bound = dst.shape()[dim], dds = dst.strides()[dim];
  DeviceErrorRecord* rec = error_record();
  const char* op = mode == ScatterMode::Add ? "scatter_add" : "scatter";
  const Layout src_view(index.shape(), src.strides(), src.offset());
  const Layout dst_rest(index.shape(), strides_with(dst.strides(), dim, 0), dst.offset());
  if (mode == ScatterMode::Add) {
    const Geometry<3> g({&index.layout(), &src_view, &dst_rest}, op);
    dispatch_index(index.dtype(), op, [&]<class Idx>() {
      dispatch(dst.dtype(), [&]<class T>() {
        using D = dev_t<T>;
        with_index_type(g, [&]<class I>(const OffsetCalc<3, I>& oc) {
          scatter_add_kernel<I, D, Idx><<<std::min(grid_for(g.numel, 4), resident_blocks()), kThreads, 0, stream_>>>(
              I(g.numel), oc, dds, bound, dptr<const Idx>(index), dptr<const D>(src), dptr<D>(dst), rec);
        });
      });
    });
  } else {
    // Walk the positions outside dim: index's shape with dim of size 1.
    Shape rest = index.shape();
    rest[dim] = 1;
    const Layout index_rest(rest, index.strides(), index.offset());
    const Layout src_rest(rest, src.strides(), src.offset());
    const Layout dst_rest1(rest, strides_with(dst.strides(), dim, 0), dst.offset());
    const Geometry<3> g({&index_rest, &src_rest, &dst_rest1}, op);
    const int64_t len = index.shape()[dim], ids = index.strides()[dim], sds = src.strides()[dim];
    dispatch_index(index.dtype(), op, [&]<class Idx>() {
      dispatch(dst.dtype(), [&]<class T>() {
        using D = dev_t<T>;
        with_index_type(g, [&]<class I>(const OffsetCalc<3, I>& oc) {
          scatter_set_kernel<I, D, Idx><<<std::min(grid_for(g.numel), resident_blocks()), kThreads, 0, stream_>>>(
              I(g.numel), oc, len, ids, sds, dds, bound, dptr<const Idx>(index), dptr<const D>(src), dptr<D>(dst), rec);
        });
      });
    });
  }
  check_launch(op);
}

// ---- index_add --------------------------------------------------------------------------

namespace {

// One thread per src element (operands 0 src, 1 dst with dim stride 0, 2 the index list).
template <class I, class D, class Idx>
__global__ void index_add_kernel(I n, OffsetCalc<3, I> oc, int64_t dst_dim_stride, int64_t bound,
                                 const D* __restrict__ src, D* dst, const Idx* __restrict__ idx,
                                 DeviceErrorRecord* rec) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I off[3];
    oc.get(i, off);
    const Idx raw = idx[off[2]];
    if (!index_ok(raw, bound, rec, IndexOpId::IndexAdd)) continue;
    atomic_add(dst + int64_t(off[1]) + int64_t(raw) * dst_dim_stride, src[off[0]]);
  }
}

}  // namespace

void CudaBackend::index_add(const Tensor& dst, size_t dim, const Tensor& indices, const Tensor& src) {
  activate();
  if (src.numel() == 0) return;
  const int64_t istride = indices.rank() == 1 ? indices.strides()[0] : 0;
  const Layout dst_rest(src.shape(), strides_with(dst.strides(), dim, 0), dst.offset());
  const Layout list = along_dim(src.shape(), dim, istride, indices.offset());
  const Geometry<3> g({&src.layout(), &dst_rest, &list}, "index_add");
  const int64_t dds = dst.strides()[dim], bound = dst.shape()[dim];
  DeviceErrorRecord* rec = error_record();
  dispatch_index(indices.dtype(), "index_add", [&]<class Idx>() {
    dispatch(dst.dtype(), [&]<class T>() {
      using D = dev_t<T>;
      with_index_type(g, [&]<class I>(const OffsetCalc<3, I>& oc) {
        index_add_kernel<I, D, Idx><<<std::min(grid_for(g.numel, 4), resident_blocks()), kThreads, 0, stream_>>>(
            I(g.numel), oc, dds, bound, dptr<const D>(src), dptr<D>(dst), dptr<const Idx>(indices), rec);
      });
    });
  });
  check_launch("index_add");
}

}  // namespace wick
