// Vector extensions the CPU kernels may use beyond what the build targets (x86-64-v3: AVX2,
// FMA, F16C), asked of the CPU once at run time. WICK_CPU_ISA=avx2 keeps the kernels at the
// build's level (the tests run both forms that way).
#pragma once

namespace wick::cpu {

// AVX-512 F, BW, VL and DQ, with the OS saving the registers; false under WICK_CPU_ISA=avx2.
bool cpu_has_avx512();
// cpu_has_avx512() and the VNNI byte dot products (vpdpbusd).
bool cpu_has_avx512_vnni();

}  // namespace wick::cpu
