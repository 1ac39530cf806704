// CausalLM::forward_batch against forward() per sequence: a mixed batch (a prefill chunk of
// 7 tokens after 5 cached ones asking for its last 3 rows of logits, as a speculative step
// verifying drafts does, two decode steps at different lengths, a sequence starting empty
// asking for all its rows) gives each sequence the logits rows that forward(tokens, cache)
// gives it alone, and leaves its cache as forward() would (checked by a second, all-decode
// step).
// Every Llama fixture (sliding windows, softcaps, longrope, ...) and the GPT-2 test model.
#include <gtest/gtest.h>

#include <cmath>

#include "support/devices.h"
#include "support/golden.h"
#include "support/llama_oracle.h"
#include "support/model_inputs.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

using models::BatchSequence;
using models::CausalLM;
using models::KvCache;

using test::lcg_tokens;

Tensor ids(std::span<const int32_t> t) {
  return Tensor::from_vector(std::vector<int64_t>(t.begin(), t.end()), Shape{1, int64_t(t.size())});
}

using test::logits_rel_error;

// The batch: (cached positions, new tokens, logits rows asked for) per sequence.
struct Case {
  int64_t past, count, logits;
};
const std::vector<Case> kCases = {{5, 7, 3}, {12, 1, 1}, {30, 1, 1}, {0, 4, 4}};

// How the batch's caches are laid out: each its own; slots of one KvCache::pooled pool, out
// of order and with a slot unused; blocks of 4 positions of one KvCache::paged pool, each
// cache's blocks scattered (the server's layout: its decoding sequences attend in one call).
enum class Layout { Own, Pooled, Paged };

void expect_batch_equals_forward(const CausalLM& m, const std::string& what, Layout layout_kind = Layout::Own) {
  const bool pooled = layout_kind == Layout::Pooled, paged = layout_kind == Layout::Paged;
  const int64_t V = m.vocab_size();
  const size_t n = kCases.size();
  std::vector<std::vector<int32_t>> seq(n);
  std::vector<KvCache> batched, alone;
  for (size_t i = 0; i < n; ++i) {
    seq[i] = lcg_tokens(size_t(kCases[i].past + kCases[i].count + 1), V, uint32_t(7 + i));
    batched.emplace_back(64);
    alone.emplace_back(64);
  }
  if (pooled) {
    KvCache layout(64);
    m.reserve_cache(layout);
    std::vector<KvCache> pool = KvCache::pooled(layout, int64_t(n) + 1);
    const size_t slot[] = {3, 0, 4, 1};  // slot 2 stays free
    for (size_t i = 0; i < n; ++i) {
      batched[i] = pool[slot[i]];
      ASSERT_EQ(batched[i].pool_slot(), int64_t(slot[i]));
    }
  }
  std::vector<int32_t> hole;  // a block held by no sequence, between theirs
  if (paged) {
    KvCache layout(1);
    m.reserve_cache(layout);
    std::vector<KvCache> pool = KvCache::paged(layout, int64_t(n), 64, 80, 4);
    for (size_t i = 0; i < n; ++i) batched[i] = pool[n - 1 - i];
    for (size_t i = 0; i < n; ++i) {  // one block each, in turn, so that the tables interleave
      ASSERT_TRUE(batched[i].ensure_positions(4));
      hole = *batched[i].block_pool().allocate(1);
    }
  }
  // Blocks for the positions a batch of `count` more tokens takes (paged caches only).
  auto grow = [&](size_t i, int64_t count) {
    if (paged) ASSERT_TRUE(batched[i].ensure_positions(batched[i].length() + count));
  };
  std::vector<std::vector<float>> want(n);
  for (size_t i = 0; i < n; ++i) {
    const std::span<const int32_t> s(seq[i]);
    if (kCases[i].past > 0) {
      if (paged) {  // forward() takes no paged cache: the prefill is a batch of one
        grow(i, kCases[i].past);
        const std::vector<BatchSequence> one = {{s.first(size_t(kCases[i].past)), &batched[i]}};
        (void)m.forward_batch(one);
      } else {
        (void)m.forward(ids(s.first(size_t(kCases[i].past))), &batched[i]);
      }
      (void)m.forward(ids(s.first(size_t(kCases[i].past))), &alone[i]);
    }
    const Tensor all = m.forward(ids(s.subspan(size_t(kCases[i].past), size_t(kCases[i].count))), &alone[i]);
    want[i] = all.narrow(1, kCases[i].count - kCases[i].logits, kCases[i].logits)
                  .to(Device::cpu())
                  .to(DType::F32)
                  .to_vector<float>();
  }
  std::vector<BatchSequence> batch;
  for (size_t i = 0; i < n; ++i) {
    grow(i, kCases[i].count);
    batch.push_back({std::span<const int32_t>(seq[i]).subspan(size_t(kCases[i].past), size_t(kCases[i].count)),
                     &batched[i], kCases[i].logits});
  }
  const Tensor logits = m.forward_batch(batch);
  int64_t rows = 0;
  for (const Case& c : kCases) rows += c.logits;
  ASSERT_EQ(logits.shape(), Shape({rows, V})) << what;
  ASSERT_EQ(logits.dtype(), DType::F32) << what;
  for (int64_t i = 0, row = 0; i < int64_t(n); row += kCases[size_t(i)].logits, ++i) {
    EXPECT_EQ(batched[size_t(i)].length(), kCases[size_t(i)].past + kCases[size_t(i)].count)
        << what << " sequence " << i;
    const auto got = logits.narrow(0, row, kCases[size_t(i)].logits).to(Device::cpu()).to_vector<float>();
    EXPECT_LE(logits_rel_error(got, want[size_t(i)]), 1e-5) << what << " sequence " << i;
  }
  // A second step, one token each, over the caches the batch extended.
  batch.clear();
  for (size_t i = 0; i < n; ++i) {
    const std::span<const int32_t> next = std::span<const int32_t>(seq[i]).last(1);
    grow(i, 1);
    batch.push_back({next, &batched[i]});
    want[i] = m.forward(ids(next), &alone[i], true).to(Device::cpu()).to(DType::F32).to_vector<float>();
  }
  const Tensor step = m.forward_batch(batch);
  for (size_t i = 0; i < n; ++i)
    EXPECT_LE(logits_rel_error(step.select(0, int64_t(i)).to(Device::cpu()).to_vector<float>(), want[i]), 1e-5)
        << what << " second step, sequence " << i;
}

