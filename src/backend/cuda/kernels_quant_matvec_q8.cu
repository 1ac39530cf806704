// The quantized matrix-vector kernels with activations rounded to q8_0 (dp4a), one per decoder
// (quant_matvec.cuh; a file per activation form so the two compile in parallel).
#include "backend/cuda/quant_matvec.cuh"

namespace wick::cuda::qmv {

void matvec_q8(CudaBackend& be, GgmlType type, const MatvecArgs& p) { dispatch_matvec<ActQ8>(be, type, p); }

}  // namespace wick::cuda::qmv
