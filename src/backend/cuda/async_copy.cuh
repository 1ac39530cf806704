// cp.async: 16-byte copies from global to shared memory that bypass the registers (and,
// with .cg, L1), the staging of the tiled kernels (kernels_attention_mma.cu,
// kernels_conv_igemm.cu, quant_matvec.cuh). A copy is complete for the issuing thread
// after a wait; other threads see it after a barrier that follows the wait.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace wick::cuda {

// A generic pointer into shared memory as the 32-bit shared address the instructions take.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global src to shared dst; src_bytes 0 writes zeros and reads nothing (src
// must still be a valid address).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#else  // no cp.async: a synchronous copy through registers
  uint4 v = make_uint4(0, 0, 0, 0);
  if (src_bytes) v = *static_cast<const uint4*>(src);
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#endif
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  cp_async16(smem_addr(dst), src, src_bytes);
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Waits for every copy this thread issued, committed or not.
__device__ __forceinline__ void cp_async_wait_all() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace wick::cuda