class ForwardBatch : public test::DeviceTest {};

TEST_P(ForwardBatch, LlamaFixturesEqualForwardPerSequence) {
  for (const auto& name : test::llama_fixtures()) {
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    expect_batch_equals_forward(models::LlamaModel::load(test::llama_dir(name), o), name);
  }
}

TEST_P(ForwardBatch, LlamaPooledCachesEqualForwardPerSequence) {
  for (const auto& name : test::llama_fixtures()) {
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    expect_batch_equals_forward(models::LlamaModel::load(test::llama_dir(name), o), name + " pooled", Layout::Pooled);
  }
}

TEST_P(ForwardBatch, LlamaPagedCachesEqualForwardPerSequence) {
  for (const auto& name : test::llama_fixtures()) {
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    expect_batch_equals_forward(models::LlamaModel::load(test::llama_dir(name), o), name + " paged", Layout::Paged);
  }
}

TEST_P(ForwardBatch, Gpt2PagedCachesEqualForwardPerSequence) {
  expect_batch_equals_forward(models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()}), "gpt2 paged",
                              Layout::Paged);
}

// A prefix cache hit: a second sequence starts from the full blocks the first published and
// computes only the rest of its prompt; its logits, and a decode step of both together, are
// forward()'s over the whole sequence.
TEST_P(ForwardBatch, APagedPrefixHitEqualsForward) {
  for (const auto& name : test::llama_fixtures()) {
    SCOPED_TRACE(name);
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    const auto m = models::LlamaModel::load(test::llama_dir(name), o);
    KvCache layout(1);
    m.reserve_cache(layout);
    std::vector<KvCache> pool = KvCache::paged(layout, 2, 64, 20, 4);
    models::BlockPool& blocks = pool[0].block_pool();
    const std::vector<int32_t> a = lcg_tokens(13, m.vocab_size(), 71);
    std::vector<int32_t> b(a.begin(), a.begin() + 12);
    for (int32_t t : lcg_tokens(6, m.vocab_size(), 72)) b.push_back(t);
    ASSERT_TRUE(pool[0].ensure_positions(13));
    const std::vector<BatchSequence> first = {{a, &pool[0]}};
    (void)m.forward_batch(first);
    blocks.publish(pool[0].blocks(), a);
    std::vector<int32_t> hit = blocks.take_prefix(b, b.size() - 1);
    ASSERT_EQ(hit.size(), 3u);
    EXPECT_TRUE(std::equal(hit.begin(), hit.end(), pool[0].blocks().begin()));  // shared, not copied
    pool[1].adopt(std::move(hit), 12);
    ASSERT_TRUE(pool[1].ensure_positions(int64_t(b.size())));
    const std::vector<BatchSequence> rest = {{std::span<const int32_t>(b).subspan(12), &pool[1]}};
    const auto got = m.forward_batch(rest).to(Device::cpu()).to_vector<float>();
    KvCache own_a(64), own_b(64);
    const auto want = m.forward(ids(b), &own_b, true).to(Device::cpu()).to(DType::F32).to_vector<float>();
    EXPECT_LE(logits_rel_error(got, want), 1e-5);
    (void)m.forward(ids(a), &own_a);
    const int32_t next_a = 5, next_b = 9;
    ASSERT_TRUE(pool[0].ensure_positions(14));
    ASSERT_TRUE(pool[1].ensure_positions(int64_t(b.size()) + 1));
    const std::vector<BatchSequence> step = {{std::span<const int32_t>(&next_a, 1), &pool[0]},
                                             {std::span<const int32_t>(&next_b, 1), &pool[1]}};
    const Tensor logits = m.forward_batch(step);
    const std::vector<int32_t> ta = {next_a}, tb = {next_b};
    EXPECT_LE(logits_rel_error(logits.select(0, 0).to(Device::cpu()).to_vector<float>(),
                               m.forward(ids(ta), &own_a, true).to(Device::cpu()).to(DType::F32).to_vector<float>()),
              1e-5);
    EXPECT_LE(logits_rel_error(logits.select(0, 1).to(Device::cpu()).to_vector<float>(),
                               m.forward(ids(tb), &own_b, true).to(Device::cpu()).to(DType::F32).to_vector<float>()),
              1e-5);
    // Both caches gone: every block is free again (three of them still in the prefix cache).
    pool[0].clear();
    pool[1].clear();
    EXPECT_EQ(blocks.free_blocks(), 20);
    EXPECT_EQ(blocks.cached_blocks(), 3);
  }
}

