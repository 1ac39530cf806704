// qmatvec rows: quant_matmul with one activation row, the decode step of an LLM.
#include "bench/rows_quant.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "bench/row_builders.h"
#include "wick/quant.h"
#include "wick/wick.h"

namespace wick::bench {

namespace {

// Products per timed run: one 4096 x 4096 product reads 2-19 MB, a few microseconds on an
// H200, so a lone call would time its launch more than the kernel.
constexpr int kOpsPerRun = 20;

// On a GPU the products cycle through distinct copies of W totalling more than this, so
// the weight is read from HBM each time, not from the L2 cache (50 MB on an H200: a
// 9 MB q4_0 4096 x 4096 weight would otherwise stay resident across the repeated runs).
constexpr double kColdBytes = 200e6;

size_t gpu_weight_copies(GgmlType type, int64_t n, int64_t k) {
  return size_t(std::ceil(kColdBytes / std::max(double(ggml_row_bytes(type, k)) * double(n), 1.0)));
}

// How a GPU row issues its products: one by one from the host (eager, the host cost of a
// call included whenever it exceeds the kernel's time), or replayed from a CUDA graph that
// recorded one product per weight copy (the device time of back-to-back products, as a
// decode step replayed from a graph runs them).
enum class Issue { Eager, Graph };

Row qmatvec_row(GgmlType type, int64_t n, int64_t k, QuantActivation act = QuantActivation::F32,
                Issue issue = Issue::Eager) {
  Row r;
  r.op = "qmatvec_" + std::string(ggml_type_name(type)) + (act == QuantActivation::Q8 ? "_q8act" : "") +
         (issue == Issue::Graph ? "_graph" : "");
  for (char& c : r.op) c = char(std::tolower(static_cast<unsigned char>(c)));  // q4_K -> q4_k
  r.shape = dims_str({n, k});
  r.dtype = "f32";
  r.bytes = double(ggml_row_bytes(type, k)) * double(n);
  r.flops = 2.0 * double(n) * double(k);
  r.args = {{"n", n}, {"k", k}, {"m", 1}};
  r.setup = [=](Device d) {
    // Quantized on the CPU (the reference quantizers), then moved packed.
    const QuantTensor wq = quantize(randn(Shape{n, k}, DType::F32), type, "w");
    const size_t copies = d.is_cpu() ? 1 : gpu_weight_copies(type, n, k);
    std::vector<QuantTensor> ws;
    for (size_t i = 0; i < copies; ++i) ws.push_back(wq.to(d));  // each a separate device buffer
    const Tensor x = randn(Shape{1, k}, DType::F32, d);
    if (issue == Issue::Graph) {
      (void)quant_matmul(x, ws[0], act);  // first call outside the capture (one-time setup)
      const CudaGraph g = CudaGraph::capture(d, [&] {
        for (const QuantTensor& w : ws) (void)quant_matmul(x, w, act);
      });
      return Prepared{[g, ws] { g.replay(); }, {}};
    }
    auto next = std::make_shared<size_t>(0);  // product i uses copy i % copies, across runs
    return Prepared{[ws = std::move(ws), x, act, next] {
                      for (int i = 0; i < kOpsPerRun; ++i) {
                        (void)quant_matmul(x, ws[*next], act);
                        *next = (*next + 1) % ws.size();
                      }
                    },
                    {}};
  };
  // A graph replays one product per weight copy.
  r.ops_per_run = issue == Issue::Graph ? int64_t(gpu_weight_copies(type, n, k)) : kOpsPerRun;
  return r;
}

Row f32_blas_row(int64_t n, int64_t k) {
  Row r;
  r.op = "qmatvec_f32_blas";
  r.shape = dims_str({n, k});
  r.dtype = "f32";
  r.bytes = double(n) * double(k) * 4.0;
  r.flops = 2.0 * double(n) * double(k);
  r.args = {{"n", n}, {"k", k}, {"m", 1}};
  r.setup = [=](Device d) {
    const Tensor x = randn(Shape{1, k}, DType::F32, d), w = randn(Shape{k, n}, DType::F32, d);
    return Prepared{[x, w] {
                      for (int i = 0; i < kOpsPerRun; ++i) (void)matmul(x, w);
                    },
                    {}};
  };
  r.ops_per_run = kOpsPerRun;
  return r;
}

}  // namespace

std::vector<Row> qmatvec_rows(bool quick, bool with_f32_blas) {
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      quick ? std::vector<std::pair<int64_t, int64_t>>{{512, 1024}}
            : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {14336, 4096}};
  std::vector<Row> r;
  for (auto [n, k] : shapes) {
    const std::vector<GgmlType> types = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K};
    for (GgmlType t : types) r.push_back(qmatvec_row(t, n, k));
    // ggml's route, x rounded to q8_0 (integer dot products): on the CPU for the types
    // with the integer kernel, on a GPU for all four (the dp4a kernel).
    for (GgmlType t : types)
      if (!with_f32_blas || t == GgmlType::Q4_0 || t == GgmlType::Q8_0)
        r.push_back(qmatvec_row(t, n, k, QuantActivation::Q8));
    if (with_f32_blas) {
      r.push_back(f32_blas_row(n, k));  // the CPU list
    } else {
      // The GPU list: the q8 products again, replayed from a CUDA graph.
      for (GgmlType t : types) r.push_back(qmatvec_row(t, n, k, QuantActivation::Q8, Issue::Graph));
    }
  }
  return r;
}

}  // namespace wick::bench
