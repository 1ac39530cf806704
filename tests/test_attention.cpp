// scaled_dot_product_attention and rope against numpy float64 goldens from
// tests/data/gen_attention.py (inputs exact in every float dtype, so one golden serves all).
// The shapes reach both CUDA kernels: the tiled one (Tq >= 64, head dim 64/128; f16/bf16 on
// tensor cores; long causal, key tails, aligned and unaligned layouts) and the split-key
// warp kernel (decode, short query blocks, odd head dims, f64), including KV-cache shapes
// whose key chunks are entirely masked.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/nn.h"

namespace wick {
namespace {

Tensor gold(const std::string& name) { return test::golden_tensor("attention.safetensors", name); }

const DType kDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};

// f16/bf16: the probabilities are rounded to the dtype before P V (as flash attention does)
// and the output once more; f32 must stay at float rounding (no TF32).
double tol(DType dt) { return test::attention_tol(dt); }

class Attention : public test::DeviceTest {
 protected:
  Tensor in(const std::string& name, DType dt) const { return gold(name).to(dt).to(dev()); }
  // Runs sdpa in every dtype and compares with the golden.
  template <class F>
  void check_all(const std::string& golden, F&& run) const {
    const Tensor want = gold(golden);
    for (DType dt : kDTypes) {
      SCOPED_TRACE(golden + " " + std::string(dtype_name(dt)));
      const Tensor got = run(dt);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_EQ(got.device(), dev());
      EXPECT_CLOSE(got, want, tol(dt), tol(dt));
    }
  }
};

TEST_P(Attention, SelfAttentionTiled) {
  // Tq = Tk = 300 (not a multiple of the 64-row tiles), causal and with a key-padding mask.
  check_all("self300.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt), in("pool.k", dt), in("pool.v", dt), {}, {.causal = true});
  });
  for (DType mdt : kDTypes) {  // the mask in any float dtype, broadcast over rows
    SCOPED_TRACE(std::string("mask ") + std::string(dtype_name(mdt)));
    check_all("self300.kmask.out", [&](DType dt) {
      return scaled_dot_product_attention(in("pool.q", dt), in("pool.k", dt), in("pool.v", dt),
                                          in("self300.kmask", mdt));
    });
  }
}

TEST_P(Attention, ManyHeadsOneBlockPerQueryTile) {
  // 100 heads (a stride-0 broadcast of one): enough query tiles to fill the GPU, so the
  // tiled kernel writes its output directly instead of splitting keys and merging; for
  // f16/bf16 that is the kernel with two row tiles per warp (128-query blocks: the last one
  // has 44 rows, so its second half is empty). 30 heads: a few key splits per query tile
  // (merged by the few-splits combine kernel). Every head is checked, with causal and with
  // the causal pattern as an additive mask (the masked instantiation), and on cuda for
  // f16/bf16 with a strided head dim too.
  std::vector<float> m(300 * 300);
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 300; ++j) m[size_t(i * 300 + j)] = j > i ? -std::numeric_limits<float>::infinity() : 0.0f;
  const Tensor causal_mask = Tensor::from_vector(m, Shape{1, 1, 300, 300});
  for (int64_t heads : {100, 30}) {
    const Shape s{1, heads, 300, 64};
    const Tensor want = gold("self300.causal").broadcast_as(s);
    for (DType dt : kDTypes) {
      SCOPED_TRACE(std::to_string(heads) + " heads " + std::string(dtype_name(dt)));
      const Tensor q = in("pool.q", dt).broadcast_as(s), k = in("pool.k", dt).broadcast_as(s),
                   v = in("pool.v", dt).broadcast_as(s);
      const Tensor out = scaled_dot_product_attention(q, k, v, {}, {.causal = true});
      EXPECT_EQ(out.shape(), s);
      EXPECT_CLOSE(out, want, tol(dt), tol(dt));
      EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, causal_mask.to(dt).to(dev())), want, tol(dt), tol(dt));
      if (heads == 100 && dev().is_cuda() && (dt == DType::F16 || dt == DType::BF16)) {
        // A strided head dim: the same kernel staging its tiles element by element.
        auto strided = [&](const char* n) {
          return in(n, dt).transpose(2, 3).contiguous().transpose(2, 3).broadcast_as(s);
        };
        EXPECT_CLOSE(
            scaled_dot_product_attention(strided("pool.q"), strided("pool.k"), strided("pool.v"), {}, {.causal = true}),
            want, tol(dt), tol(dt));
      }
    }
  }
}

