// Integer block dot products of the CPU's q8-activation quant_matmul (cpu_qdot_avx2.cpp):
// x rounded to q8_0 per 32 values, then each 32-value block of a q8_0, q4_0, q4_K or q6_K
// weight row contributes (float factor) * (integer dot of the 32 quants), the K-quants'
// sub-block scales applied to the integers (q6_K) or folded into the factor (q4_K, whose
// mins multiply the block's sum of x quants). The AVX2 kernels keep 8 int32 lanes per
// block (lane l: values 4l..4l+3) and accumulate them with FMA into 8 float lanes; the
// scalar references do exactly the same arithmetic lane by lane, so both give the same
// floats bit for bit (what the tests check), and the AVX2 path can be tested off AVX2.
#pragma once

#include <cstdint>
#include <vector>

#include "wick/quant.h"

namespace wick::cpu::qdot {

// Rows of x quantized to q8_0 (bit for bit quantize_run(Q8_0)), unpacked for the kernels:
// contiguous quants, the f16 scale as a float, and each block's sum of quants (the
// q4_K min term needs it).
struct ActQ8 {
  int64_t rows = 0, blocks = 0;  // blocks of 32 per row
  std::vector<int8_t> qs;        // rows * blocks * 32
  std::vector<float> d;          // rows * blocks
  std::vector<int16_t> sum;      // rows * blocks
};

// x (M, K) contiguous f32, K % 32 == 0. simd = false runs the scalar reference (ggml's
// q8_0 rounding through quantize_run); both give identical ActQ8 contents.
void quantize_act(const float* x, int64_t M, int64_t K, ActQ8& a, bool simd = true);

// The same in two steps, so that threads can fill disjoint row ranges of one buffer:
// resize_act sizes `a` for M rows of K (K % 32 == 0), quantize_act_rows writes rows
// [m0, m1) of x (x points at row 0).
void resize_act(ActQ8& a, int64_t M, int64_t K);
void quantize_act_rows(const float* x, int64_t K, int64_t m0, int64_t m1, ActQ8& a, bool simd = true);

// Whether dot_rows has a kernel for this weight type.
bool has_kernel(GgmlType type);

// y[r * y_stride] = (weight row w, a.blocks * 32 values of `type`) . (activation row m0 + r)
// for r < R, 1 <= R <= kMaxRows: each weight block is decoded once for the R rows.
inline constexpr int kMaxRows = 4;
void dot_rows(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride,
              bool simd = true);

// Whether the AVX2 kernels were compiled in (simd = true falls back to scalar otherwise).
bool have_avx2();

}  // namespace wick::cpu::qdot
