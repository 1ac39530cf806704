// cache_attention and cache_write_ (nn.h): decode attention over a pool of KV caches and its
// cache update. Against numpy float64 goldens (tests/data/gen_cache_attention.py: grouped
// and multi-head, windows, softcaps, head dims 20 / 64 / 128) in every float dtype and in
// strided layouts (both CUDA paths: 16-byte rows and element by element); long rows (the
// CUDA kernel's key splits) against scaled_dot_product_attention over the same keys; bad
// slots, lengths and positions as IndexOutOfRange with nothing written; a CUDA graph
// recording of both ops replayed with new inputs. Paged caches: block tables (blocks of 16
// and of 5 positions, shared and scattered blocks, -1 past each row's length) against the
// same goldens, cache_write_ through a table, bad table entries as IndexOutOfRange.
#include <cmath>

#include "support/devices.h"
#include "support/golden.h"
#include "support/thrown.h"
#include "wick/graph.h"
#include "wick/io.h"
#include "wick/nn.h"

namespace wick {
namespace {

Tensor gold(const std::string& name) { return test::golden_tensor("cache_attention.safetensors", name); }

const DType kDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
double tol(DType dt) { return test::attention_tol(dt); }

class CacheAttention : public test::DeviceTest {
 protected:
  Tensor in(const std::string& name, DType dt = DType::F32) const {
    const Tensor g = gold(name);
    return (g.dtype() == DType::I64 ? g : g.to(dt)).to(dev());
  }
  // The device's deferred errors (CUDA raises a kernel's bad index at synchronization).
  void sync() const { synchronize(dev()); }
};

struct Case {
  std::string inputs, output;
  CacheAttentionOptions opt;
};

std::vector<Case> cases() {
  CacheAttentionOptions window, softcap;
  window.window = 8;
  softcap.softcap = 2.0;
  softcap.scale = 0.3;
  return {{"gqa", "gqa", {}},
          {"gqa", "window", window},
          {"gqa", "softcap", softcap},
          {"mha128", "mha128", {}},
          {"odd", "odd", {}}};
}

TEST_P(CacheAttention, MatchesNumpyGoldens) {
  for (const Case& c : cases())
    for (DType dt : kDTypes) {
      SCOPED_TRACE(c.output + " " + std::string(dtype_name(dt)));
      const Tensor got = cache_attention(in(c.inputs + ".q", dt), in(c.inputs + ".k", dt), in(c.inputs + ".v", dt),
                                         in(c.inputs + ".slots"), in(c.inputs + ".lengths"), c.opt);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_EQ(got.shape(), gold(c.output + ".out").shape());
      EXPECT_CLOSE(got, gold(c.output + ".out"), tol(dt), tol(dt));
    }
}

// gpt-oss's attention sinks (gen_cache_attention.py): a per-head logit in the softmax with a
// zero value, with and without a window, over slots and over paged blocks.
TEST_P(CacheAttention, SinksMatchNumpyGoldens) {
  CacheAttentionOptions sinks, windowed;
  for (DType dt : kDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    sinks.sinks = in("gqa.sinks", dt);
    windowed = sinks;
    windowed.window = 8;
    const Tensor q = in("gqa.q", dt), k = in("gqa.k", dt), v = in("gqa.v", dt);
    EXPECT_CLOSE(cache_attention(q, k, v, in("gqa.slots"), in("gqa.lengths"), sinks), gold("sinks.out"), tol(dt),
                 tol(dt));
    EXPECT_CLOSE(cache_attention(q, k, v, in("gqa.slots"), in("gqa.lengths"), windowed), gold("sinks_window.out"),
                 tol(dt), tol(dt));
    CacheAttentionOptions paged;
    paged.sinks = in("paged.sinks", dt);
    EXPECT_CLOSE(cache_attention(in("paged.q", dt), in("paged.k", dt), in("paged.v", dt), in("paged.tables"),
                                 in("paged.lengths"), paged),
                 gold("paged_sinks.out"), tol(dt), tol(dt));
  }
  sinks.sinks = in("gqa.sinks").narrow(0, 0, 5);
  EXPECT_WICK_ERROR(cache_attention(in("gqa.q"), in("gqa.k"), in("gqa.v"), in("gqa.slots"), in("gqa.lengths"), sinks),
                    ShapeMismatch, "sinks must have shape (6)");
}

// Block tables: rows whose keys lie in scattered (and shared) blocks of a pool.
TEST_P(CacheAttention, PagedMatchesNumpyGoldens) {
  CacheAttentionOptions window;
  window.window = 7;
  for (const Case& c :
       std::vector<Case>{{"paged", "paged", {}}, {"paged5", "paged5", {}}, {"paged5", "paged5_window", window}})
    for (DType dt : kDTypes) {
      SCOPED_TRACE(c.output + " " + std::string(dtype_name(dt)));
      const Tensor got = cache_attention(in(c.inputs + ".q", dt), in(c.inputs + ".k", dt), in(c.inputs + ".v", dt),
                                         in(c.inputs + ".tables"), in(c.inputs + ".lengths"), c.opt);
      EXPECT_CLOSE(got, gold(c.output + ".out"), tol(dt), tol(dt));
    }
  // A table viewed with strides (every other column of a wider one, transposed storage).
  const Tensor t = in("paged.tables");
  const Tensor wide = zeros(Shape{t.dim(1) * 2, t.dim(0)}, DType::I64, dev());
  wide.narrow(0, 0, t.dim(1)).copy_(t.transpose(0, 1));
  const Tensor strided = wide.narrow(0, 0, t.dim(1)).transpose(0, 1);
  EXPECT_CLOSE(cache_attention(in("paged.q"), in("paged.k"), in("paged.v"), strided, in("paged.lengths")),
               gold("paged.out"), tol(DType::F32), tol(DType::F32));
}

// The keys written through a table are where attention reads them: a prefill of 23 positions
// in blocks of 4, written one row per position (each row the sequence's table), then attended.
TEST_P(CacheAttention, PagedWriteThenAttend) {
  const int64_t KV = 2, N = 4, D = 8, H = 4, T = 23, P = 9;
  const std::vector<int64_t> table{5, 1, 8, 0, 3, 7};
  Tensor kc = zeros(Shape{P, KV, N, D}, DType::F32, dev()), vc = zeros(Shape{P, KV, N, D}, DType::F32, dev());
  const Tensor k = randn(Shape{T, KV, D}, DType::F32, dev()), v = randn(Shape{T, KV, D}, DType::F32, dev());
  const Tensor tab = Tensor::from_vector(table, Shape{1, 6}).to(dev());
  std::vector<int64_t> pos(T);
  for (int64_t t = 0; t < T; ++t) pos[size_t(t)] = t;
  cache_write_(kc, vc, tab.expand(Shape{T, 6}), Tensor::from_vector(pos).to(dev()), k, v);
  // The written positions, block by block, are k's rows in order.
  for (int64_t t = 0; t < T; ++t)
    EXPECT_CLOSE(kc.select(0, table[size_t(t / N)]).select(1, t % N), k.select(0, t), 0.0, 0.0);
  // The last position's query against the 23 keys equals plain attention over them.
  const Tensor q = randn(Shape{1, H, D}, DType::F32, dev());
  const Tensor got = cache_attention(q, kc, vc, tab, Tensor::from_vector(std::vector<int64_t>{T}).to(dev()));
  auto heads = [&](const Tensor& x) {  // (T, KV, D) -> (1, H, T, D), each kv head for its 2 query heads
    return x.transpose(0, 1).unsqueeze(1).expand(Shape{KV, 2, T, D}).reshape({1, H, T, D});
  };
  const Tensor want = scaled_dot_product_attention(q.unsqueeze(2), heads(k), heads(v)).reshape({1, H, D});
  EXPECT_CLOSE(got, want, 1e-5, 1e-5);
}

TEST_P(CacheAttention, PagedBadEntriesAreClearErrors) {
  const Tensor k = zeros(Shape{3, 1, 4, 8}, DType::F32, dev());
  const Tensor q = zeros(Shape{1, 2, 8}, DType::F32, dev());
  auto table = [&](std::vector<int64_t> v) { return Tensor::from_vector(v, Shape{1, int64_t(v.size())}).to(dev()); };
  auto one = [&](int64_t x) { return Tensor::from_vector(std::vector<int64_t>{x}).to(dev()); };
  auto kind = [&](auto f) { return test::thrown_kind(f); };
  // Entries past the length are not read: -1 there is fine.
  EXPECT_NO_THROW({
    cache_attention(q, k, k, table({2, 0, -1}), one(8));
    sync();
  });
  for (const auto& pair : {std::pair{table({2, 3, -1}), one(5)},     // a block past the pool
                           std::pair{table({2, -1, 0}), one(6)},     // -1 inside the length
                           std::pair{table({2, 0, 1}), one(13)}}) {  // past the table's 12 positions
    const Tensor& t = pair.first;
    const Tensor& len = pair.second;
    EXPECT_EQ(kind([&] {
                cache_attention(q, k, k, t, len);
                sync();
              }),
              ErrorKind::IndexOutOfRange);
    sync();
  }
  EXPECT_EQ(kind([&] { cache_attention(q, k, k, table({0}).reshape({1, 1, 1}), one(1)); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] {
              cache_attention(q, k, k, zeros(Shape{1, 0}, DType::I64, dev()), one(1));
            }),
            ErrorKind::ShapeMismatch);
  Tensor kc = zeros(Shape{3, 1, 4, 8}, DType::F32, dev()), vc = zeros(Shape{3, 1, 4, 8}, DType::F32, dev());
  const Tensor row = full(Shape{1, 1, 8}, 1.0, DType::F32, dev());
  for (const auto& pair : {std::pair{table({2, 3}), one(5)}, std::pair{table({2, 1}), one(8)}}) {
    const Tensor& t = pair.first;
    const Tensor& p = pair.second;
    EXPECT_EQ(kind([&] {
                cache_write_(kc, vc, t, p, row, row);
                sync();
              }),
              ErrorKind::IndexOutOfRange);
    sync();
  }
  if (dev().is_cpu()) {
    EXPECT_EQ(sum(kc).item<float>(), 0.0f);  // nothing written
  }
}

// The same values through views: q a transpose, the caches rows of a longer and permuted
// buffer (offsets, no 16-byte rows when the head dim is strided), slots and lengths every
// other element of a larger tensor.
TEST_P(CacheAttention, AnyStrides) {
  for (const Case& c : cases())
    for (DType dt : {DType::F32, DType::F16}) {
      SCOPED_TRACE(c.output + " " + std::string(dtype_name(dt)));
      const Tensor q = in(c.inputs + ".q", dt), k = in(c.inputs + ".k", dt), v = in(c.inputs + ".v", dt);
      const int64_t P = k.dim(0), KV = k.dim(1), N = k.dim(2), D = k.dim(3);
      const Tensor qt = q.transpose(0, 1).contiguous().transpose(0, 1);
      // k inside a (KV, P, N + 3, D) buffer at offset 1 along N; v with D as a strided dim.
      Tensor kbig = zeros(Shape{KV, P, N + 3, D}, dt, dev());
      kbig.narrow(2, 1, N).copy_(k.permute({1, 0, 2, 3}));
      const Tensor kv = kbig.narrow(2, 1, N).permute({1, 0, 2, 3});
      const Tensor vv = v.permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2});
      auto spread = [&](const Tensor& t) {
        Tensor big = zeros(Shape{2 * t.dim(0)}, DType::I64, dev());
        big.slice(0, 0, 2 * t.dim(0), 2).copy_(t);
        return big.slice(0, 0, 2 * t.dim(0), 2);
      };
      const Tensor got =
          cache_attention(qt, kv, vv, spread(in(c.inputs + ".slots")), spread(in(c.inputs + ".lengths")), c.opt);
      EXPECT_CLOSE(got, gold(c.output + ".out"), tol(dt), tol(dt));
    }
}

