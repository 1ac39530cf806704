// The Llama family's batched decode step with static shapes (CausalLM::decode_batch_step):
// `lanes` sequences of one pool of caches, one token each, as one (1, lanes) stream through
// blocks(), every lane with its own position's rotary row. The keys and values go into the
// pool by cache_write_ and attention is cache_attention over each lane's own slot or blocks
// and length, so nothing in a step reads a value on the host: BatchDecoder records it into a
// CUDA graph once per lane count. The inputs' layout is batch_decode.cpp's.
#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {

// BatchDecodeState::extra: the rotary tables (the long set of LongRoPE when there is one).
enum BatchExtra : size_t {
  kBatchCos,
  kBatchSin,
  kBatchCosLong,
  kBatchSinLong,
  kBatchCosLocal,
  kBatchSinLocal,
  kBatchExtras
};

}  // namespace

CausalLM::KvShape LlamaModel::kv_shape() const { return {layers_.size(), config_.n_kv_head, config_.head_dim}; }

std::vector<Tensor> LlamaModel::batch_decode_tables(int64_t n) const {
  if (!rope_) return {};  // learned positions (GPT-2): the embedding adds them
  const RopeTables::Rows rope = rope_->at_least(n);
  std::vector<Tensor> t(kBatchExtras);
  t[kBatchCos] = rope.cos;
  t[kBatchSin] = rope.sin;
  t[kBatchCosLong] = rope.cos_long;
  t[kBatchSinLong] = rope.sin_long;
  t[kBatchCosLocal] = rope.cos_local;
  t[kBatchSinLocal] = rope.sin_local;
  return t;
}

void LlamaModel::decode_batch_step(BatchDecodeState& s) const {
  const LlamaConfig& c = config_;
  WICK_CHECK(s.pool && s.inputs.defined() && s.extra.size() == (rope_ ? kBatchExtras : 0), InvalidArgument, kLlamaOp,
             ": the batched decode state does not come from begin_batch_decode");
  const int64_t L = s.lanes;
  const batch::DecodeInputs in = batch::decode_inputs(s);
  Rotary rot;  // none with learned positions (GPT-2): embed() adds them
  if (rope_) {
    rot.cos = embedding(in.positions, s.extra[kBatchCos]);
    rot.sin = embedding(in.positions, s.extra[kBatchSin]);
    if (s.extra[kBatchCosLong].defined()) {  // longrope: the long set once a sequence passes the original context
      const Tensor is_long =
          ge(in.positions, full(Shape{L}, c.rope.original_context, DType::I64, device_)).unsqueeze(1);
      rot.cos = where(is_long, embedding(in.positions, s.extra[kBatchCosLong]), rot.cos);
      rot.sin = where(is_long, embedding(in.positions, s.extra[kBatchSinLong]), rot.sin);
    }
    if (s.extra[kBatchCosLocal].defined()) {
      rot.cos_local = embedding(in.positions, s.extra[kBatchCosLocal]);
      rot.sin_local = embedding(in.positions, s.extra[kBatchSinLocal]);
    }
  }
  const std::vector<KvCache::Layer>& pool = *s.pool;
  const Tensor y =
      blocks(embed(in.ids, in.positions), rot, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
        // q (1, H, L, D), k and v (1, KV, L, D): the lanes as rows.
        auto rows = [](const Tensor& t) { return t.squeeze(0).transpose(0, 1); };
        return batch::pooled_attention(pool[li], rows(q), rows(k), rows(v), in.blocks, in.positions, in.lengths,
                                       cache_options(c, li, layers_[li]));
      });
  s.logits = head(y.reshape({L, c.hidden_size})).to(DType::F32);
}

}  // namespace wick::models
