// The quantized matrix-vector kernels with exact f32 activations, one per decoder
// (quant_matvec.cuh; a file per activation form so the two compile in parallel).
#include "backend/cuda/quant_matvec.cuh"

namespace wick::cuda::qmv {

void matvec_f32(CudaBackend& be, GgmlType type, const MatvecArgs& p) { dispatch_matvec<ActF32>(be, type, p); }

}  // namespace wick::cuda::qmv