// Rows of one pool slot each, long and short, against scaled_dot_product_attention over
// the slot's keys (each query head group as rows of its key/value head, as a decode step).
TEST_P(CacheAttention, LongRowsMatchAttentionOverTheSlot) {
  const int64_t P = 3, KV = 2, G = 4, N = 1500, D = 64;
  const std::vector<int64_t> slots{2, 0, 1, 0}, lengths{1500, 1, 777, 64};
  manual_seed(11);
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor k = randn({P, KV, N, D}, dt, dev()), v = randn({P, KV, N, D}, dt, dev());
    const Tensor q = randn({int64_t(slots.size()), KV * G, D}, dt, dev());
    for (int64_t window : {int64_t(0), int64_t(100)}) {
      CacheAttentionOptions o;
      o.window = window;
      const Tensor got =
          cache_attention(q, k, v, Tensor::from_vector(slots).to(dev()), Tensor::from_vector(lengths).to(dev()), o);
      for (size_t b = 0; b < slots.size(); ++b) {
        SCOPED_TRACE("row " + std::to_string(b) + " window " + std::to_string(window));
        const int64_t L = lengths[b], first = window > 0 ? std::max<int64_t>(0, L - window) : 0;
        const Tensor kb = k.narrow(0, slots[b], 1).narrow(2, first, L - first);
        const Tensor vb = v.narrow(0, slots[b], 1).narrow(2, first, L - first);
        const Tensor qb = q.narrow(0, int64_t(b), 1).reshape({1, KV, G, D});
        const Tensor want = scaled_dot_product_attention(qb, kb, vb).reshape({1, KV * G, D});
        EXPECT_CLOSE(got.narrow(0, int64_t(b), 1), want.to(DType::F32), 4 * tol(dt), 4 * tol(dt));
      }
    }
  }
}