TEST_P(Attention, CausalWithMoreQueriesThanKeysGivesNaNRows) {
  // Query i sees keys j <= i - 30: rows 0..29 see nothing and are NaN (PyTorch's 0/0).
  check_all("q130k100.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 130), in("pool.k", dt).narrow(2, 0, 100),
                                        in("pool.v", dt).narrow(2, 0, 100), {}, {.causal = true});
  });
  const auto row0 = scaled_dot_product_attention(in("pool.q", DType::F32).narrow(2, 0, 130),
                                                 in("pool.k", DType::F32).narrow(2, 0, 100),
                                                 in("pool.v", DType::F32).narrow(2, 0, 100), {}, {.causal = true})
                        .narrow(2, 29, 2)
                        .to_vector<double>();
  EXPECT_TRUE(std::isnan(row0[0]));
  EXPECT_FALSE(std::isnan(row0[64]));
}

TEST_P(Attention, PackedQkvViewsLikeGpt2) {
  // q, k, v are permuted views of one (B, T, 3 * H * D) tensor: strided over heads and time.
  for (int64_t H : {2, 1}) {
    const int64_t D = 128 / H;
    auto views = [&](DType dt) {
      const Tensor qkv = in("qkv", dt);
      std::vector<Tensor> r;
      for (int i = 0; i < 3; ++i) r.push_back(qkv.narrow(2, i * 128, 128).view({1, 100, H, D}).permute({0, 2, 1, 3}));
      return r;
    };
    if (H == 2) {
      check_all("qkv.h2d64.causal", [&](DType dt) {
        auto v = views(dt);
        return scaled_dot_product_attention(v[0], v[1], v[2], {}, {.causal = true});
      });
    } else {
      check_all("qkv.h1d128.causal", [&](DType dt) {
        auto v = views(dt);
        return scaled_dot_product_attention(v[0], v[1], v[2], {}, {.causal = true});
      });
      check_all("qkv.h1d128.plain", [&](DType dt) {
        auto v = views(dt);
        return scaled_dot_product_attention(v[0], v[1], v[2]);
      });
      // Contiguous copies give the same result (the 16-byte-load path of the tiled kernel).
      check_all("qkv.h1d128.plain", [&](DType dt) {
        auto v = views(dt);
        return scaled_dot_product_attention(v[0].contiguous(), v[1].contiguous(), v[2].contiguous());
      });
    }
    // The causal pattern as an additive -inf mask (the tiled kernel's masked path, at head
    // dims 64 and 128): the same result as causal.
    std::vector<float> m(100 * 100);
    for (int64_t i = 0; i < 100; ++i)
      for (int64_t j = 0; j < 100; ++j) m[size_t(i * 100 + j)] = j > i ? -std::numeric_limits<float>::infinity() : 0.0f;
    const Tensor causal_mask = Tensor::from_vector(m, Shape{1, 1, 100, 100});
    check_all(H == 2 ? "qkv.h2d64.causal" : "qkv.h1d128.causal", [&](DType dt) {
      auto v = views(dt);
      return scaled_dot_product_attention(v[0], v[1], v[2], causal_mask.to(dt).to(dev()));
    });
  }
}

TEST_P(Attention, KvCacheDecodeShapes) {
  // 5 new queries over 300 cached keys, causal (aligned to the end of the keys).
  check_all("q5k300.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 5), in("pool.k", dt), in("pool.v", dt), {},
                                        {.causal = true});
  });
  // 1 query over 1000 keys (key j = pool key j % 300): the keys are split over many warps.
  std::vector<int64_t> idx(1000);
  for (int64_t j = 0; j < 1000; ++j) idx[size_t(j)] = j % 300;
  const Tensor index = Tensor::from_vector<int64_t>(idx).to(dev());
  check_all("q1k1000.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 1), index_select(in("pool.k", dt), 2, index),
                                        index_select(in("pool.v", dt), 2, index), {}, {.causal = true});
  });
}

