// cache_attention and cache_write_: a batched decode step's attention against a pool of KV
// cache blocks (one (P, KV, N, D) buffer per layer: a paged cache's blocks, or KvCache::pooled's
// slots) and its cache update. The front end checks shapes, dtypes and devices; the block, length and position values
// are checked by the backends (the CPU before it writes anything, CUDA on the device, raised at the next
// synchronization), so that no call waits for the device and a CUDA graph can record both.
#include <cmath>

#include "core/checks.h"
#include "nn/attention_sinks.h"
#include "wick/nn.h"

namespace wick {

namespace {

void check_rows(std::string_view op, std::string_view name, const Tensor& t, int64_t B) {
  WICK_CHECK(t.dtype() == DType::I64, DTypeMismatch, op, ": ", name, " must be i64, got ", t.dtype());
  WICK_CHECK(t.rank() == 1 && t.dim(0) == B, ShapeMismatch, op, ": ", name, " must have shape (", B, "), got ",
             t.shape());
}

// blocks: (B) one block per row, or (B, M) a block table (nn.h).
void check_blocks(std::string_view op, const Tensor& t, int64_t B) {
  WICK_CHECK(t.dtype() == DType::I64, DTypeMismatch, op, ": blocks must be i64, got ", t.dtype());
  WICK_CHECK((t.rank() == 1 || (t.rank() == 2 && t.dim(1) >= 1)) && t.dim(0) == B, ShapeMismatch, op,
             ": blocks must have shape (", B, ") or (", B, ", blocks per row >= 1), got ", t.shape());
}

void check_pool(std::string_view op, const Tensor& k_cache, const Tensor& v_cache) {
  WICK_CHECK(k_cache.rank() == 4 && k_cache.shape() == v_cache.shape(), ShapeMismatch, op,
             ": k_cache and v_cache must share one shape (pool rows, kv heads, capacity, head_dim), got ",
             k_cache.shape(), " and ", v_cache.shape());
  detail::check_same_dtype(op, k_cache, v_cache);
}

}  // namespace

Tensor cache_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks,
                       const Tensor& lengths, const CacheAttentionOptions& opt) {
  constexpr std::string_view op = "cache_attention";
  const Device dev = detail::common_device(op, {&q, &k_cache, &v_cache, &blocks, &lengths});
  detail::check_float(op, q);
  check_pool(op, k_cache, v_cache);
  detail::check_same_dtype(op, q, k_cache);
  WICK_CHECK(q.rank() == 3, ShapeMismatch, op, ": q must have shape (rows, heads, head_dim), got ", q.shape());
  const int64_t B = q.dim(0), H = q.dim(1), D = q.dim(2), KV = k_cache.dim(1);
  WICK_CHECK(k_cache.dim(3) == D, ShapeMismatch, op, ": q ", q.shape(), " and the caches ", k_cache.shape(),
             " differ in head_dim");
  WICK_CHECK(KV > 0 && H % KV == 0, ShapeMismatch, op, ": q's ", H, " heads are not a multiple of the caches' ", KV,
             " key/value heads");
  WICK_CHECK(k_cache.dim(2) > 0 || B == 0, InvalidArgument, op, ": the caches hold no positions (capacity 0)");
  check_blocks(op, blocks, B);
  check_rows(op, "lengths", lengths, B);
  WICK_CHECK(opt.window >= 0, InvalidArgument, op, ": window must be >= 0, got ", opt.window);
  WICK_CHECK(std::isfinite(opt.softcap) && opt.softcap >= 0, InvalidArgument, op,
             ": softcap must be finite and >= 0, got ", opt.softcap);
  CacheAttentionParams p;
  p.scale = opt.scale.value_or(D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0);
  WICK_CHECK(std::isfinite(p.scale), InvalidArgument, op, ": scale must be finite, got ", p.scale);
  p.window = opt.window;
  p.softcap = opt.softcap;
  p.sinks = detail::attention_sinks(op, opt.sinks, H, dev);
  Tensor out = Tensor::empty(Shape{B, H, D}, q.dtype(), dev);
  if (out.numel() == 0) return out;
  backend_for(dev).cache_attention(p, q, k_cache, v_cache, blocks, lengths, out);
  return out;
}

void cache_write_(const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks, const Tensor& positions,
                  const Tensor& k, const Tensor& v) {
  constexpr std::string_view op = "cache_write_";
  const Device dev = detail::common_device(op, {&k_cache, &v_cache, &blocks, &positions, &k, &v});
  check_pool(op, k_cache, v_cache);
  detail::check_same_dtype(op, k_cache, k);
  detail::check_same_dtype(op, k_cache, v);
  const int64_t B = k.rank() == 3 ? k.dim(0) : 0;
  const Shape want{B, k_cache.dim(1), k_cache.dim(3)};
  WICK_CHECK(k.rank() == 3 && k.shape() == want && v.shape() == want, ShapeMismatch, op,
             ": k and v must have shape (rows, kv heads, head_dim) = ", want, " for caches ", k_cache.shape(), ", got ",
             k.shape(), " and ", v.shape());
  check_blocks(op, blocks, B);
  check_rows(op, "positions", positions, B);
  detail::check_writable(op, k_cache);
  detail::check_writable(op, v_cache);
  if (k.numel() == 0) return;
  // Sources that share memory with a cache are read from copies (the rows are written in
  // no particular order).
  const Tensor ks = detail::unaliased_input(k_cache, detail::unaliased_input(v_cache, k));
  const Tensor vs = detail::unaliased_input(k_cache, detail::unaliased_input(v_cache, v));
  const Tensor sl = detail::unaliased_input(k_cache, detail::unaliased_input(v_cache, blocks));
  const Tensor ps = detail::unaliased_input(k_cache, detail::unaliased_input(v_cache, positions));
  backend_for(dev).cache_write(k_cache, v_cache, sl, ps, ks, vs);
}

}  // namespace wick
