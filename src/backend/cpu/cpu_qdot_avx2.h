// Integer block dot products of the CPU's q8-activation quant_matmul for q8_0, q4_0 and mxfp4
// weights (cpu_qdot_avx2.cpp; the K-quants' are cpu_qdot_k.h): x rounded to q8_0 per 32
// values, then each 32-value block of a weight row contributes (the two scales) * (integer
// dot of the 32 quants). The AVX2 kernels keep 8 int32 lanes per
// block (lane l: values 4l..4l+3) and accumulate them with FMA into 8 float lanes; the
// scalar references do exactly the same arithmetic lane by lane, so both give the same
// floats bit for bit (what the tests check), and the AVX2 path can be tested off AVX2.
#pragma once

#include <cstdint>
#include <vector>

#include "wick/quant.h"

namespace wick::cpu::qdot {

// Rows of x quantized to q8_0 (bit for bit quantize_run(Q8_0)), unpacked for the kernels:
// contiguous quants, the f16 scale as a float, and each block's sum of quants (the tile
// kernel's correction for the weights' offset).
struct ActQ8 {
  int64_t rows = 0, blocks = 0;  // blocks of 32 per row
  std::vector<int8_t> qs;        // rows * blocks * 32
  std::vector<float> d;          // rows * blocks
  std::vector<int16_t> sum;      // rows * blocks
  // For the wide kernel (prepare_wide): per row, per pair of blocks, 16 floats, lanes 0..7
  // the even block's d and 8..15 the odd one's (0 past the last block).
  std::vector<float> d_pairs;
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

// The wide form for q8_0 and q4_0 weights (cpu_qdot_avx512.cpp, where the CPU has AVX-512
// VNNI: cpu_isa.h): two blocks per 512-bit register, lanes 0..7 the even blocks' and 8..15
// the odd ones', int32 lane sums by vpdpbusd (the same integers as the AVX2 pair sums),
// the halves added lane by lane at the end before the AVX2 kernels' 8-lane sum; up to
// kMaxWideRows rows of x per decoded weight block. Its scalar reference does the same
// arithmetic in the same lane order, so both give the same floats bit for bit.
inline constexpr int kMaxWideRows = 8;
bool has_wide_kernel(GgmlType type);
// Whether dot_rows_wide runs the AVX-512 kernel (else its reference).
bool wide_available();
// Fills a.d_pairs from a.d; dot_rows_wide needs it.
void prepare_wide(ActQ8& a);
void dot_rows_wide(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride,
                   bool simd = true);
// The tile kernel for prefill-sized products of q8_0 / q4_0 / mxfp4 weights (AVX-512 VNNI only):
// kTileRows8 weight rows (w: the first, rows row_bytes apart) against every activation row,
// each lane of a vector one weight row's sum: per 32-value block the exact integer sum S of
// w quants times x quants, then acc = fma(float(S), d_w * d_x, acc); y[m * y_stride + j] for
// m < a.rows, j < kTileRows8. Another summation order than dot_rows / dot_rows_wide (within
// f32 rounding of them). False, doing nothing, where it was not compiled in or the CPU lacks
// AVX-512 VNNI.
inline constexpr int kTileRows8 = 16;
bool avx512_dot_tile(GgmlType type, const uint8_t* w, size_t row_bytes, const ActQ8& a, float* y, int64_t y_stride);

// The AVX-512 kernel itself (false, doing nothing, where it was not compiled in).
bool avx512_dot_rows(GgmlType type, const uint8_t* w, const ActQ8& a, int64_t m0, int R, float* y, int64_t y_stride);

}  // namespace wick::cpu::qdot