TEST_P(Attention, PreallocatedCacheWithMaskedChunks) {
  // A 1000-position cache of which 37 are valid (mask -inf beyond): whole key chunks are
  // masked and must contribute nothing (no NaN). Keys past 37 hold arbitrary finite values.
  for (DType dt : kDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor pad = randn(Shape{1, 1, 963, 64}, DType::F32, dev()).to(dt);
    const Tensor k = cat({in("pool.k", dt).narrow(2, 0, 37), pad}, 2);
    const Tensor v = cat({in("pool.v", dt).narrow(2, 0, 37), pad}, 2);
    for (DType mdt : {dt, DType::F32}) {
      const Tensor mask = in("cache37.mask", mdt);
      EXPECT_CLOSE(scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 1), k, v, mask), gold("cache37.out"),
                   tol(dt), tol(dt));
      // 64 queries over the same cache: the tiled kernel, mask broadcast over rows.
      EXPECT_CLOSE(scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 64), k, v, mask), gold("cache37.q64.out"),
                   tol(dt), tol(dt));
    }
  }
}

TEST_P(Attention, BatchHeadsMaskBroadcastScaleAndMaskedRow) {
  // Mask (2, 1, 7, 7) broadcast over 3 heads, one fully masked row (NaN), scale 0.3.
  check_all("b2h3.out", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt), in("b2h3.k", dt), in("b2h3.v", dt), in("b2h3.mask", dt),
                                        {.scale = 0.3});
  });
  const auto out = scaled_dot_product_attention(in("b2h3.q", DType::F32), in("b2h3.k", DType::F32),
                                                in("b2h3.v", DType::F32), in("b2h3.mask", DType::F32), {.scale = 0.3})
                       .to_vector<double>();
  for (int64_t h = 0; h < 3; ++h) EXPECT_TRUE(std::isnan(out[size_t(((1 * 3 + h) * 7 + 3) * 64)])) << h;
  check_all("b2h3.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt), in("b2h3.k", dt), in("b2h3.v", dt), {}, {.causal = true});
  });
  // Tq = Tk = 1: the output is v.
  check_all("b2h3.t1", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt).narrow(2, 0, 1), in("b2h3.k", dt).narrow(2, 0, 1),
                                        in("b2h3.v", dt).narrow(2, 0, 1));
  });
}

