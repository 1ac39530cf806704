// models::BatchDecoder: the recorded batched decode step (one CUDA graph per lane count on
// CUDA, op by op on the CPU) gives every sequence the logits forward(token, cache, true)
// gives it alone, step after step, for every Llama fixture (sliding windows, softcaps,
// longrope, q/k norms, biases, fused projections) and GPT-2; lane counts with padding lanes leave the
// other slots' caches as they were; batches it does not take are refused with nothing
// changed.
#include <gtest/gtest.h>

#include <cmath>

#include "support/devices.h"
#include "support/forwarding_model.h"
#include "support/golden.h"
#include "support/llama_oracle.h"
#include "support/model_inputs.h"
#include "support/thrown.h"
#include "wick/models/batch_decoder.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

using models::BatchDecoder;
using models::BatchSequence;
using models::KvCache;

using test::lcg_tokens;

using test::logits_rel_error;

class BatchDecoderTest : public test::DeviceTest {
 protected:
  models::LlamaModel load(const std::string& name) const {
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    return models::LlamaModel::load(test::llama_dir(name), o);
  }
};

// Sequences in slots {4, 0, 2, 5, 1} of a 6-slot pool (slot 3 unused), prompts of 1 to 29
// tokens, then decode steps of all five (lanes 8 on CUDA: three padding lanes), of two
// (lanes 2) and of five again, each against forward() on a cache of the sequence's own.
void expect_steps_equal_forward(const models::CausalLM& m) {
  {
    const int64_t V = m.vocab_size();
    KvCache layout(48);
    m.reserve_cache(layout);
    std::vector<KvCache> pool = KvCache::pooled(layout, 6);
    const size_t slot[] = {4, 0, 2, 5, 1};
    const int64_t prompt[] = {29, 1, 7, 16, 3};
    const size_t n = std::size(slot);
    std::vector<KvCache> alone;
    std::vector<std::vector<int32_t>> seq(n);
    for (size_t i = 0; i < n; ++i) {
      seq[i] = lcg_tokens(size_t(prompt[i]) + 12, V, uint32_t(3 + i));
      alone.emplace_back(48);
      const Tensor ids = test::llama_ids(std::vector<int32_t>(seq[i].begin(), seq[i].begin() + prompt[i]));
      (void)m.forward(ids, &pool[slot[i]]);
      (void)m.forward(ids, &alone[i]);
    }
    // The unused slot holds a prompt too: no step may touch it.
    const Tensor untouched = test::llama_ids(lcg_tokens(5, V, 99));
    (void)m.forward(untouched, &pool[3]);
    const std::vector<float> slot3 = (*pool[3].pool())[0].k.select(0, 3).to(Device::cpu()).to_vector<float>();

    BatchDecoder decoder(m);
    int64_t fed[std::size(slot)] = {};
    for (const std::vector<size_t>& members : {std::vector<size_t>{0, 1, 2, 3, 4}, {3, 1}, {0, 1, 2, 3, 4}}) {
      std::vector<BatchSequence> batch;
      std::vector<std::vector<float>> want;
      for (size_t i : members) {
        const std::span<const int32_t> t(&seq[i][size_t(prompt[i] + fed[i])], 1);
        batch.push_back({t, &pool[slot[i]]});
        want.push_back(
            m.forward(test::llama_ids({t[0]}), &alone[i], true).to(Device::cpu()).to(DType::F32).to_vector<float>());
      }
      ASSERT_TRUE(decoder.takes(batch));
      const Tensor logits = decoder.step(batch);
      ASSERT_EQ(logits.shape(), Shape({int64_t(members.size()), V}));
      ASSERT_EQ(logits.dtype(), DType::F32);
      for (size_t j = 0; j < members.size(); ++j) {
        const size_t i = members[j];
        EXPECT_EQ(pool[slot[i]].length(), prompt[i] + fed[i] + 1);
        EXPECT_LE(logits_rel_error(logits.select(0, int64_t(j)).to(Device::cpu()).to_vector<float>(), want[j]), 1e-5)
            << "sequence " << i << " after " << fed[i] << " steps";
        ++fed[i];
      }
    }
    EXPECT_EQ(pool[3].length(), 5);
    EXPECT_EQ((*pool[3].pool())[0].k.select(0, 3).to(Device::cpu()).to_vector<float>(), slot3);
    EXPECT_EQ(decoder.recorded_steps(), 2u);  // lanes 8 and 2 on CUDA, 5 and 2 on the CPU
  }
}

