// CUDA error checking: every runtime/library call goes through WICK_CUDA_CHECK, which
// turns a failure into wick::Error(ErrorKind::Device) naming the call.
#pragma once

#include <cuda_runtime.h>

#include "wick/error.h"

#define WICK_CUDA_CHECK(call)                                                                          \
  do {                                                                                                 \
    const cudaError_t err_ = (call);                                                                   \
    if (err_ != cudaSuccess) [[unlikely]]                                                              \
      ::wick::fail(::wick::ErrorKind::Device, "cuda: ", #call, " failed: ", cudaGetErrorString(err_)); \
  } while (0)
