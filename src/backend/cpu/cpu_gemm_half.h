// f16/bf16 matmul on the CPU without converting whole operands in one thread.
//
// One matrix product out (M x N, contiguous) = a (M x K) @ b (K x N), each operand with any
// element strides. Products accumulate in f32 from the exact f32 values of the 16-bit
// inputs, and the f32 result is rounded to T once. Decode-sized products (small M) read the
// 16-bit weight directly (a GEMV per weight layout); larger ones with a K-contiguous weight
// take register tiles that convert the weight as they read it, others widen b in panels
// for sgemm. Returns false where the build lacks AVX2/F16C/FMA, so the caller keeps its
// generic path.
//
// mixed_gemm is the same product for an f32 a (the activations of a model computing in f32
// over 16-bit weights, as llama.cpp does on the CPU): out is f32 and, with accumulate,
// out += a @ b (the fused linear adds the product onto its bias).
#pragma once

#include <cstdint>

#include "wick/half.h"

namespace wick::cpu {

template <class T>
bool half_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
               int64_t bcs, T* out);

template <class T>
bool mixed_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t ars, int64_t acs, const T* b, int64_t brs,
                int64_t bcs, float* out, bool accumulate);

// The larger products with a K-contiguous b over AVX-512 (cpu_gemm_half_avx512.cpp): c (M x N)
// = x (M x K, contiguous f32) @ b (rows b + n * bcs), or c += with accumulate. Returns false,
// doing nothing, where cpu_has_avx512() is false or the build has no AVX-512 form.
template <class T>
bool gemm_k_avx512(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* c, bool accumulate);

extern template bool gemm_k_avx512<f16>(int64_t, int64_t, int64_t, const float*, const f16*, int64_t, float*, bool);
extern template bool gemm_k_avx512<bf16>(int64_t, int64_t, int64_t, const float*, const bf16*, int64_t, float*, bool);
extern template bool half_gemm<f16>(int64_t, int64_t, int64_t, const f16*, int64_t, int64_t, const f16*, int64_t,
                                    int64_t, f16*);
extern template bool half_gemm<bf16>(int64_t, int64_t, int64_t, const bf16*, int64_t, int64_t, const bf16*, int64_t,
                                     int64_t, bf16*);
extern template bool mixed_gemm<f16>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const f16*, int64_t,
                                     int64_t, float*, bool);
extern template bool mixed_gemm<bf16>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const bf16*, int64_t,
                                      int64_t, float*, bool);

}  // namespace wick::cpu