// gpt-oss's attention sinks: each head's logit joins the softmax with a zero value (numpy
// goldens, gen_attention.py). One sink dominates every score (the overflow-free branch); a
// row that sees no key gives zeros, not NaN. On CUDA every kernel (the tiled prefill ones
// included: 64 queries) writes partials whose combine adds the sink.
TEST_P(Attention, SinksJoinTheSoftmaxWithAZeroValue) {
  auto with_sinks = [&](DType dt, AttentionOptions o) {
    o.sinks = in("b2h3.sinks", dt);
    return o;
  };
  check_all("b2h3.sinks.out", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt), in("b2h3.k", dt), in("b2h3.v", dt), in("b2h3.mask", dt),
                                        with_sinks(dt, {.scale = 0.3}));
  });
  check_all("b2h3.sinks.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt), in("b2h3.k", dt), in("b2h3.v", dt), {},
                                        with_sinks(dt, {.causal = true}));
  });
  check_all("b2h3.deadrow.sinks.out", [&](DType dt) {
    return scaled_dot_product_attention(in("b2h3.q", dt), in("b2h3.k", dt), in("b2h3.v", dt), in("b2h3.deadrow", dt),
                                        with_sinks(dt, {}));
  });
  // The tiled kernels (64 queries and more): the pool's 300 keys, the sinks as a numpy-free
  // identity: a sink is a key of score sinks[h] and value 0, i.e. an extra key column of the
  // mask with a zero key and value.
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    // Three heads (each its own sink) made of the pool's one: q scaled per head.
    const Tensor q1 = in("pool.q", dt).narrow(2, 0, 96);
    const Tensor pq = cat({q1, q1 * Scalar(0.5), q1 * Scalar(-1.0)}, 1);
    const Tensor pk = cat({in("pool.k", dt), in("pool.k", dt), in("pool.k", dt)}, 1);
    const Tensor pv = cat({in("pool.v", dt), in("pool.v", dt), in("pool.v", dt)}, 1);
    const int64_t B = pq.dim(0), H = pq.dim(1), Tq = pq.dim(2), Tk = pk.dim(2), D = pq.dim(3);
    std::vector<float> sv(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h) sv[size_t(h)] = float(h % 3) * 2.5f - 1.0f;
    const Tensor sinks = Tensor::from_vector(sv, Shape{H}).to(dev());
    AttentionOptions o;
    o.causal = true;
    o.sinks = sinks;
    const Tensor got = scaled_dot_product_attention(pq, pk, pv, {}, o);
    // The reference: keys [0; k], values [0; v]; the zero key's score is 0, so mask column 0
    // carries sinks[h] (the mask is added after the scale), the others causality.
    const Tensor zero = zeros(Shape{B, H, 1, D}, dt, dev());
    const Tensor k1 = cat({zero, pk}, 2), v1 = cat({zero, pv}, 2);
    std::vector<float> mv(size_t(H * Tq * (Tk + 1)));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = 0; j <= Tk; ++j)
          mv[size_t((h * Tq + i) * (Tk + 1) + j)] = j == 0 ? sv[size_t(h)] : (j - 1 <= i + Tk - Tq ? 0.0f : -INFINITY);
    const Tensor mask = Tensor::from_vector(mv, Shape{1, H, Tq, Tk + 1}).to(dt).to(dev());
    const Tensor want = scaled_dot_product_attention(pq, k1, v1, mask);
    EXPECT_CLOSE(got, want, tol(dt), tol(dt));
  }
  const Tensor q = in("b2h3.q", DType::F32), k = in("b2h3.k", DType::F32), v = in("b2h3.v", DType::F32);
  AttentionOptions bad;
  bad.sinks = zeros(Shape{2}, DType::F32, dev());
  EXPECT_WICK_ERROR(scaled_dot_product_attention(q, k, v, {}, bad), ShapeMismatch, "sinks must have shape (3)");
  bad.sinks = zeros(Shape{3}, DType::I64, dev());
  EXPECT_WICK_ERROR(scaled_dot_product_attention(q, k, v, {}, bad), DTypeMismatch, "expected a floating-point tensor");
}

TEST_P(Attention, OddHeadDimWithMaskAndCausal) {
  check_all("d80.out", [&](DType dt) {
    return scaled_dot_product_attention(in("d80.q", dt), in("d80.k", dt), in("d80.v", dt), in("d80.mask", dt),
                                        {.causal = true});
  });
}

// Positions idx of a pool tensor (1, 1, 300, D) as (B, H, T, D): (batch, head) n, time t
// takes idx[n * T + t].
Tensor gather_pool(const Tensor& pool, const std::vector<int64_t>& idx, std::vector<int64_t> s) {
  return index_select(pool, 2, Tensor::from_vector<int64_t>(idx).to(pool.device())).view(std::move(s));
}

TEST_P(Attention, TiledKernelLongCausalAndCacheAlignedTails) {
  // Keys / queries j = pool position j % 300. Long outputs are checked on sampled rows.
  std::vector<int64_t> idx(1000);
  for (int64_t j = 0; j < 1000; ++j) idx[size_t(j)] = j % 300;
  const std::vector<int64_t> s1000{1, 1, 1000, 64};
  const Tensor long_rows = gold("long1000.rows").to(DType::I64).to(dev());
  // Tq = Tk = 1000: 16 query tiles, the last one 40 rows; diagonal tiles masked.
  check_all("long1000.causal", [&](DType dt) {
    const Tensor out = scaled_dot_product_attention(gather_pool(in("pool.q", dt), idx, s1000),
                                                    gather_pool(in("pool.k", dt), idx, s1000),
                                                    gather_pool(in("pool.v", dt), idx, s1000), {}, {.causal = true});
    EXPECT_EQ(out.shape(), Shape(s1000));
    return index_select(out, 2, long_rows);
  });
  // 64 queries at the end of 1000 keys (one query tile, the diagonal in the last key tile,
  // 40 keys of which are past the end).
  check_all("q64k1000.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 64), gather_pool(in("pool.k", dt), idx, s1000),
                                        gather_pool(in("pool.v", dt), idx, s1000), {}, {.causal = true});
  });
  // 65 queries over 300 keys: a second query tile of one row.
  check_all("q65k300.causal", [&](DType dt) {
    return scaled_dot_product_attention(in("pool.q", dt).narrow(2, 0, 65), in("pool.k", dt), in("pool.v", dt), {},
                                        {.causal = true});
  });
}