TEST_P(BatchDecoderTest, StepsEqualForwardPerSequence) {
  for (const auto& name : test::llama_fixtures()) {
    SCOPED_TRACE(name);
    expect_steps_equal_forward(load(name));
  }
  SCOPED_TRACE("gpt2");
  expect_steps_equal_forward(models::LlamaModel::load(test::data_path("gpt2/tiny2l"), {.device = dev()}));
}

TEST_P(BatchDecoderTest, LaneCountsAreFewOnCuda) {
  const models::LlamaModel m = load("llama3");
  const BatchDecoder d(m);
  if (!dev().is_cuda()) {
    EXPECT_EQ(d.lanes_for(5, 64), 5);  // nothing is recorded on the CPU: no padding
    return;
  }
  const std::pair<int64_t, int64_t> want[] = {{1, 1},  {2, 2},   {3, 4},   {5, 8},   {8, 8},
                                              {9, 16}, {17, 24}, {64, 64}, {65, 96}, {97, 128}};
  for (const auto& [n, lanes] : want) EXPECT_EQ(d.lanes_for(n, 256), lanes) << n;
  EXPECT_EQ(d.lanes_for(49, 50), 50);  // never more lanes than the pool has slots
}

TEST_P(BatchDecoderTest, RefusesWhatItDoesNotTake) {
  const models::LlamaModel m = load("llama3");
  KvCache layout(8);
  m.reserve_cache(layout);
  std::vector<KvCache> pool = KvCache::pooled(layout, 2), other = KvCache::pooled(layout, 2);
  KvCache own(8);
  const std::vector<int32_t> one{5}, two{5, 6};
  BatchDecoder d(m);
  const std::vector<std::vector<BatchSequence>> refused = {
      {},
      {{two, &pool[0]}},                    // two tokens
      {{one, &own}},                        // not a slot of a pool
      {{one, &pool[0]}, {one, &pool[0]}},   // one cache twice
      {{one, &pool[0]}, {one, &other[0]}},  // two pools
  };
  for (const auto& batch : refused) {
    EXPECT_FALSE(d.takes(batch));
    EXPECT_EQ(test::thrown_kind([&] { (void)d.step(batch); }), ErrorKind::InvalidArgument);
  }
  // A full cache has no position left.
  (void)m.forward(test::llama_ids(lcg_tokens(8, m.vocab_size(), 1)), &pool[1]);
  EXPECT_FALSE(d.takes(std::vector<BatchSequence>{{one, &pool[1]}}));
  // A token outside the vocabulary: refused by the step, nothing advanced.
  const std::vector<int32_t> bad{int32_t(m.vocab_size())};
  EXPECT_EQ(test::thrown_kind([&] {
              (void)d.step(std::vector<BatchSequence>{{bad, &pool[0]}});
            }),
            ErrorKind::InvalidArgument);
  EXPECT_EQ(pool[0].length(), 0);
  // After a step the decoder keeps to its pool.
  (void)d.step(std::vector<BatchSequence>{{one, &pool[0]}});
  EXPECT_EQ(pool[0].length(), 1);
  EXPECT_FALSE(d.takes(std::vector<BatchSequence>{{one, &other[1]}}));
  // A model without a batched step.
  const test::ForwardingModel plain(m);  // forward() alone: no batched step
  EXPECT_FALSE(plain.batch_decode_supported());
  EXPECT_FALSE(BatchDecoder(plain).takes(std::vector<BatchSequence>{{one, &pool[0]}}));
  EXPECT_EQ(test::thrown_kind([&] { (void)plain.begin_batch_decode(pool[0], 1); }), ErrorKind::Unsupported);
}

WICK_INSTANTIATE_DEVICE_TEST(BatchDecoderTest);

}  // namespace
}  // namespace wick