TEST_P(CacheAttention, EmptyBatch) {
  const Tensor k = zeros(Shape{2, 1, 4, 8}, DType::F32, dev());
  const Tensor none = Tensor::empty(Shape{0}, DType::I64, dev());
  const Tensor out = cache_attention(Tensor::empty(Shape{0, 2, 8}, DType::F32, dev()), k, k, none, none);
  EXPECT_EQ(out.shape(), (Shape{0, 2, 8}));
}

TEST_P(CacheAttention, BadArgumentsAreClearErrors) {
  const Tensor k = zeros(Shape{3, 2, 10, 8}, DType::F32, dev());
  const Tensor q = zeros(Shape{2, 4, 8}, DType::F32, dev());
  const Tensor ok = Tensor::from_vector(std::vector<int64_t>{0, 1}).to(dev());
  auto kind = [&](auto f) { return test::thrown_kind(f); };
  EXPECT_EQ(kind([&] { cache_attention(q.reshape({8, 8}), k, k, ok, ok); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] {
              cache_attention(zeros(Shape{2, 3, 8}, DType::F32, dev()), k, k, ok, ok);
            }),
            ErrorKind::ShapeMismatch);  // 3 heads over 2 key/value heads
  EXPECT_EQ(kind([&] {
              cache_attention(zeros(Shape{2, 4, 6}, DType::F32, dev()), k, k, ok, ok);
            }),
            ErrorKind::ShapeMismatch);  // head dims differ
  EXPECT_EQ(kind([&] { cache_attention(q, k, k.narrow(2, 0, 9), ok, ok); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] { cache_attention(q, k, k, ok.narrow(0, 0, 1), ok); }), ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] { cache_attention(q, k, k, ok.to(DType::U32), ok); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(kind([&] { cache_attention(q.to(DType::F16), k, k, ok, ok); }), ErrorKind::DTypeMismatch);
  EXPECT_EQ(kind([&] { cache_attention(q.to(DType::I64), k.to(DType::I64), k.to(DType::I64), ok, ok); }),
            ErrorKind::DTypeMismatch);
  CacheAttentionOptions negative;
  negative.window = -1;
  EXPECT_EQ(kind([&] { cache_attention(q, k, k, ok, ok, negative); }), ErrorKind::InvalidArgument);
  CacheAttentionOptions nan_cap;
  nan_cap.softcap = NAN;
  EXPECT_EQ(kind([&] { cache_attention(q, k, k, ok, ok, nan_cap); }), ErrorKind::InvalidArgument);
  // Values: a slot past the pool, lengths 0 and past the capacity.
  auto values = [&](std::vector<int64_t> v) { return Tensor::from_vector(v).to(dev()); };
  // (named pairs, not a structured binding, which clang 14's lambdas cannot capture)
  for (const auto& pair : {std::pair{values({0, 3}), values({1, 1})}, std::pair{values({-1, 0}), values({1, 1})},
                           std::pair{values({0, 1}), values({0, 1})}, std::pair{values({0, 1}), values({1, 11})}}) {
    const Tensor& slots = pair.first;
    const Tensor& lengths = pair.second;
    EXPECT_EQ(kind([&] {
                cache_attention(q, k, k, slots, lengths);
                sync();
              }),
              ErrorKind::IndexOutOfRange);
    sync();  // the error is reported once
  }
}

TEST_P(CacheAttention, WriteRowsIntoThePool) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t P = 3, KV = 2, N = 5, D = 3;
    Tensor kc = zeros(Shape{P, KV, N, D}, dt, dev()), vc = zeros(Shape{P, KV, N, D}, dt, dev());
    // Rows as a transposed view: (B, KV, D) from a (KV, B, D) buffer.
    std::vector<double> kvals(2 * KV * D), vvals(2 * KV * D);
    for (size_t i = 0; i < kvals.size(); ++i) kvals[i] = double(i + 1), vvals[i] = -double(i + 1);
    const Tensor k = Tensor::from_vector(kvals, Shape{KV, 2, D}).to(dt).to(dev()).transpose(0, 1);
    const Tensor v = Tensor::from_vector(vvals, Shape{KV, 2, D}).to(dt).to(dev()).transpose(0, 1);
    cache_write_(kc, vc, Tensor::from_vector(std::vector<int64_t>{2, 0}).to(dev()),
                 Tensor::from_vector(std::vector<int64_t>{4, 1}).to(dev()), k, v);
    const std::vector<double> got_k = kc.to_vector<double>(), got_v = vc.to_vector<double>();
    for (int64_t s = 0; s < P; ++s)
      for (int64_t h = 0; h < KV; ++h)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t d = 0; d < D; ++d) {
            const size_t at = size_t(((s * KV + h) * N + n) * D + d);
            const int64_t b = s == 2 && n == 4 ? 0 : s == 0 && n == 1 ? 1 : -1;
            const double want = b < 0 ? 0.0 : kvals[size_t((h * 2 + b) * D + d)];
            EXPECT_EQ(got_k[at], want) << s << " " << h << " " << n << " " << d;
            EXPECT_EQ(got_v[at], -want) << s << " " << h << " " << n << " " << d;
          }
  }
}

