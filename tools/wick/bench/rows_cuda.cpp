// The CUDA rows: the targets tracked by the "GPU performance" issue, in f32 and bf16
// (matmuls also f16), plus the host cost of a tiny op (eager and replayed from a CUDA graph) and the two
// allocators.
#include "bench/row_builders.h"
#include "bench/rows_quant.h"

namespace wick::bench {

std::vector<Row> cuda_rows(bool quick) {
  const int64_t n = quick ? (1 << 20) : (1 << 28);
  const int64_t sq = quick ? 1024 : 16384;  // square matrices
  const int64_t rows = quick ? 4096 : 262144, cols = 1024;
  const int64_t mm = quick ? 1024 : 8192, mm32 = quick ? 512 : 4096;
  const int64_t batch = quick ? 4 : 32;  // conv / pool / upsample batch
  std::vector<Row> r;
  for (DType dt : {DType::F32, DType::BF16}) {
    for (const char* op : {"copy", "add", "exp", "gelu", "affine"}) r.push_back(elementwise_row(op, n, dt));
    for (const char* op : {"add_row_bcast", "add_transposed", "transpose_copy", "sum_last", "sum_first", "max_last",
                           "max_first", "argmax_last", "argmax_first", "sum_all"})
      r.push_back(matrix_row(op, sq, sq, dt));
    r.push_back(matrix_row("softmax", rows, cols, dt));
    r.push_back(matrix_row("layer_norm", rows, cols, dt));
    r.push_back(elementwise_row("where", n, dt));
    r.push_back(index_select_row(8192, 50257, 768, dt));
    r.push_back(gather_row(quick ? 1024 : 16384, 4096, 1024, dt));
    r.push_back(bmm_row(64, 1024, 1024, 64, dt));
    r.push_back(conv2d_row(batch, 64, 56, 56, 64, 3, 1, dt));
    r.push_back(max_pool2d_row(batch, 64, 112, 112, 2, dt));
    r.push_back(upsample_nearest2d_row(batch, 64, 56, 56, 2, dt));
  }
  r.push_back(cast_row(n, DType::BF16));
  r.push_back(cast_row(n, DType::F16));
  for (DType dt : {DType::BF16, DType::F16}) {
    r.push_back(matmul_row(mm, mm, mm, false, dt));
    r.push_back(matmul_row(mm, mm, mm, true, dt));
  }
  r.push_back(matmul_row(mm32, mm32, mm32, false, DType::F32));
  r.push_back(tiny_add_row(quick ? 2000 : 20000));
  r.push_back(graph_tiny_add_row(quick ? 200 : 2000));
  r.push_back(alloc_row("caching", 1000));
  r.push_back(alloc_row("async_pool", 1000));
  for (Row& q : qmatvec_rows(quick, false)) r.push_back(std::move(q));
  return r;
}

}  // namespace wick::bench
