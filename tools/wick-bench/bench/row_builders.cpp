// The row builders: each computes the bytes/flops the throughput columns use and a setup
// that allocates its inputs on the device and returns the body to time.
#include "bench/row_builders.h"

#include <memory>

#include "wick/memory.h"
#include "wick/wick.h"

namespace wick::bench {

namespace {

double es(DType dt) { return double(dtype_size(dt)); }

// Random row indices in [0, bound), built on the CPU then moved (the conversion from the
// float draw truncates).
Tensor random_indices(Shape shape, int64_t bound, Device device) {
  return (rand(std::move(shape), DType::F32) * double(bound - 1)).to(DType::I64).to(device);
}

Row make(std::string op, std::string shape, DType dtype, double bytes,
         std::vector<std::pair<std::string, int64_t>> args, std::function<Prepared(Device)> setup) {
  Row r;
  r.op = std::move(op);
  r.shape = std::move(shape);
  r.dtype = std::string(dtype_name(dtype));
  r.bytes = bytes;
  r.args = std::move(args);
  r.setup = std::move(setup);
  return r;
}

}  // namespace

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

Row elementwise_row(const std::string& op, int64_t n, DType dt) {
  const int inputs = op == "add" ? 2 : 1;
  double bytes = double(n) * es(dt) * (inputs + 1);
  if (op == "where") bytes = double(n) * (1 + 3 * es(dt));  // u8 cond, two inputs, output
  return make(op, std::to_string(n), dt, bytes, {{"n", n}}, [op, n, dt](Device d) -> Prepared {
    Tensor a = randn(Shape{n}, dt, d), b = randn(Shape{n}, dt, d);
    if (op == "copy") return {[a] { (void)a.clone(); }, {}};
    if (op == "add") return {[a, b] { (void)add(a, b); }, {}};
    if (op == "exp") return {[a] { (void)exp(a); }, {}};
    if (op == "gelu") return {[a] { (void)gelu(a); }, {}};
    if (op == "affine") return {[a] { (void)affine(a, 1.5, 0.25); }, {}};
    Tensor cond = gt(a, b);  // where
    return {[cond, a, b] { (void)where(cond, a, b); }, {}};
  });
}

Row cast_row(int64_t n, DType to) {
  Row r = make("cast", std::to_string(n), DType::F32, double(n) * (4 + es(to)), {{"n", n}}, [n, to](Device d) {
    Tensor a = randn(Shape{n}, DType::F32, d);
    return Prepared{[a, to] { (void)a.to(to); }, {}};
  });
  r.dtype = "f32->" + std::string(dtype_name(to));
  return r;
}

Row matrix_row(const std::string& op, int64_t rows, int64_t cols, DType dt) {
  const double n = double(rows) * double(cols), e = es(dt);
  double bytes = 2 * n * e;  // one input, one same-size output
  if (op == "add_row_bcast") bytes = 2 * n * e + double(cols) * e;
  if (op == "add_transposed") bytes = 3 * n * e;
  if (op == "sum_last" || op == "max_last") bytes = n * e + double(rows) * e;
  if (op == "sum_first" || op == "max_first") bytes = n * e + double(cols) * e;
  if (op == "argmax_last") bytes = n * e + double(rows) * 8;
  if (op == "argmax_first") bytes = n * e + double(cols) * 8;
  if (op == "sum_all") bytes = n * e + e;
  if (op == "layer_norm") bytes = 2 * n * e + 2 * double(cols) * e;
  if (op == "argsort_last") bytes = n * e + n * 8;                       // i64 indices
  if (op == "topk50_last") bytes = n * e + double(rows) * 50 * (e + 8);  // values + indices
  return make(op, dims_str({rows, cols}), dt, bytes, {{"rows", rows}, {"cols", cols}},
              [op, rows, cols, dt](Device d) -> Prepared {
                Tensor m = randn(Shape{rows, cols}, dt, d);
                if (op == "add_row_bcast") {
                  Tensor r = randn(Shape{cols}, dt, d);
                  return {[m, r] { (void)add(m, r); }, {}};
                }
                if (op == "add_transposed") {
                  Tensor b = randn(Shape{cols, rows}, dt, d);
                  return {[m, b] { (void)add(m, b.t()); }, {}};
                }
                if (op == "transpose_copy") {
                  Tensor b = randn(Shape{cols, rows}, dt, d);
                  return {[b] { (void)b.t().contiguous(); }, {}};
                }
                if (op == "sum_last") return {[m] { (void)sum(m, {-1}); }, {}};
                if (op == "sum_first") return {[m] { (void)sum(m, {0}); }, {}};
                if (op == "sum_all") return {[m] { (void)sum(m); }, {}};
                if (op == "max_last") return {[m] { (void)max(m, {-1}); }, {}};
                if (op == "max_first") return {[m] { (void)max(m, {0}); }, {}};
                if (op == "argmax_last") return {[m] { (void)argmax(m, -1); }, {}};
                if (op == "argmax_first") return {[m] { (void)argmax(m, 0); }, {}};
                if (op == "softmax") return {[m] { (void)softmax(m); }, {}};
                if (op == "cumsum_last") return {[m] { (void)cumsum(m, -1); }, {}};
                if (op == "argsort_last") return {[m] { (void)argsort(m, -1); }, {}};
                if (op == "topk50_last") return {[m] { (void)topk(m, 50, -1); }, {}};
                Tensor w = randn(Shape{cols}, dt, d), b = randn(Shape{cols}, dt, d);  // layer_norm
                return {[m, w, b] { (void)layer_norm(m, w, b); }, {}};
              });
}

Row index_select_row(int64_t count, int64_t vocab, int64_t dim, DType dt) {
  const double bytes = 2.0 * double(count) * double(dim) * es(dt) + double(count) * 8;
  return make("index_select", std::to_string(count) + " of " + dims_str({vocab, dim}), dt, bytes,
              {{"count", count}, {"vocab", vocab}, {"dim", dim}}, [=](Device d) {
                Tensor table = randn(Shape{vocab, dim}, dt, d);
                Tensor idx = random_indices(Shape{count}, vocab, d);
                return Prepared{[table, idx] { (void)index_select(table, 0, idx); }, {}};
              });
}

Row gather_row(int64_t rows, int64_t cols, int64_t k, DType dt) {
  const double out = double(rows) * double(k);
  return make("gather", dims_str({rows, cols}) + " -> " + dims_str({rows, k}), dt, out * (2 * es(dt) + 8),
              {{"rows", rows}, {"cols", cols}, {"k", k}}, [=](Device d) {
                Tensor src = randn(Shape{rows, cols}, dt, d);
                Tensor idx = random_indices(Shape{rows, k}, cols, d);
                return Prepared{[src, idx] { (void)gather(src, 1, idx); }, {}};
              });
}

Row matmul_row(int64_t m, int64_t n, int64_t k, bool nt, DType dt) {
  Row r = make(nt ? "matmul_nt" : "matmul", dims_str({m, n, k}), dt,
               (double(m) * k + double(k) * n + double(m) * n) * es(dt), {{"m", m}, {"n", n}, {"k", k}}, [=](Device d) {
                 Tensor a = randn(Shape{m, k}, dt, d);
                 Tensor b = nt ? randn(Shape{n, k}, dt, d).t() : randn(Shape{k, n}, dt, d);
                 return Prepared{[a, b] { (void)matmul(a, b); }, {}};
               });
  r.flops = 2.0 * double(m) * double(n) * double(k);
  return r;
}

Row bmm_row(int64_t batch, int64_t m, int64_t n, int64_t k, DType dt) {
  Row r = make("bmm", std::to_string(batch) + "x(" + dims_str({m, k}) + "*" + dims_str({k, n}) + ")", dt,
               double(batch) * (double(m) * k + double(k) * n + double(m) * n) * es(dt),
               {{"batch", batch}, {"m", m}, {"n", n}, {"k", k}}, [=](Device d) {
                 Tensor a = randn(Shape{batch, m, k}, dt, d), b = randn(Shape{batch, k, n}, dt, d);
                 return Prepared{[a, b] { (void)matmul(a, b); }, {}};
               });
  r.flops = 2.0 * double(batch) * double(m) * double(n) * double(k);
  return r;
}

Row conv2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t cout, int64_t kh, int64_t pad, DType dt, bool tf32) {
  const int64_t oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kh + 1;
  const double in = double(n) * c * h * w, wt = double(cout) * c * kh * kh, out = double(n) * cout * oh * ow;
  Row r = make(tf32 ? "conv2d_tf32" : "conv2d",
               dims_str({n, c, h, w}) + " * " + dims_str({cout, c, kh, kh}) + " p" + std::to_string(pad), dt,
               (in + wt + out) * es(dt),
               {{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"cout", cout}, {"kh", kh}, {"pad", pad}}, [=](Device d) {
                 Tensor x = randn(Shape{n, c, h, w}, dt, d), wgt = randn(Shape{cout, c, kh, kh}, dt, d);
                 Conv2dOptions opt;
                 opt.padding = {pad, pad};
                 return Prepared{[x, wgt, opt, tf32] {
                                   const AllowTf32Scope scope(tf32);
                                   (void)conv2d(x, wgt, Tensor(), opt);
                                 },
                                 {}};
               });
  r.flops = 2.0 * out * double(c) * double(kh) * double(kh);
  return r;
}

