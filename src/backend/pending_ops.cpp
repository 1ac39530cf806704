// TEMPORARY (replaced by the branch that implements them): the op-table entries not yet
// implemented on the CPU.
#include "backend/cpu/cpu_backend.h"

namespace wick {
void CpuBackend::dequantize(const QuantTensor&, const Tensor&) { unsupported("dequantize"); }
void CpuBackend::quant_matmul(const Tensor&, const QuantTensor&, QuantActivation, const Tensor&) {
  unsupported("quant_matmul");
}
void CpuBackend::quantize(const Tensor&, const QuantTensor&) { unsupported("quantize"); }
}  // namespace wick
