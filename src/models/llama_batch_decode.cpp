// The Llama family's batched decode step with static shapes (CausalLM::decode_batch_step):
// `lanes` sequences of one pool of caches, one token each, as one (1, lanes) stream through
// blocks(), every lane with its own position's rotary row. The keys and values go into the
// pool by cache_write_ and attention is cache_attention over each lane's own slot and
// length, so nothing in a step reads a value on the host: BatchDecoder records it into a
// CUDA graph once per lane count. The inputs a step reads live in one (4, lanes) i64 tensor:
// token ids, positions, slots and lengths (position + 1); a paged pool's block tables follow
// as rows 4.. (entry j of every lane in row 4 + j), a view of which is the (lanes, M) table.
#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {

constexpr const char* kBatchDecodeOp = "llama batched decode";
enum InputRow : int64_t { kIds, kPositions, kSlots, kLengths, kInputRows };
enum BatchExtra : size_t { kBatchCos, kBatchSin, kBatchCosLong, kBatchSinLong, kBatchExtras };

}  // namespace

BatchDecodeState LlamaModel::begin_batch_decode(const KvCache& pooled_cache, int64_t lanes) const {
  const LlamaConfig& c = config_;
  WICK_CHECK(lanes >= 1, InvalidArgument, kBatchDecodeOp, ": lanes must be >= 1, got ", lanes);
  const auto pool = pooled_cache.shared_pool();
  WICK_CHECK(pool != nullptr, InvalidArgument, kBatchDecodeOp, ": the cache is not a slot of a pool (KvCache::pooled)");
  WICK_CHECK(pool->size() == layers_.size(), InvalidArgument, kBatchDecodeOp, ": the pool has ", pool->size(),
             " layers, the model ", layers_.size());
  const Tensor& k0 = (*pool)[0].k;
  WICK_CHECK(k0.device() == device_ && k0.dtype() == dtype_ && k0.dim(1) == c.n_kv_head && k0.dim(3) == c.head_dim,
             InvalidArgument, kBatchDecodeOp, ": the pool ", k0.shape(), " ", k0.dtype(), " on ", k0.device(),
             " belongs to another model, device or dtype");
  BatchDecodeState s;
  s.lanes = lanes;
  s.pool = pool;
  // A paged cache's table is as wide as its capacity's blocks (the widest a sequence gets).
  const int64_t capacity = pooled_cache.paged() ? pooled_cache.resolved_capacity(c.context_length) : k0.dim(2);
  s.table_width = pooled_cache.paged() ? (capacity + k0.dim(2) - 1) / k0.dim(2) : 0;
  s.inputs = zeros(Shape{kInputRows + s.table_width, lanes}, DType::I64, device_);
  // The tables for every position of the pool, held by the state: a recorded step reads
  // their addresses, whatever later calls grow.
  const RopeTables::Rows rope = rope_->at_least(s.table_width > 0 ? s.table_width * k0.dim(2) : capacity);
  s.extra.assign(kBatchExtras, Tensor());
  s.extra[kBatchCos] = rope.cos;
  s.extra[kBatchSin] = rope.sin;
  s.extra[kBatchCosLong] = rope.cos_long;
  s.extra[kBatchSinLong] = rope.sin_long;
  return s;
}

