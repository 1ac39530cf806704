// The CPU rows: the floors tracked by the "CPU backend" issue. --quick shrinks every size
// so the whole list runs in a few seconds (CI smoke).
#include "bench/row_builders.h"
#include "bench/rows_quant.h"

namespace wick::bench {

std::vector<Row> cpu_rows(bool quick) {
  const DType f32 = DType::F32;
  const int64_t n = quick ? (1 << 18) : (1 << 24);
  const int64_t m = quick ? 512 : 4096;                                  // square matrices
  const int64_t rows = quick ? 1024 : 16384, cols = quick ? 256 : 1024;  // softmax/layer_norm
  const int64_t mm = quick ? 128 : 1024;
  std::vector<Row> r;
  for (const char* op : {"add", "exp", "gelu"}) r.push_back(elementwise_row(op, n, f32));
  r.push_back(matrix_row("add_row_bcast", m, m, f32));
  r.push_back(matrix_row("transpose_copy", m, m, f32));
  r.push_back(matrix_row("sum_last", m, m, f32));
  r.push_back(matrix_row("softmax", rows, cols, f32));
  r.push_back(matrix_row("layer_norm", rows, cols, f32));
  r.push_back(index_select_row(quick ? 512 : 8192, quick ? 4096 : 50257, quick ? 256 : 768, f32));
  r.push_back(quick ? conv2d_row(1, 16, 28, 28, 16, 3, 1, f32) : conv2d_row(8, 64, 56, 56, 64, 3, 1, f32));
  r.push_back(matmul_row(mm, mm, mm, false, f32));
  for (Row& q : qmatvec_rows(quick, true)) r.push_back(std::move(q));
  return r;
}

}  // namespace wick::bench