Row max_pool2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, DType dt) {
  const double in = double(n) * c * h * w;
  return make("max_pool2d", dims_str({n, c, h, w}) + " k" + std::to_string(k), dt, (in + in / double(k * k)) * es(dt),
              {{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"k", k}}, [=](Device d) {
                Tensor x = randn(Shape{n, c, h, w}, dt, d);
                Pool2dOptions opt;
                opt.kernel = {k, k};
                return Prepared{[x, opt] { (void)max_pool2d(x, opt); }, {}};
              });
}

Row upsample_nearest2d_row(int64_t n, int64_t c, int64_t h, int64_t w, int64_t scale, DType dt) {
  const double in = double(n) * c * h * w;
  return make("upsample_nearest2d", dims_str({n, c, h, w}) + " x" + std::to_string(scale), dt,
              (in + in * double(scale * scale)) * es(dt), {{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"scale", scale}},
              [=](Device d) {
                Tensor x = randn(Shape{n, c, h, w}, dt, d);
                return Prepared{[x, h, w, scale] { (void)upsample_nearest2d(x, h * scale, w * scale); }, {}};
              });
}

Row tiny_add_row(int64_t ops) {
  Row r = make("tiny_add", "16", DType::F32, 0, {{"n", 16}, {"ops", ops}}, [ops](Device d) {
    Tensor a = randn(Shape{16}, DType::F32, d), b = randn(Shape{16}, DType::F32, d);
    return Prepared{[a, b, ops] {
                      for (int64_t i = 0; i < ops; ++i) (void)add(a, b);
                    },
                    {}};
  });
  r.ops_per_run = ops;
  return r;
}

