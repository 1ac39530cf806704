// cpu_isa.h: the run-time vector extension checks.
#include "backend/cpu/cpu_isa.h"

#include <cstdlib>
#include <cstring>

namespace wick::cpu {

bool cpu_has_avx512() {
  static const bool has = [] {
    if (const char* isa = std::getenv("WICK_CPU_ISA"); isa && std::strcmp(isa, "avx2") == 0) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    // libgcc's checks include the OS's XSAVE state for the ZMM registers.
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
  }();
  return has;
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

}  // namespace wick::cpu
