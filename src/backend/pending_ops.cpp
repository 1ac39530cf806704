// TEMPORARY (replaced by the branch that implements them): the op-table entries not yet
// implemented on the CPU.
#include "backend/cpu/cpu_backend.h"

namespace wick {
void CpuBackend::cumulative(CumulativeOp, const Tensor&, size_t, const Tensor&) { unsupported("cumulative"); }
void CpuBackend::sort(const Tensor&, size_t, bool, const Tensor&, const Tensor&) { unsupported("sort"); }
void CpuBackend::topk(const Tensor&, size_t, int64_t, bool, const Tensor&, const Tensor&) { unsupported("topk"); }
}  // namespace wick