void LlamaModel::set_batch_inputs(BatchDecodeState& s, std::span<const BatchSequence> seqs) const {
  WICK_CHECK(s.pool && s.inputs.defined() && s.extra.size() == kBatchExtras, InvalidArgument, kBatchDecodeOp,
             ": the state does not come from begin_batch_decode");
  const auto n = int64_t(seqs.size());
  WICK_CHECK(n >= 1 && n <= s.lanes, InvalidArgument, kBatchDecodeOp, ": ", n, " sequences for a step of ", s.lanes,
             " lanes");
  const Tensor& k0 = (*s.pool)[0].k;
  const int64_t spare = k0.dim(0) - 1, L = s.lanes, W = s.table_width;
  std::vector<int64_t> in(size_t((kInputRows + W) * L), 0);
  for (int64_t i = 0; i < L; ++i) {  // padding: token 0 at position 0 of the spare row or block
    in[size_t(kSlots * L + i)] = spare;
    in[size_t(kLengths * L + i)] = 1;
    for (int64_t j = 0; j < W; ++j) in[size_t((kInputRows + j) * L + i)] = spare;
  }
  for (int64_t i = 0; i < n; ++i) {
    const BatchSequence& q = seqs[size_t(i)];
    WICK_CHECK(q.cache && q.cache->pool() == s.pool.get(), InvalidArgument, kBatchDecodeOp, ": sequence ", i,
               "'s cache is not a slot of the state's pool");
    WICK_CHECK(q.tokens.size() == 1, InvalidArgument, kBatchDecodeOp, ": sequence ", i, " has ", q.tokens.size(),
               " tokens, a decode step takes one");
    WICK_CHECK(q.tokens[0] >= 0 && q.tokens[0] < config_.vocab_size, InvalidArgument, kBatchDecodeOp, ": sequence ", i,
               ": token ", q.tokens[0], " is outside the vocabulary of ", config_.vocab_size);
    const int64_t pos = q.cache->length();
    const int64_t capacity = q.cache->positions_held();
    const char* held_in = W > 0 ? " positions in its blocks)" : " positions)";
    WICK_CHECK(pos < capacity, InvalidArgument, kBatchDecodeOp, ": sequence ", i, "'s cache is full (", pos, " of ",
               capacity, held_in);
    WICK_CHECK(W == 0 || int64_t(q.cache->blocks().size()) <= W, InvalidArgument, kBatchDecodeOp, ": sequence ", i,
               " holds ", q.cache->blocks().size(), " blocks, the step's tables ", W);
    for (size_t j = 0; W > 0 && j < q.cache->blocks().size(); ++j)
      in[size_t((kInputRows + int64_t(j)) * L + i)] = q.cache->blocks()[j];
    for (int64_t j = 0; j < i; ++j)
      WICK_CHECK(seqs[size_t(j)].cache != q.cache, InvalidArgument, kBatchDecodeOp, ": sequences ", j, " and ", i,
                 " share a cache");
    in[size_t(kIds * L + i)] = q.tokens[0];
    in[size_t(kPositions * L + i)] = pos;
    in[size_t(kSlots * L + i)] = q.cache->pool_slot();
    in[size_t(kLengths * L + i)] = pos + 1;
  }
  s.inputs.copy_(Tensor::from_vector(in, Shape{kInputRows + W, L}).to(device_));
}

void LlamaModel::decode_batch_step(BatchDecodeState& s) const {
  const LlamaConfig& c = config_;
  WICK_CHECK(s.pool && s.inputs.defined() && s.extra.size() == kBatchExtras, InvalidArgument, kBatchDecodeOp,
             ": the state does not come from begin_batch_decode");
  const int64_t L = s.lanes;
  const Tensor ids = s.inputs.narrow(0, kIds, 1);  // (1, L): the stream
  const Tensor positions = s.inputs.select(0, kPositions);
  // The slots, or the block tables (lanes, M) of a paged pool.
  const Tensor slots =
      s.table_width > 0 ? s.inputs.narrow(0, kInputRows, s.table_width).transpose(0, 1) : s.inputs.select(0, kSlots);
  const Tensor lengths = s.inputs.select(0, kLengths);
  Tensor cos = embedding(positions, s.extra[kBatchCos]), sin = embedding(positions, s.extra[kBatchSin]);
  if (s.extra[kBatchCosLong].defined()) {  // longrope: the long set once a sequence passes the original context
    const Tensor is_long = ge(positions, full(Shape{L}, c.rope.original_context, DType::I64, device_)).unsqueeze(1);
    cos = where(is_long, embedding(positions, s.extra[kBatchCosLong]), cos);
    sin = where(is_long, embedding(positions, s.extra[kBatchSinLong]), sin);
  }
  const std::vector<KvCache::Layer>& pool = *s.pool;
  const Tensor y = blocks(embed(ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    // q (1, H, L, D), k and v (1, KV, L, D): the lanes as rows.
    auto rows = [](const Tensor& t) { return t.squeeze(0).transpose(0, 1); };
    return batch::pooled_attention(pool[li], rows(q), rows(k), rows(v), slots, positions, lengths,
                                   cache_options(c, li));
  });
  s.logits = head(y.reshape({L, c.hidden_size})).to(DType::F32);
}

}  // namespace wick::models
