// The dtype a loader keeps a float weight matrix in: the compute dtype, except that an f32
// model on the CPU keeps f16/bf16 matrices as stored. Its linears read them in place (as
// llama.cpp runs 16-bit files), instead of doubling their bytes and every decode step's
// reads. Shared by the Llama and GPT-2 loaders.
#pragma once

#include "wick/device.h"
#include "wick/dtype.h"

namespace wick::models {

inline DType matrix_dtype(Device device, DType compute, DType stored) {
  const bool half = stored == DType::F16 || stored == DType::BF16;
  return device.is_cpu() && compute == DType::F32 && half ? stored : compute;
}

}  // namespace wick::models