TEST_P(CacheAttention, WriteRejectsBadRowsAndWritesNothing) {
  Tensor kc = zeros(Shape{2, 1, 4, 2}, DType::F32, dev()), vc = zeros(Shape{2, 1, 4, 2}, DType::F32, dev());
  const Tensor rows = full(Shape{2, 1, 2}, 7.0, DType::F32, dev());
  auto values = [&](std::vector<int64_t> v) { return Tensor::from_vector(v).to(dev()); };
  auto kind = [&](auto f) { return test::thrown_kind(f); };
  EXPECT_EQ(kind([&] {
              cache_write_(kc, vc, values({0, 1}), values({0, 1}), rows.narrow(2, 0, 1), rows);
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] {
              cache_write_(kc, vc, values({0, 1}), values({0, 1}), rows.to(DType::F16), rows);
            }),
            ErrorKind::DTypeMismatch);
  EXPECT_EQ(kind([&] {
              cache_write_(kc, vc.narrow(2, 0, 3), values({0, 1}), values({0, 1}), rows, rows);
            }),
            ErrorKind::ShapeMismatch);
  EXPECT_EQ(kind([&] { cache_write_(kc, vc, values({0}), values({0, 1}), rows, rows); }), ErrorKind::ShapeMismatch);
  // (named pairs, not a structured binding, which clang 14's lambdas cannot capture)
  for (const auto& pair : {std::pair{values({0, 2}), values({0, 1})}, std::pair{values({0, 1}), values({0, 4})},
                           std::pair{values({0, 1}), values({-1, 0})}}) {
    const Tensor& slots = pair.first;
    const Tensor& positions = pair.second;
    EXPECT_EQ(kind([&] {
                cache_write_(kc, vc, slots, positions, rows, rows);
                sync();
              }),
              ErrorKind::IndexOutOfRange);
    sync();
    // The CPU checks every row first; CUDA skips the bad ones and writes the rest.
    if (dev().is_cpu()) {
      EXPECT_EQ(sum(kc).item<float>(), 0.0f);
      EXPECT_EQ(sum(vc).item<float>(), 0.0f);
    }
  }
}

