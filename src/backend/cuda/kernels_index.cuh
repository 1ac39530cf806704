// Device helpers of the indexing kernels: the bounds check that records the first bad
// index into the backend's DeviceErrorRecord, and an atomic add for every dtype.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_types.cuh"

namespace wick::cuda {

// Loads index value v and checks 0 <= v < bound. A bad one is recorded (the first one
// wins through the CAS on flag; the host raises IndexOutOfRange at the next
// synchronization) and the caller skips its write. Never a device-side assert: that
// would poison the context.
template <class Idx>
__device__ __forceinline__ bool index_ok(Idx raw, int64_t bound, DeviceErrorRecord* rec, IndexOpId op) {
  const int64_t v = int64_t(raw);
  if (v >= 0 && v < bound) [[likely]]
    return true;
  if (atomicCAS(&rec->flag, 0, 1) == 0) {
    rec->op = int32_t(op);
    rec->value = v;
    rec->bound = bound;
  }
  return false;
}

// *p += v atomically with the wrap-around (integers) or single-rounding (floats)
// semantics of the CPU backend's add.
template <class D>
__device__ __forceinline__ void atomic_add(D* p, D v) {
  if constexpr (std::is_same_v<D, float> || std::is_same_v<D, double> || std::is_same_v<D, __half> ||
                std::is_same_v<D, __nv_bfloat16>) {
    atomicAdd(p, v);  // __half / __nv_bfloat16 overloads exist on sm_70+ / sm_80+
  } else if constexpr (std::is_same_v<D, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<D, uint32_t>) {
    atomicAdd(reinterpret_cast<unsigned int*>(p), v);
  } else {
    static_assert(std::is_same_v<D, uint8_t>, "atomic_add: unexpected dtype");
    // No byte atomics: CAS the aligned 32-bit word holding the byte. The word stays
    // inside the allocation (device allocations are at least 256-byte aligned and sized
    // in whole granules), and other bytes of the word are preserved by the CAS.
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned int shift = unsigned(addr & 3u) * 8u;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const unsigned int byte = ((assumed >> shift) + unsigned(v)) & 0xffu;
      old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (byte << shift));
    } while (old != assumed);
  }
}

}  // namespace wick::cuda
