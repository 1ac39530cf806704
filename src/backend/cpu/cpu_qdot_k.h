// Integer dot products of K-quant weights (q4_K, q5_K, q6_K) against q8_K activations, the
// CPU quant_matmul's path for those types (cpu_qdot_k.cpp, cpu_qdot_k_avx512.cpp), as ggml's
// CPU does them: x rounded to q8_K (one f32 scale per 256 values, ggml's
// quantize_row_q8_K_ref bit for bit, with the sums of each 16 quants), and for each
// 256-value super-block the sub-block scales applied to the integer products, so a whole
// super-block is one integer sum per lane and one float multiply-add.
//
// The arithmetic every implementation does (the scalar reference, AVX2, AVX-512 VNNI), so all
// give the same floats bit for bit: per weight row and activation row, 8 int32 lanes per
// super-block, lane l = sum over the super-block's 32-value chunks c of
// scale(c, l) * (q . x over values 32c + 4l .. 32c + 4l + 3), with q the unsigned stored quant
// (q4_K 0..15, q5_K 0..31, q6_K 0..63) and scale(c, l) the scale of those values; then
//   acc[l]  = fma(d_w * d_x, float(lane l), acc[l])
//   bias[i] = fma(f_min * d_x, float(-offset lane i), bias[i])      (i < 4)
// where the offset is the integer sum of the mins times the activation sums (q4_K / q5_K:
// f_min = dmin, lane i = sum over j in {2i, 2i + 1} of m_j * (sum of the x quants of
// sub-block j)) or of the 32 the stored quants are shifted by (q6_K: f_min = d, lane i =
// 32 * sum over k in {2i, 2i + 1, 2i + 8, 2i + 9} of sc_k * (sum of the x quants of group k
// of 16)); the result is hsum8(acc) + ((bias[0] + bias[2]) + (bias[1] + bias[3])), hsum8
// the AVX2 horizontal-sum order. The AVX-512 kernel sums 64 values per instruction into 16
// lanes and adds the upper 8 to the lower before the float step: the same integers.
#pragma once

#include <cstdint>
#include <vector>

#include "wick/quant.h"

namespace wick::cpu::qdot {

// Rows of x rounded to q8_K.
struct ActQ8K {
  int64_t rows = 0, blocks = 0;  // super-blocks of 256 per row
  std::vector<int8_t> qs;        // rows * blocks * 256
  std::vector<float> d;          // rows * blocks
  std::vector<int16_t> bsums;    // rows * blocks * 16: the sum of each 16 quants
};

// Sizes `a` for M rows of K (K % 256 == 0); quantize_act_k_rows fills rows [m0, m1) from x
// (contiguous f32, x pointing at row 0), so threads can fill disjoint ranges. simd = false
// runs the scalar reference (ggml's code); both give identical contents.
void resize_act_k(ActQ8K& a, int64_t M, int64_t K);
void quantize_act_k_rows(const float* x, int64_t K, int64_t m0, int64_t m1, ActQ8K& a, bool simd = true);

// Whether dot_rows_k has a kernel for this weight type (q4_K, q5_K, q6_K).
bool has_k_kernel(GgmlType type);

// y[r * y_stride] = (weight row w: a.blocks super-blocks of `type`) . (activation row m0 + r)
// for r < R, 1 <= R <= kMaxKRows: each super-block is decoded once for the R rows. Takes
// the AVX-512 VNNI kernel where the CPU has it, else AVX2, else (or with simd = false) the
// scalar reference.
inline constexpr int kMaxKRows = 8;
void dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t y_stride,
                bool simd = true);

// The AVX-512 VNNI kernel itself (false, doing nothing, where it was not compiled in).
bool avx512_dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t y_stride);

}  // namespace wick::cpu::qdot
