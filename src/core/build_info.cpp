#include "wick/build_info.h"

#include <thread>

#include "backend/backend.h"
#include "wick_build_config.h"

#define WICK_ON 1
#define WICK_OFF 0
#define WICK_CUDA_FLAG_ON true
#define WICK_CUDA_FLAG_OFF false
#define WICK_CAT2(a, b) a##b
#define WICK_CAT(a, b) WICK_CAT2(a, b)

namespace wick {

const BuildInfo& build_info() {
  static const BuildInfo info{
      WICK_VERSION,    WICK_BUILD_TYPE,   WICK_COMPILER, WICK_CPU_ARCH, WICK_CAT(WICK_CUDA_FLAG_, WICK_CUDA_COMPILED),
      WICK_CUDA_ARCHS, "OpenBLAS (cblas)"};
  return info;
}

}  // namespace wick
