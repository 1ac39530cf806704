// Builders for the benchmark rows shared by the CPU and CUDA lists. Inputs are random
// (randn / rand), never zeros, so no kernel can take a shortcut on special values.
#pragma once

#include <string>

#include "bench/bench.h"
#include "wick/dtype.h"

namespace wick::bench {

std::string dims_str(std::initializer_list<int64_t> dims);  // "4096x4096"

// Elementwise over n elements: op is one of copy, add, exp, gelu, affine, where.
Row elementwise_row(const std::string& op, int64_t n, DType dtype);
// f32 -> to (bf16 / f16) over n elements.
Row cast_row(int64_t n, DType to);
// rows x cols matrices: add_row_bcast, add_transposed, transpose_copy, sum_last,
// sum_first, sum_all, max_last, max_first, argmax_last, argmax_first, softmax, layer_norm.
Row matrix_row(const std::string& op, int64_t rows, int64_t cols, DType dtype);
// index_select of `count` random rows from a (vocab, dim) table.
Row index_select_row(int64_t count, int64_t vocab, int64_t dim, DType dtype);
// gather along dim 1: src (rows, cols), index (rows, k) -> (rows, k).
Row gather_row(int64_t rows, int64_t cols, int64_t k, DType dtype);
// (m, k) x (k, n); nt: the second operand is a transposed (n, k) tensor.
Row matmul_row(int64_t m, int64_t n, int64_t k, bool nt, DType dtype);
// batch x ((m, k) x (k, n)).
Row bmm_row(int64_t batch, int64_t m, int64_t n, int64_t k, DType dtype);
// x (n, c, h, w) * weight (cout, c, kh, kh), stride 1, padding pad.
// tf32 (f32 only): the row conv2d_tf32, run with wick::set_allow_tf32(true) (PyTorch's
// default for convolutions); the plain f32 row is exact on both sides.
Row conv2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t cout, int64_t kh, int64_t pad, DType dtype,
               bool tf32 = false);
Row max_pool2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, DType dtype);
Row upsample_nearest2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t scale, DType dtype);
// Host cost of a tiny op: `ops` adds of 16 elements, one synchronize at the end.
Row tiny_add_row(int64_t ops);
Row graph_tiny_add_row(int64_t ops);  // CUDA only: tiny_add replayed from a CUDA graph
// Allocating and freeing `count` tensors of mixed sizes (4 KB .. 64 MB) with the given
// CUDA allocator ("caching" or "async_pool").
Row alloc_row(const std::string& kind, int64_t count);

}  // namespace wick::bench
