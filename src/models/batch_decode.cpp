// CausalLM's batched decode step with static shapes, the part every model shares
// (causal_lm.h): the state of a step of `lanes` sequences of one pool and the one
// host-to-device copy of its inputs, laid out as batch::decode_inputs reads them. A model
// writes decode_batch_step (its layers over those inputs) and says its cache's shape.
//
// The inputs are one (4 + M, lanes) i64 tensor: token ids, positions, slots and lengths
// (position + 1), then for a paged pool the block tables (entry j of every lane in row
// 4 + j), a view of which is the (lanes, M) table. Padding lanes feed token 0 at position 0
// of the pool's spare row or block, so they write nowhere a sequence reads.
#include "batch.h"
#include "wick/error.h"

namespace wick::models {

namespace {

constexpr const char* kBatchStepOp = "batched decode";
enum DecodeInputRow : int64_t { kStepIds, kStepPositions, kStepSlots, kStepLengths, kStepInputRows };

}  // namespace

namespace batch {

DecodeInputs decode_inputs(const BatchDecodeState& s) {
  DecodeInputs in;
  in.ids = s.inputs.narrow(0, kStepIds, 1);  // (1, lanes): the stream
  in.positions = s.inputs.select(0, kStepPositions);
  in.blocks = s.table_width > 0 ? s.inputs.narrow(0, kStepInputRows, s.table_width).transpose(0, 1)
                                : s.inputs.select(0, kStepSlots);
  in.lengths = s.inputs.select(0, kStepLengths);
  return in;
}

}  // namespace batch

CausalLM::KvShape CausalLM::kv_shape() const {
  fail(ErrorKind::Unsupported, kBatchStepOp, ": this model has no batched decode step (batch_decode_supported() ",
       "is false); use forward_batch");
}

std::vector<Tensor> CausalLM::batch_decode_tables(int64_t) const { return {}; }

BatchDecodeState CausalLM::begin_batch_decode(const KvCache& pooled_cache, int64_t lanes) const {
  WICK_CHECK(batch_decode_supported(), Unsupported, kBatchStepOp,
             ": this model has no batched decode step (batch_decode_supported() is false); use forward_batch");
  WICK_CHECK(lanes >= 1, InvalidArgument, kBatchStepOp, ": lanes must be >= 1, got ", lanes);
  const auto pool = pooled_cache.shared_pool();
  WICK_CHECK(pool != nullptr, InvalidArgument, kBatchStepOp,
             ": the cache is not a slot of a pool (KvCache::pooled or paged)");
  const KvShape shape = kv_shape();
  WICK_CHECK(pool->size() == shape.layers, InvalidArgument, kBatchStepOp, ": the pool has ", pool->size(),
             " layers, the model ", shape.layers);
  const Tensor& k0 = (*pool)[0].k;
  WICK_CHECK(
      k0.device() == device() && k0.dtype() == dtype() && k0.dim(1) == shape.heads && k0.dim(3) == shape.head_dim,
      InvalidArgument, kBatchStepOp, ": the pool ", k0.shape(), " ", k0.dtype(), " on ", k0.device(),
      " belongs to another model, device or dtype");
  BatchDecodeState s;
  s.lanes = lanes;
  s.pool = pool;
  // A paged cache's table is as wide as its capacity's blocks (the widest a sequence gets).
  const int64_t capacity = pooled_cache.paged() ? pooled_cache.resolved_capacity(context_length()) : k0.dim(2);
  s.table_width = pooled_cache.paged() ? (capacity + k0.dim(2) - 1) / k0.dim(2) : 0;
  s.inputs = zeros(Shape{kStepInputRows + s.table_width, lanes}, DType::I64, device());
  // Tables for every position of the pool, held by the state: a recorded step reads their
  // addresses, whatever later calls grow.
  s.extra = batch_decode_tables(s.table_width > 0 ? s.table_width * k0.dim(2) : capacity);
  return s;
}

void CausalLM::set_batch_inputs(BatchDecodeState& s, std::span<const BatchSequence> seqs) const {
  WICK_CHECK(s.pool && s.inputs.defined(), InvalidArgument, kBatchStepOp,
             ": the state does not come from begin_batch_decode");
  const auto n = int64_t(seqs.size());
  WICK_CHECK(n >= 1 && n <= s.lanes, InvalidArgument, kBatchStepOp, ": ", n, " sequences for a step of ", s.lanes,
             " lanes");
  const Tensor& k0 = (*s.pool)[0].k;
  const int64_t spare = k0.dim(0) - 1, L = s.lanes, W = s.table_width, vocab = vocab_size();
  std::vector<int64_t> in(size_t((kStepInputRows + W) * L), 0);
  for (int64_t i = 0; i < L; ++i) {  // padding: token 0 at position 0 of the spare row or block
    in[size_t(kStepSlots * L + i)] = spare;
    in[size_t(kStepLengths * L + i)] = 1;
    for (int64_t j = 0; j < W; ++j) in[size_t((kStepInputRows + j) * L + i)] = spare;
  }
  for (int64_t i = 0; i < n; ++i) {
    const BatchSequence& q = seqs[size_t(i)];
    WICK_CHECK(q.cache && q.cache->pool() == s.pool.get(), InvalidArgument, kBatchStepOp, ": sequence ", i,
               "'s cache is not a slot of the state's pool");
    WICK_CHECK(q.tokens.size() == 1, InvalidArgument, kBatchStepOp, ": sequence ", i, " has ", q.tokens.size(),
               " tokens, a decode step takes one");
    WICK_CHECK(q.tokens[0] >= 0 && q.tokens[0] < vocab, InvalidArgument, kBatchStepOp, ": sequence ", i, ": token ",
               q.tokens[0], " is outside the vocabulary of ", vocab);
    const int64_t pos = q.cache->length();
    const int64_t capacity = q.cache->positions_held();
    const char* held_in = W > 0 ? " positions in its blocks)" : " positions)";
    WICK_CHECK(pos < capacity, InvalidArgument, kBatchStepOp, ": sequence ", i, "'s cache is full (", pos, " of ",
               capacity, held_in);
    WICK_CHECK(W == 0 || int64_t(q.cache->blocks().size()) <= W, InvalidArgument, kBatchStepOp, ": sequence ", i,
               " holds ", q.cache->blocks().size(), " blocks, the step's tables ", W);
    for (size_t j = 0; W > 0 && j < q.cache->blocks().size(); ++j)
      in[size_t((kStepInputRows + int64_t(j)) * L + i)] = q.cache->blocks()[j];
    for (int64_t j = 0; j < i; ++j)
      WICK_CHECK(seqs[size_t(j)].cache != q.cache, InvalidArgument, kBatchStepOp, ": sequences ", j, " and ", i,
                 " share a cache");
    in[size_t(kStepIds * L + i)] = q.tokens[0];
    in[size_t(kStepPositions * L + i)] = pos;
    in[size_t(kStepSlots * L + i)] = q.cache->pool_slot();
    in[size_t(kStepLengths * L + i)] = pos + 1;
  }
  s.inputs.copy_(Tensor::from_vector(in, Shape{kStepInputRows + W, L}).to(device()));
}

void CausalLM::decode_batch_step(BatchDecodeState&) const {
  fail(ErrorKind::Unsupported, kBatchStepOp, ": this model has no batched decode step; use forward_batch");
}

}  // namespace wick::models
