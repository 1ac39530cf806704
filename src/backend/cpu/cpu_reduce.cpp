// Reductions (sum, mean, prod, min, max, argmin, argmax) over any set of dims: one
// generic kernel templated over an op functor and the dtype. The functors and the enum ->
// functor table are shared with the CUDA backend (backend/reduce_ops.h); they compute in
// C = compute_t<T>, so elements go through C(x) and results through Out(v) here.
//
// x's dims are split into kept dims (they index the output) and reduced dims, each group
// collapsed where contiguous. Three paths:
//  - inner: the reduced dims collapse to one stride-1 run (reduce over the last dim):
//    each output reduces a contiguous row, with interleaved accumulators and blocked
//    summation where the op allows it (vectorizes; f32 sums stay accurate);
//  - outer: the innermost kept dim has stride 1 in x (reduce over a leading dim): rows
//    are folded into a tile of accumulators, one per output element (vectorizes);
//  - general: any strides, one output at a time.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/reduce_ops.h"

namespace wick {

namespace {

struct Dims {
  std::vector<int64_t> shape, strides;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // Offset of the element with row-major linear index i.
  int64_t offset_of(int64_t i) const {
    int64_t off = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      off += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return off;
  }
};

Dims collapsed(std::vector<int64_t> shape, const std::vector<int64_t>& strides) {
  const CollapsedDims c = collapse_dims(Shape(std::move(shape)), {&strides});
  return {c.shape, c.strides.empty() ? std::vector<int64_t>{} : c.strides[0]};
}

// Row-major odometer over a collapsed group of dims, tracking the element offset.
struct Odometer {
  const Dims& d;
  std::vector<int64_t> idx;
  int64_t off = 0;
  explicit Odometer(const Dims& dims) : d(dims), idx(dims.shape.size(), 0) {}
  void next() {
    for (size_t k = d.shape.size(); k-- > 0;) {
      off += d.strides[k];
      if (++idx[k] < d.shape[k]) return;
      off -= d.strides[k] * d.shape[k];
      idx[k] = 0;
    }
  }
};

// Interleaved accumulators in the inner path: 32 floats fill four AVX registers, enough
// independent add chains to hide the add latency.
constexpr int64_t kLanes = 32;
constexpr int64_t kBlock = 1024;    // elements per block of the blocked summation
constexpr int64_t kMaxTile = 2048;  // outputs per tile in the outer path (2 x 8 KiB of f32)
constexpr int64_t kRowBlock = 128;  // rows folded into a partial tile before merging

// Reduces p[0..n) (stride 1) whose first element has reduction index i0.
//
// Ops that allow it use kLanes interleaved accumulators (vectorized, independent add
// chains) and blocked summation: each block of kBlock elements is summed into fresh
// lanes, which are then added to running totals, so a float sum's rounding error grows
// with kBlock / kLanes + n / kBlock rather than with n. (A recursive pairwise split was
// measured 2x slower here: the loop restarts cost more than the memory reads.)
template <class Op, class T>
typename Op::acc_t reduce_contiguous(const Op& op, const T* p, int64_t n, int64_t i0) {
  using A = typename Op::acc_t;
  using C = compute_t<T>;
  if constexpr (Op::kInterleave) {
    A total[kLanes], lanes[kLanes];
    for (auto& a : total) a = op.init();
    int64_t i = 0;
    while (i + kLanes <= n) {
      for (auto& a : lanes) a = op.init();
      const int64_t block_end = i + std::min(kBlock, (n - i) / kLanes * kLanes);
      for (; i < block_end; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = op.step(lanes[j], C(p[i + j]), i0 + i + j);
      for (int64_t j = 0; j < kLanes; ++j) total[j] = op.merge(total[j], lanes[j]);
    }
    for (int64_t j = 0; i + j < n; ++j) total[j] = op.step(total[j], C(p[i + j]), i0 + i + j);
    // Tree merge: log2(kLanes) vector steps instead of a serial chain of kLanes adds.
    for (int64_t w = kLanes / 2; w >= 1; w /= 2)
      for (int64_t j = 0; j < w; ++j) total[j] = op.merge(total[j], total[j + w]);
    return total[0];
  } else {
    A a = op.init();
    for (int64_t i = 0; i < n; ++i) a = op.step(a, C(p[i]), i0 + i);
    return a;
  }
}

template <class Op, class T, class Out>
void reduce_kernel(const Op& op, const T* x, Out* out, const Dims& kept, const Dims& red) {
  using A = typename Op::acc_t;
  using C = compute_t<T>;
  const int64_t n_out = kept.numel(), n_red = red.numel();
  if (n_out == 0) return;
  if (n_red == 0) {  // an empty reduction reads nothing (x may be null: no offset into it)
    for (int64_t o = 0; o < n_out; ++o) out[o] = Out(op.finalize(op.init(), 0));
    return;
  }
  const int threads = cpu::num_threads();

  // ---- inner: each output reduces one contiguous row --------------------------------------
  if (red.shape.size() <= 1 && (red.shape.empty() || red.strides[0] == 1)) {
    if (n_out < threads && n_red >= 2 * cpu::kElementwiseGrain) {
      // Few long rows: split each row into ordered chunks, merge the partials in order.
      for (int64_t o = 0; o < n_out; ++o) {
        const T* row = x + kept.offset_of(o);
        const int64_t parts = threads * 4;
        std::vector<A> partial(size_t(parts), op.init());
        cpu::parallel_for(parts, 1, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            const int64_t lo = n_red * k / parts, hi = n_red * (k + 1) / parts;
            partial[size_t(k)] = reduce_contiguous(op, row + lo, hi - lo, lo);
          }
        });
        A a = op.init();
        for (const A& pa : partial) a = op.merge(a, pa);
        out[o] = Out(op.finalize(a, n_red));
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n_red, 1));
    cpu::parallel_for(n_out, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        out[o] = Out(op.finalize(reduce_contiguous(op, x + kept.offset_of(o), n_red, 0), n_red));
    });
    return;
  }