// Both ops recorded once, replayed after the inputs change in place: what a batched decode
// step does every token.
TEST_P(CacheAttention, RecordedStepFollowsItsInputs) {
  if (!dev().is_cuda()) GTEST_SKIP() << "CUDA graphs need a CUDA device";
  const int64_t P = 4, KV = 2, G = 2, N = 300, D = 64;
  manual_seed(3);
  Tensor kc = randn({P, KV, N, D}, DType::F16, dev()), vc = randn({P, KV, N, D}, DType::F16, dev());
  Tensor rows = zeros(Shape{2, 3}, DType::I64, dev());  // slots, positions, lengths
  Tensor knew = zeros(Shape{3, KV, D}, DType::F16, dev()), q = zeros(Shape{3, KV * G, D}, DType::F16, dev());
  Tensor out;
  auto step = [&] {
    cache_write_(kc, vc, rows.select(0, 0), rows.select(0, 1), knew, knew);
    out = cache_attention(q, kc, vc, rows.select(0, 0), rows.select(0, 1) + Scalar(int64_t(1)));
  };
  const CudaGraph g = CudaGraph::capture(dev(), step);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const std::vector<int64_t> v{3, 0, 1, int64_t(10 + 100 * round), 299, int64_t(50 * round)};
    rows.copy_(Tensor::from_vector(v, Shape{2, 3}).to(dev()));
    knew.copy_(randn({3, KV, D}, DType::F16, dev()));
    q.copy_(randn({3, KV * G, D}, DType::F16, dev()));
    // The eager reference on copies of the caches as they are before this round's write.
    Tensor kref = kc.clone(), vref = vc.clone();
    const Tensor slots = rows.select(0, 0).clone(), positions = rows.select(0, 1).clone();
    cache_write_(kref, vref, slots, positions, knew, knew);
    const Tensor want = cache_attention(q, kref, vref, slots, positions + Scalar(int64_t(1)));
    g.replay();
    EXPECT_CLOSE(out, want.to(DType::F32), 0, 0);
    EXPECT_CLOSE(kc, kref.to(DType::F32), 0, 0);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(CacheAttention);

}  // namespace
}  // namespace wick
