// The CUDA rows: the targets tracked by the "GPU performance" issue, in f32 and bf16
// (matmuls also f16), plus the host cost of a tiny op (eager and replayed from a CUDA graph),
// the two allocators, attention and quantized matrix-vector products.
#include <limits>

#include "bench/row_builders.h"
#include "bench/rows_quant.h"
#include "wick/nn.h"
#include "wick/wick.h"

namespace wick::bench {

namespace {

// scaled_dot_product_attention over (b, h, tq | tk, d) with random q, k, v. masked: an
// additive (b, 1, tq, tk) mask that is -inf past key valid_keys, as a decode step over a
// preallocated KV cache uses. compare_cuda.py rebuilds it from args.
Row sdpa_row(int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d, bool causal, bool masked, DType dt) {
  const int64_t valid = tk / 2;
  Row r;
  r.op = masked ? "sdpa_masked" : causal ? "sdpa_causal" : "sdpa";
  r.shape = dims_str({b, h, tq, tk, d});
  r.dtype = std::string(dtype_name(dt));
  const double e = double(dtype_size(dt));
  r.bytes = double(b * h) * double(2 * tq + 2 * tk) * double(d) * e + (masked ? double(b * tq * tk) * e : 0.0);
  // Score and P V matmuls; causal halves them (prefill rows, tq == tk).
  r.flops = 4.0 * double(b * h) * double(tq) * double(tk) * double(d) * (causal ? 0.5 : 1.0);
  r.args = {{"b", b}, {"h", h}, {"tq", tq}, {"tk", tk}, {"d", d}, {"causal", causal}, {"valid", masked ? valid : tk}};
  r.setup = [=](Device dev) {
    Tensor q = randn(Shape{b, h, tq, d}, dt, dev), k = randn(Shape{b, h, tk, d}, dt, dev),
           v = randn(Shape{b, h, tk, d}, dt, dev);
    Tensor mask;
    if (masked) {
      std::vector<float> m(size_t(b * tq * tk), 0.0f);
      for (size_t i = 0; i < m.size(); ++i)
        if (int64_t(i) % tk >= valid) m[i] = -std::numeric_limits<float>::infinity();
      mask = Tensor::from_vector<float>(m, Shape{b, 1, tq, tk}).to(dt).to(dev);
    }
    AttentionOptions opt;
    opt.causal = causal;
    return Prepared{[q, k, v, mask, opt] { (void)scaled_dot_product_attention(q, k, v, mask, opt); }, {}};
  };
  return r;
}

}  // namespace

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
    // The ops added with the op table (issue 19): a scan, a stable sort, and the sampler's
    // top-k over rows of a Llama-3 vocabulary.
    r.push_back(matrix_row("cumsum_last", rows, cols, dt));
    r.push_back(matrix_row("argsort_last", quick ? 256 : 16384, cols, dt));
    r.push_back(matrix_row("topk50_last", quick ? 4 : 32, 128256, dt));
    r.push_back(matrix_row("layer_norm", rows, cols, dt));
    r.push_back(elementwise_row("where", n, dt));
    r.push_back(index_select_row(8192, 50257, 768, dt));
    r.push_back(gather_row(quick ? 1024 : 16384, 4096, 1024, dt));
    r.push_back(bmm_row(64, 1024, 1024, 64, dt));
    r.push_back(conv2d_row(batch, 64, 56, 56, 64, 3, 1, dt));
    r.push_back(max_pool2d_row(batch, 64, 112, 112, 2, dt));
    r.push_back(upsample_nearest2d_row(batch, 64, 56, 56, 2, dt));
  }
  r.push_back(conv2d_row(batch, 64, 56, 56, 64, 3, 1, DType::F32, true));  // TF32 on both sides
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
  // Attention: GPT-2 small prefill (12 heads of 64, 1024 tokens) and one decode step over a
  // 1024-position cache of which half is valid.
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (int64_t b : {1, 8}) r.push_back(sdpa_row(b, 12, 1024, 1024, 64, true, false, dt));
  for (DType dt : {DType::BF16, DType::F32}) r.push_back(sdpa_row(1, 12, 1, 1024, 64, false, true, dt));
  return r;
}

}  // namespace wick::bench
