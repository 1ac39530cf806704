// The BLAS behind wick's CPU float products (OpenBLAS, Debian's, loaded with libwick).
#pragma once

#include <optional>
#include <string>

namespace wick {

// The OpenBLAS core type (its OPENBLAS_CORETYPE variable) that wick's products should run
// with instead of the one OpenBLAS picked for this CPU, when that pick is known to be slow
// here; nullopt when OPENBLAS_CORETYPE is already set, the pick is fine, or the BLAS is not
// OpenBLAS. OpenBLAS reads the variable once, when it is loaded, so a program acts on the
// answer by setting it and starting again (the wick command re-executes itself).
//
// Why: Debian 12's OpenBLAS 0.3.21 does not know recent Intel CPUs (Sapphire Rapids class
// with AVX-512 FP16 and AMX) and falls back to its "Prescott" kernels (SSE3): single-precision
// GEMM ran 3x slower than with "SkylakeX" on such a Xeon (MiniLM, batch 256, 2 threads: 82-88
// against 248-260 sentences/s, alternated twice; docs/perf.md). A pick below AVX2 is always
// such a miss, since wick itself needs AVX2: the answer is SkylakeX with AVX-512, else Haswell.
std::optional<std::string> preferred_openblas_coretype();

}  // namespace wick