TEST_P(Attention, TiledKernelHeadDim128FifteenHeads) {
  // Batch 3 x 5 heads, Tq = 130 over Tk = 200 (causal, aligned to the end of the keys),
  // head dim 128 = two pool tensors side by side; (batch, head) n starts at position 17 n.
  std::vector<int64_t> iq, ik;
  for (int64_t n = 0; n < 15; ++n) {
    for (int64_t t = 0; t < 130; ++t) iq.push_back((t + 17 * n) % 300);
    for (int64_t t = 0; t < 200; ++t) ik.push_back((t + 17 * n) % 300);
  }
  const Tensor rows = gold("d128.rows").to(DType::I64).to(dev());
  check_all("d128.causal", [&](DType dt) {
    auto pair = [&](const char* a, const char* b) { return cat({in(a, dt), in(b, dt)}, 3); };
    const Tensor q = gather_pool(pair("pool.q", "pool.k"), iq, {3, 5, 130, 128});
    const Tensor k = gather_pool(pair("pool.k", "pool.v"), ik, {3, 5, 200, 128});
    const Tensor v = gather_pool(pair("pool.v", "pool.q"), ik, {3, 5, 200, 128});
    return index_select(scaled_dot_product_attention(q, k, v, {}, {.causal = true}), 2, rows);
  });
}

TEST_P(Attention, MaskedRowsUnderKeySplitHeadDim128) {
  // One head of 70 queries (two query tiles) at head dim 128: too few blocks to fill the
  // GPU, so each tile's keys are split over several blocks (Tk 300: 5 splits of one key
  // tile; Tk 200: 4, merged by the few-splits combine). The additive mask leaves row 3 no
  // key (NaN), row 10 only the last 40 keys and row 20 only the first 40, so for those
  // rows every other split sees nothing but -inf and must weigh 0. Each restricted row
  // equals one query over just its visible keys (the decode kernel, no mask).
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t tk : {300, 200}) {
    SCOPED_TRACE("Tk " + std::to_string(tk));
    const std::pair<int64_t, int64_t> visible[] = {{0, 0}, {tk - 40, tk}, {0, 40}};  // rows 3, 10, 20
    const int64_t masked_rows[] = {3, 10, 20};
    std::vector<float> m(size_t(70 * tk), 0.0f);
    for (int i = 0; i < 3; ++i)
      for (int64_t j = 0; j < tk; ++j)
        if (j < visible[i].first || j >= visible[i].second) m[size_t(masked_rows[i] * tk + j)] = -inf;
    const Tensor mask = Tensor::from_vector(m, Shape{1, 1, 70, tk});
    for (DType dt : kDTypes) {
      SCOPED_TRACE(dtype_name(dt));
      const Tensor q = cat({in("pool.q", dt), in("pool.k", dt)}, 3).narrow(2, 0, 70);
      const Tensor k = cat({in("pool.k", dt), in("pool.v", dt)}, 3).narrow(2, 0, tk);
      const Tensor v = cat({in("pool.v", dt), in("pool.q", dt)}, 3).narrow(2, 0, tk);
      const Tensor out = scaled_dot_product_attention(q, k, v, mask.to(dt).to(dev()));
      const std::vector<double> row3 = out.narrow(2, 3, 1).to_vector<double>();
      EXPECT_TRUE(std::all_of(row3.begin(), row3.end(), [](double x) { return std::isnan(x); }));
      for (int i = 1; i < 3; ++i) {
        const auto [a, b] = visible[i];
        const Tensor want = scaled_dot_product_attention(q.narrow(2, masked_rows[i], 1), k.narrow(2, a, b - a),
                                                         v.narrow(2, a, b - a), {}, {.scale = 1.0 / std::sqrt(128.0)});
        EXPECT_CLOSE(out.narrow(2, masked_rows[i], 1), want, tol(dt), tol(dt));
      }
      // An unmasked row is finite.
      const std::vector<double> row0 = out.narrow(2, 0, 1).to_vector<double>();
      EXPECT_TRUE(std::all_of(row0.begin(), row0.end(), [](double x) { return std::isfinite(x); }));
    }
  }
}

