// Integer dot products of K-quant weights (q2_K ... q6_K) against q8_K activations, the
// CPU quant_matmul's path for those types (cpu_qdot_k.cpp, cpu_qdot_k_avx512.cpp), as ggml's
// CPU does them: x rounded to q8_K (one f32 scale per 256 values, ggml's
// quantize_row_q8_K_ref bit for bit, with the sums of each 16 quants), and for each
// 256-value super-block the sub-block scales applied to the integer products, so a whole
// super-block is one integer sum per lane and one float multiply-add.
//
// The arithmetic every implementation does (the scalar reference, the AVX2 and AVX-512 row
// kernels, the AVX-512 tile kernel), so all give the same floats bit for bit: per weight row,
// activation row and super-block, the exact integer sum
//   S = sum over the 256 values v of scale(v) * q(v) * x(v)
// with q the unsigned stored quant (q2_K 0..3, q3_K 0..7, q4_K 0..15, q5_K 0..31, q6_K 0..63)
// and scale(v) its
// sub-block's scale, and the exact integer offset O of the mins times the activation sums
// (q2_K / q4_K / q5_K: f_min = dmin, O = sum over sub-blocks of m * (the sum of their x
// quants)) or of what the stored quants are shifted by (q3_K: 4, q6_K: 32; f_min = d, O =
// shift * sum_k sc_k * (the sum of the x quants of group k of 16)); then, super-block by super-block,
//   acc = fma(float(S), d_w * d_x, acc);  acc = fma(float(-O), f_min * d_x, acc)
// and the result is acc. The kernels order the integer additions as they like (exact).
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

// Whether dot_rows_k has a kernel for this weight type (q2_K, q3_K, q4_K, q5_K, q6_K).
bool has_k_kernel(GgmlType type);

// y[r * y_stride] = (weight row w: a.blocks super-blocks of `type`) . (activation row m0 + r)
// for r < R, 1 <= R <= kMaxKRows: each super-block is decoded once for the R rows. Takes
// the AVX-512 VNNI kernel where the CPU has it, else AVX2, else (or with simd = false) the
// scalar reference.
inline constexpr int kMaxKRows = 8;
void dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t y_stride,
                bool simd = true);

// The tile kernel for prefill-sized products (AVX-512 VNNI only): kTileRows weight rows at a
// time (w: the first, rows row_bytes apart) against every activation row of a, each lane of
// a vector one weight row's sum (no horizontal sums): y[m * y_stride + j] for m < a.rows,
// j < kTileRows. The same floats as dot_rows_k. False, doing nothing, where it was not
// compiled in or the CPU lacks AVX-512 VNNI.
inline constexpr int kTileRows = 16;
bool avx512_dot_tile_k(GgmlType type, const uint8_t* w, size_t row_bytes, const ActQ8K& a, float* y, int64_t y_stride);

// The AVX-512 VNNI kernel itself (false, doing nothing, where it was not compiled in).
bool avx512_dot_rows_k(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t y_stride);

}  // namespace wick::cpu::qdot