Row graph_tiny_add_row(int64_t ops) {
  // The tiny_add sequence recorded once as a CUDA graph: per op, what a replay costs
  // (the difference to tiny_add is what the graph saves).
  Row r = make("graph_tiny_add", "16", DType::F32, 0, {{"n", 16}, {"ops", ops}}, [ops](Device d) {
    Tensor a = randn(Shape{16}, DType::F32, d), b = randn(Shape{16}, DType::F32, d);
    auto out = std::make_shared<std::vector<Tensor>>();
    const CudaGraph g = CudaGraph::capture(d, [&] {
      Tensor x = a;
      for (int64_t i = 0; i < ops; ++i) x = add(x, b);  // a chain, as a model's ops are
      out->push_back(x);
    });
    return Prepared{[g, out] { g.replay(); }, {}};
  });
  r.ops_per_run = ops;
  return r;
}

Row alloc_row(const std::string& kind, int64_t count) {
  Row r = make("alloc_" + kind, "4KB..64MB", DType::U8, 0, {{"count", count}}, [kind, count](Device d) {
    set_allocator(d, kind == "caching" ? AllocatorKind::Caching : AllocatorKind::AsyncPool);
    // Log-uniform sizes from 4 KB (2^12) to 64 MB (2^26), from a fixed-seed LCG so every
    // run and both allocators see the same sequence.
    auto sizes = std::make_shared<std::vector<int64_t>>();
    uint64_t s = 12345;
    for (int64_t i = 0; i < count; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double e = 12.0 + 14.0 * double(s >> 11) / double(1ull << 53);
      sizes->push_back(int64_t(std::exp2(e)));
    }
    // A ring of 16 live tensors, so frees interleave with allocations as in a real model.
    auto run = [sizes, d] {
      std::vector<Tensor> ring(16);
      for (size_t i = 0; i < sizes->size(); ++i)
        ring[i % ring.size()] = Tensor::empty(Shape{(*sizes)[i]}, DType::U8, d);
    };
    auto teardown = [d] {
      set_allocator(d, AllocatorKind::Caching);
      empty_cache(d);
    };
    return Prepared{run, teardown};
  });
  r.dtype = "u8";
  r.ops_per_run = count;
  return r;
}

}  // namespace wick::bench