TEST_P(Attention, TiledKernelUnalignedAndStridedHeadDim) {
  // Rows 65 elements apart (not 16-byte aligned) and a strided head dim: the tiled kernel
  // stages these with element loads instead of 16-byte copies; same values.
  check_all("self300.causal", [&](DType dt) {
    auto padded = [&](const char* n) {
      const Tensor x = in(n, dt);
      return cat({x, x.narrow(3, 0, 1)}, 3).narrow(3, 0, 64);
    };
    return scaled_dot_product_attention(padded("pool.q"), padded("pool.k"), padded("pool.v"), {}, {.causal = true});
  });
  check_all("self300.causal", [&](DType dt) {
    auto strided = [&](const char* n) { return in(n, dt).transpose(2, 3).contiguous().transpose(2, 3); };
    return scaled_dot_product_attention(strided("pool.q"), strided("pool.k"), strided("pool.v"), {}, {.causal = true});
  });
}

TEST_P(Attention, NegativeAndZeroScale) {
  // The tiled f16/bf16 kernel takes row maxima of the unscaled scores, which holds for a
  // positive scale only; other scales must still give softmax(scale q k^T) v.
  // scale -s on q equals scale s on -q (the golden "self300.causal" is with s = 1/8):
  check_all("self300.causal", [&](DType dt) {
    return scaled_dot_product_attention(neg(in("pool.q", dt)), in("pool.k", dt), in("pool.v", dt), {},
                                        {.causal = true, .scale = -0.125});
  });
  // Scale 0: every visible key weighs the same, so each row is the mean of the values.
  const Tensor mean_v = mean(gold("pool.v").to(DType::F64), {2}, true).broadcast_as(Shape{1, 1, 300, 64});
  for (DType dt : kDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor got =
        scaled_dot_product_attention(in("pool.q", dt), in("pool.k", dt), in("pool.v", dt), {}, {.scale = 0.0});
    EXPECT_CLOSE(got, mean_v, tol(dt), tol(dt));
  }
}

// softmax(q k^T * scale + mask [+ causal]) v in double, from the tensors' values (any layout).
std::vector<double> naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                                    double scale) {
  const int64_t B = q.dim(0), H = q.dim(1), Tq = q.dim(2), D = q.dim(3), Tk = k.dim(2);
  auto values = [](const Tensor& t) { return t.to(Device::cpu()).to(DType::F64).contiguous().to_vector<double>(); };
  const std::vector<double> qv = values(q), kv = values(k), vv = values(v);
  const std::vector<double> mv =
      mask.defined() ? values(mask.broadcast_as(Shape{B, H, Tq, Tk})) : std::vector<double>{};
  std::vector<double> out(size_t(B * H * Tq * D));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < Tq; ++i) {
      std::vector<double> s(size_t(Tk), -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < Tk; ++j) {
        if (causal && j > i + Tk - Tq) continue;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qv[size_t((bh * Tq + i) * D + d)] * kv[size_t((bh * Tk + j) * D + d)];
        s[size_t(j)] = dot * scale + (mv.empty() ? 0.0 : mv[size_t((bh * Tq + i) * Tk + j)]);
        mx = std::max(mx, s[size_t(j)]);
      }
      double denom = 0;
      std::vector<double> o(size_t(D), 0.0);
      for (int64_t j = 0; j < Tk && mx > -INFINITY; ++j) {
        const double w = std::exp(s[size_t(j)] - mx);
        denom += w;
        for (int64_t d = 0; d < D; ++d) o[size_t(d)] += w * vv[size_t((bh * Tk + j) * D + d)];
      }
      for (int64_t d = 0; d < D; ++d) out[size_t((bh * Tq + i) * D + d)] = denom > 0 ? o[size_t(d)] / denom : NAN;
    }
  return out;
}