  // ---- outer: the innermost kept dim is contiguous in x -------------------------------------
  if (!kept.shape.empty() && kept.strides.back() == 1) {
    const int64_t inner = kept.shape.back();
    // Wide tiles read long contiguous stretches of each row (what the prefetcher likes);
    // narrower ones when needed to give every thread a tile.
    const int64_t per_thread = (inner + threads - 1) / threads;
    const int64_t tile = std::clamp<int64_t>((per_thread + 31) / 32 * 32, 64, kMaxTile);
    const int64_t tiles_per_row = (inner + tile - 1) / tile;
    const int64_t n_units = (n_out / inner) * tiles_per_row;
    Dims outer = kept;  // the kept dims above the innermost
    outer.shape.pop_back();
    outer.strides.pop_back();
    const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(tile * n_red, 1));
    cpu::parallel_for(n_units, grain, [&](int64_t b, int64_t e) {
      std::vector<A> total(static_cast<size_t>(tile)), part(static_cast<size_t>(tile));
      for (int64_t u = b; u < e; ++u) {
        const int64_t row = u / tiles_per_row, k0 = (u % tiles_per_row) * tile;
        const int64_t width = std::min(tile, inner - k0);
        const T* base = x + outer.offset_of(row) + k0;
        A* tot = total.data();
        A* acc = part.data();
        for (int64_t k = 0; k < width; ++k) tot[k] = op.init();
        Odometer it(red);
        int64_t offs[kRowBlock];
        for (int64_t r0 = 0; r0 < n_red; r0 += kRowBlock) {
          const int64_t nr = std::min(kRowBlock, n_red - r0);
          for (int64_t q = 0; q < nr; ++q, it.next()) offs[q] = it.off;
          for (int64_t k = 0; k < width; ++k) acc[k] = op.init();
          int64_t q = 0;
          for (; q + 4 <= nr; q += 4) {  // four rows per pass: a quarter of the acc traffic
            const T *p0 = base + offs[q], *p1 = base + offs[q + 1], *p2 = base + offs[q + 2], *p3 = base + offs[q + 3];
            const int64_t r = r0 + q;
            for (int64_t k = 0; k < width; ++k)
              acc[k] = op.step(op.step(op.step(op.step(acc[k], C(p0[k]), r), C(p1[k]), r + 1), C(p2[k]), r + 2),
                               C(p3[k]), r + 3);
          }
          for (; q < nr; ++q) {
            const T* p = base + offs[q];
            for (int64_t k = 0; k < width; ++k) acc[k] = op.step(acc[k], C(p[k]), r0 + q);
          }
          for (int64_t k = 0; k < width; ++k) tot[k] = op.merge(tot[k], acc[k]);
        }
        Out* o = out + row * inner + k0;
        for (int64_t k = 0; k < width; ++k) o[k] = Out(op.finalize(tot[k], n_red));
      }
    });
    return;
  }

  // ---- general: any strides -------------------------------------------------------------------
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n_red, 1));
  cpu::parallel_for(n_out, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* base = x + kept.offset_of(o);
      A a = op.init();
      Odometer it(red);
      for (int64_t r = 0; r < n_red; ++r, it.next()) a = op.step(a, C(base[it.off]), r);
      out[o] = Out(op.finalize(a, n_red));
    }
  });
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) {
  std::vector<int64_t> kshape, kstrides, rshape, rstrides;
  for (size_t d = 0; d < x.rank(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    (reduced ? rshape : kshape).push_back(x.shape()[d]);
    (reduced ? rstrides : kstrides).push_back(x.strides()[d]);
  }
  const Dims kept = collapsed(kshape, kstrides), red = collapsed(rshape, rstrides);
  dispatch(x.dtype(), [&]<class T>() {
    reduce::with_reduce_op<compute_t<T>>(op, [&]<class Op>(const Op& f) {
      reduce_kernel(f, cpu::base_ptr<const T>(x) + x.offset(), cpu::base_ptr<reduce::out_t<Op, T>>(out) + out.offset(),
                    kept, red);
    });
  });
}

}  // namespace wick