// A speculative step over a paged cache: a token and three drafts fed in one batch with
// their four rows of logits, two drafts refused (truncate drops their positions, which sit
// in an unpublished block of the cache's own), then other tokens written over them: the
// logits are forward()'s over the tokens kept. Dropping positions of a published block is
// refused, and changes nothing.
TEST_P(ForwardBatch, APagedCacheDropsRefusedDrafts) {
  const auto m = models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()});
  KvCache layout(1);
  m.reserve_cache(layout);
  std::vector<KvCache> pool = KvCache::paged(layout, 1, 64, 10, 4);
  KvCache& c = pool[0];
  const std::vector<int32_t> t = lcg_tokens(16, m.vocab_size(), 41);
  const std::span<const int32_t> prompt = std::span(t).first(6), step = std::span(t).subspan(6, 4),
                                 again = std::span(t).subspan(10, 3);
  ASSERT_TRUE(c.ensure_positions(10));
  const std::vector<BatchSequence> prefill = {{prompt, &c}}, verify = {{step, &c, 4}};
  (void)m.forward_batch(prefill);
  const Tensor rows = m.forward_batch(verify);
  ASSERT_EQ(rows.shape(), Shape({4, m.vocab_size()}));
  KvCache whole(64);
  const Tensor want_rows = m.forward(ids(std::span(t).first(10)), &whole);
  EXPECT_LE(logits_rel_error(rows.to(Device::cpu()).to_vector<float>(),
                             want_rows.narrow(1, 6, 4).to(Device::cpu()).to(DType::F32).to_vector<float>()),
            1e-5);
  c.truncate(8);  // the token and the first draft kept: positions 8 and 9 (block 2) dropped
  EXPECT_EQ(c.length(), 8);
  ASSERT_TRUE(c.ensure_positions(11));
  const std::vector<BatchSequence> next = {{again, &c, 3}};
  const Tensor got = m.forward_batch(next);
  std::vector<int32_t> kept(t.begin(), t.begin() + 8);
  kept.insert(kept.end(), again.begin(), again.end());
  KvCache fresh(64);
  const Tensor want = m.forward(ids(kept), &fresh).narrow(1, 8, 3);
  EXPECT_LE(logits_rel_error(got.to(Device::cpu()).to_vector<float>(),
                             want.to(Device::cpu()).to(DType::F32).to_vector<float>()),
            1e-5);
  // Blocks 0 and 1 (positions 0-7) published: keeping 6 would overwrite block 1.
  c.block_pool().publish(c.blocks(), kept);
  EXPECT_WICK_ERROR(c.truncate(6), Unsupported, "block 1 is shared or in the prefix cache");
  EXPECT_EQ(c.length(), 11);
  c.truncate(9);  // block 2 is still the cache's own
  EXPECT_EQ(c.length(), 9);
  c.truncate(0);
  EXPECT_EQ(c.blocks().size(), 0u);
}

