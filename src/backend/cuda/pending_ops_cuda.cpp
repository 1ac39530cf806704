// TEMPORARY (replaced by the branch that implements them): the op-table entries not yet
// implemented on CUDA.
#include "backend/cuda/cuda_backend.h"

namespace wick {
void CudaBackend::cumulative(CumulativeOp, const Tensor&, size_t, const Tensor&) { unsupported("cumulative"); }
void CudaBackend::sort(const Tensor&, size_t, bool, const Tensor&, const Tensor&) { unsupported("sort"); }
void CudaBackend::topk(const Tensor&, size_t, int64_t, bool, const Tensor&, const Tensor&) { unsupported("topk"); }
}  // namespace wick
