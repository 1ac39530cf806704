#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "backend/cpu/cpu_isa.h"
#include "wick/blas.h"

namespace wick {

namespace {
// OpenBLAS's x86 core types without AVX2 and FMA. wick is built for x86-64-v3 (AVX2, FMA),
// so on a CPU that runs wick at all, one of these is a CPU OpenBLAS did not recognise.
constexpr std::array<std::string_view, 20> kPreAvx2Cores = {
    "katmai",    "coppermine", "northwood", "prescott",    "banias",     "atom",       "core2",
    "penryn",    "dunnington", "nehalem",   "sandybridge", "athlon",     "opteron",    "opteron_sse3",
    "barcelona", "bobcat",     "nano",      "bulldozer",   "piledriver", "steamroller"};
}  // namespace

std::optional<std::string> preferred_openblas_coretype() {
  if (std::getenv("OPENBLAS_CORETYPE")) return std::nullopt;  // the user's choice stands
  // Looked up rather than linked: another BLAS (or a static OpenBLAS with hidden symbols)
  // has no such function, and then there is nothing to change.
  using CoreName = char* (*)();
  const auto core_name = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!core_name) return std::nullopt;
  const char* raw = core_name();
  std::string name = raw ? raw : "";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (std::find(kPreAvx2Cores.begin(), kPreAvx2Cores.end(), name) == kPreAvx2Cores.end()) return std::nullopt;
  return cpu::cpu_has_avx512() ? "SkylakeX" : "Haswell";
}

}  // namespace wick