TEST_P(ForwardBatch, PooledCachesAreRowsOfOneBufferPerLayer) {
  const auto m = models::LlamaModel::load(test::llama_dir(test::llama_fixtures().front()), [&] {
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    return o;
  }());
  KvCache layout(16);
  m.reserve_cache(layout);
  const std::vector<KvCache> pool = KvCache::pooled(layout, 3);
  ASSERT_EQ(pool.size(), 3u);
  const Shape row = layout.layers()[0].k.shape();
  ASSERT_NE(pool[0].pool(), nullptr);
  EXPECT_EQ(pool[0].pool(), pool[2].pool());
  // Three slots and the spare row (the padding lanes of a recorded batched step).
  EXPECT_EQ((*pool[0].pool())[0].k.shape(), Shape({4, row[1], row[2], row[3]}));
  for (int64_t s = 0; s < 3; ++s) {
    const KvCache& c = pool[size_t(s)];
    EXPECT_EQ(c.length(), 0);
    EXPECT_EQ(c.batch(), 1);
    EXPECT_EQ(c.layers().size(), layout.layers().size());
    EXPECT_EQ(c.layers()[0].k.shape(), row);
    EXPECT_EQ(c.layers()[0].k.data(), (*c.pool())[0].k.select(0, s).data());  // a view, no copy
  }
  EXPECT_EQ(layout.pool(), nullptr);
  EXPECT_EQ(layout.pool_slot(), -1);
  // Reserved for another shape, a pooled cache gets buffers of its own and leaves the pool.
  KvCache moved = pool[1];
  moved.reserve("test", 1, 2, 1, 4, 8, DType::F32, dev());
  EXPECT_EQ(moved.pool(), nullptr);
  EXPECT_EQ(moved.pool_slot(), -1);
  EXPECT_THROW((void)KvCache::pooled(layout, 0), Error);
  EXPECT_THROW((void)KvCache::pooled(KvCache(8), 2), Error);  // not reserved
}

TEST_P(ForwardBatch, Gpt2EqualsForwardPerSequence) {
  expect_batch_equals_forward(models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()}),
                              "gpt2 tiny2l");
}

TEST_P(ForwardBatch, OneSequenceIsForward) {
  const auto m = models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()});
  const std::vector<int32_t> t = lcg_tokens(9, m.vocab_size(), 3);
  KvCache a(16), b(16);
  const std::vector<BatchSequence> one = {{t, &a}};
  const auto got = m.forward_batch(one).to(Device::cpu()).to_vector<float>();
  const auto want = m.forward(ids(t), &b, true).to(Device::cpu()).to_vector<float>();
  EXPECT_LE(logits_rel_error(got, want), 1e-6);
}

TEST_P(ForwardBatch, BadBatchesAreRejectedAndLeaveTheCachesAlone) {
  const auto m = models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()});
  const std::vector<int32_t> t = lcg_tokens(9, m.vocab_size(), 5);
  KvCache a(8), b(16);
  auto expect_error = [&](std::vector<BatchSequence> seqs, const std::string& needle) {
    try {
      (void)m.forward_batch(seqs);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "at least one sequence");
  expect_error({{t, nullptr}}, "no cache");
  expect_error({{std::span<const int32_t>(), &a}}, "no tokens");
  expect_error({{std::span<const int32_t>(t).first(2), &b}, {t, &a}}, "capacity 8");
  expect_error({{std::span<const int32_t>(t).first(2), &b}, {std::span<const int32_t>(t).first(1), &b}},
               "share a cache");
  expect_error({{std::span<const int32_t>(t).first(2), &b, 3}}, "asks for 3 logits rows of its 2 tokens");
  expect_error({{std::span<const int32_t>(t).first(2), &b, 0}}, "asks for 0 logits rows");
  EXPECT_EQ(a.length(), 0);
  EXPECT_EQ(b.length(), 0);
}

WICK_INSTANTIATE_DEVICE_TEST(ForwardBatch);

}  // namespace
}  // namespace wick
