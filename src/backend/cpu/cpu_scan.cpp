// Running reductions along one dim (cumsum, cumprod): one generic kernel over the
// accumulating functors of the reductions (backend/reduce_ops.h) and the dtype.
//
// Each line is scanned in order by one thread, the lines split across the pool. The
// accumulator is the reduction's: f32 for f16/bf16 (each output rounded from it, never
// fed back rounded, as PyTorch), the dtype itself for f32/f64, 64-bit wrapping for
// integers (so the stored value wraps in the output dtype). A line along a dim that is
// not innermost is read with a stride; consecutive lines of one thread read neighbouring
// elements, so the cache lines are reused across them.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/lines.h"
#include "backend/reduce_ops.h"

namespace wick {

namespace {

template <class Op, class T>
void scan_lines(const Op& op, const T* x, T* out, const Lines& lines) {
  const int64_t n = lines.n, xs = lines.x_stride, os = lines.inner;
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n, 1));
  cpu::parallel_for(lines.count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const T* p = x + lines.x_offset(l);
      T* o = out + lines.out_offset(l, 0, n);
      typename Op::acc_t a = op.init();
      for (int64_t i = 0; i < n; ++i) {
        a = op.step(a, compute_t<T>(p[i * xs]), i);
        o[i * os] = T(op.finalize(a, i + 1));
      }
    }
  });
}

template <template <class> class OpT>
void run(const Tensor& x, size_t dim, const Tensor& out) {
  const Lines lines(x, dim);
  dispatch(x.dtype(), [&]<class T>() {
    scan_lines(OpT<compute_t<T>>{}, cpu::base_ptr<const T>(x), cpu::base_ptr<T>(out) + out.offset(), lines);
  });
}

}  // namespace

void CpuBackend::cumulative(CumulativeOp op, const Tensor& x, size_t dim, const Tensor& out) {
  if (x.numel() == 0) return;
  switch (op) {
    case CumulativeOp::Sum: return run<reduce::Sum>(x, dim, out);
    case CumulativeOp::Prod: return run<reduce::Prod>(x, dim, out);
  }
}

}  // namespace wick