TEST_P(Attention, OddSizesStridedViewsAgainstNaiveReference) {
  // Head dim 20 (not a whole number of SIMD vectors), 70 queries (a block of 64 and one of 6)
  // over 83 keys (a tile of 64 and one of 19): q an offset narrow of a wider permuted tensor,
  // k with a strided head dim, the mask broadcast over heads with a non-unit key stride, one
  // of its rows entirely -inf (NaN) and one whose first key tile is -inf; with and without
  // causal (queries aligned to the end of the keys); then 3 of the queries (decode-sized).
  const int64_t B = 2, H = 3, Tq = 70, Tk = 83, D = 20;
  manual_seed(7);
  const Tensor q_wide = randn(Shape{B, Tq, H, D + 3});
  const Tensor k_t = randn(Shape{B, H, D, Tk});
  const Tensor v_all = randn(Shape{B, H, Tk, D});
  std::vector<float> m(size_t(B * Tk * Tq));
  for (size_t n = 0; n < m.size(); ++n) m[n] = -float(n % 7) * 0.3f;
  for (int64_t j = 0; j < Tk; ++j) m[size_t((1 * Tk + j) * Tq + 5)] = -INFINITY;  // batch 1, query 5: no key
  for (int64_t j = 0; j < 64; ++j) m[size_t(j * Tq + 9)] = -INFINITY;             // batch 0, query 9: tile 1 only
  const Tensor mask_t = Tensor::from_vector(m, Shape{B, 1, Tk, Tq});
  for (DType dt : kDTypes)
    for (const bool causal : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (causal ? " causal" : ""));
      const Tensor q = q_wide.to(dt).to(dev()).narrow(3, 2, D).permute({0, 2, 1, 3});
      const Tensor k = k_t.to(dt).to(dev()).transpose(2, 3);
      const Tensor v = v_all.to(dt).to(dev());
      const Tensor mask = mask_t.to(dt).to(dev()).transpose(2, 3);
      const Tensor got = scaled_dot_product_attention(q, k, v, mask, {.causal = causal, .scale = 0.37});
      const std::vector<double> want = naive_attention(q, k, v, mask, causal, 0.37);
      EXPECT_CLOSE(got.to_vector<double>(), want, tol(dt), tol(dt));
      EXPECT_TRUE(std::isnan(got.to_vector<double>()[size_t(((1 * H + 2) * Tq + 5) * D)]));
      // 3 queries (a decode step; f32/f64 read K and V rows in place) over contiguous k.
      const Tensor q3 = q.narrow(2, 4, 3), k3 = k.contiguous(), m3 = mask.narrow(2, 4, 3);
      EXPECT_CLOSE(scaled_dot_product_attention(q3, k3, v, m3, {.causal = causal, .scale = 0.37}).to_vector<double>(),
                   naive_attention(q3, k3, v, m3, causal, 0.37), tol(dt), tol(dt));
    }
}

TEST_P(Attention, RopeInterleavedAndHalfSplit) {
  for (DType dt : kDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = in("rope.x", dt), c = in("rope.cos", dt), s = in("rope.sin", dt);
    const double t = dt == DType::BF16 ? 2e-2 : dt == DType::F16 ? 2e-3 : 1e-6;
    EXPECT_CLOSE(rope(x, c, s, true), gold("rope.interleaved"), t, t);
    EXPECT_CLOSE(rope(x, c, s, false), gold("rope.half"), t, t);
    // A transposed view of x (time and heads swapped back) gives the same values.
    const Tensor xt = x.transpose(1, 2).contiguous().transpose(1, 2);
    EXPECT_CLOSE(rope(xt, c, s, false), gold("rope.half"), t, t);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(Attention);

}  // namespace
}  // namespace wick
