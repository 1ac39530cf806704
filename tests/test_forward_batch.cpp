// CausalLM::forward_batch against forward() per sequence: a mixed batch (a prefill chunk of
// 7 tokens after 5 cached ones, two decode steps at different lengths, a sequence starting
// empty) gives each sequence the logits that forward(tokens, cache, last_only) gives it
// alone, and leaves its cache as forward() would (checked by a second, all-decode step).
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

// The batch: (cached positions, new tokens) per sequence.
struct Case {
  int64_t past, count;
};
const std::vector<Case> kCases = {{5, 7}, {12, 1}, {30, 1}, {0, 4}};

// pooled: the batch's caches are slots of one KvCache::pooled pool, out of order and with
// a slot unused (the server's layout: its decoding sequences attend in one call).
void expect_batch_equals_forward(const CausalLM& m, const std::string& what, bool pooled = false) {
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
  std::vector<std::vector<float>> want(n);
  for (size_t i = 0; i < n; ++i) {
    const std::span<const int32_t> s(seq[i]);
    if (kCases[i].past > 0) {
      (void)m.forward(ids(s.first(size_t(kCases[i].past))), &batched[i]);
      (void)m.forward(ids(s.first(size_t(kCases[i].past))), &alone[i]);
    }
    want[i] = m.forward(ids(s.subspan(size_t(kCases[i].past), size_t(kCases[i].count))), &alone[i], true)
                  .to(Device::cpu())
                  .to(DType::F32)
                  .to_vector<float>();
  }
  std::vector<BatchSequence> batch;
  for (size_t i = 0; i < n; ++i)
    batch.push_back(
        {std::span<const int32_t>(seq[i]).subspan(size_t(kCases[i].past), size_t(kCases[i].count)), &batched[i]});
  const Tensor logits = m.forward_batch(batch);
  ASSERT_EQ(logits.shape(), Shape({int64_t(n), V})) << what;
  ASSERT_EQ(logits.dtype(), DType::F32) << what;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(batched[i].length(), kCases[i].past + kCases[i].count) << what << " sequence " << i;
    const auto got = logits.select(0, int64_t(i)).to(Device::cpu()).to_vector<float>();
    EXPECT_LE(logits_rel_error(got, want[i]), 1e-5) << what << " sequence " << i;
  }
  // A second step, one token each, over the caches the batch extended.
  batch.clear();
  for (size_t i = 0; i < n; ++i) {
    const std::span<const int32_t> next = std::span<const int32_t>(seq[i]).last(1);
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
    expect_batch_equals_forward(models::LlamaModel::load(test::llama_dir(name), o), name + " pooled", true);
  }
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
  expect_batch_equals_forward(models::Gpt2Model::load(test::data_path("gpt2/tiny2l"), dev()), "gpt2 tiny2l");
}

TEST_P(ForwardBatch, OneSequenceIsForward) {
  const auto m = models::Gpt2Model::load(test::data_path("gpt2/tiny2l"), dev());
  const std::vector<int32_t> t = lcg_tokens(9, m.vocab_size(), 3);
  KvCache a(16), b(16);
  const std::vector<BatchSequence> one = {{t, &a}};
  const auto got = m.forward_batch(one).to(Device::cpu()).to_vector<float>();
  const auto want = m.forward(ids(t), &b, true).to(Device::cpu()).to_vector<float>();
  EXPECT_LE(logits_rel_error(got, want), 1e-6);
}

TEST_P(ForwardBatch, BadBatchesAreRejectedAndLeaveTheCachesAlone) {
  const auto m = models::Gpt2Model::load(test::data_path("gpt2/tiny2l"), dev());
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
  EXPECT_EQ(a.length(), 0);
  EXPECT_EQ(b.length(), 0);
}

WICK_INSTANTIATE_DEVICE_TEST(ForwardBatch);

}  // namespace
}  // namespace wick
