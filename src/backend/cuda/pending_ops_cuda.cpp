// TEMPORARY (replaced by the branch that implements them): the op-table entries not yet
// implemented on CUDA.
#include "backend/cuda/cuda_backend.h"

namespace wick {
void CudaBackend::dequantize(const QuantTensor&, const Tensor&) { unsupported("dequantize"); }
void CudaBackend::quant_matmul(const Tensor&, const QuantTensor&, QuantActivation, const Tensor&) {
  unsupported("quant_matmul");
}
void CudaBackend::quantize(const Tensor&, const QuantTensor&) { unsupported("quantize"); }
}  // namespace wick
