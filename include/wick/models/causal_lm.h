// What every decoder-only language model in wick offers the engine (serve::Engine, which
// Generator, the CLI and the server drive): a forward pass over token ids with a KV cache, a
// batched forward of several sequences over their caches, and a static-shape batched decode
// step that a CUDA graph can record once and replay per token.
// GPT-2 (gpt2.h) and the Llama family (llama.h) implement it.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "wick/models/block_pool.h"
#include "wick/tensor.h"

namespace wick::models {

struct KvBlocks;

// Keys and values of every layer for the positions seen so far. The buffers (B, heads,
// capacity, head_dim) per layer are allocated on first use and then written in place, so a
// step never reallocates or copies the history.
class KvCache {
 public:
  // capacity: positions the buffers hold (0: the model's context length). A cache that
  // knows its length asks for no more: its buffers are allocated whole.
  KvCache() = default;
  explicit KvCache(int64_t capacity);
  int64_t length() const { return length_; }      // positions cached
  int64_t capacity() const { return capacity_; }  // as requested; 0 = the model's context
  int64_t batch() const { return batch_; }
  // The positions the cache has room for now: a paged cache's blocks x block_size, else its
  // buffers' (0 before they are reserved).
  int64_t positions_held() const;
  // Forgets the cached positions (keeps the buffers for reuse with the same batch size; a
  // paged cache gives its blocks back to the pool).
  void clear();
  // Keeps the first n <= length() positions: a conversation whose new prompt shares a
  // prefix with what is cached continues from there instead of recomputing it, a
  // speculative step drops its refused drafts. A paged cache drops positions only from
  // blocks it alone holds and has not published (Unsupported otherwise; n == 0 clears).
  void truncate(int64_t n);

  // ---- For model implementations ----
  struct Layer {
    Tensor k, v;  // (B, heads, capacity, head_dim)
  };
  // The capacity a model with context length ctx uses for this cache.
  int64_t resolved_capacity(int64_t ctx) const { return capacity_ > 0 && capacity_ < ctx ? capacity_ : ctx; }
  // Makes the buffers n_layers x (batch, heads, capacity, head_dim) of dtype on device,
  // zero-filled. Buffers of another shape, dtype or device are replaced only while the
  // cache is empty (ShapeMismatch naming `model` otherwise: mixing them with cached
  // positions would be meaningless).
  void reserve(std::string_view model, size_t n_layers, int64_t batch, int64_t heads, int64_t capacity,
               int64_t head_dim, DType dtype, Device device);
  std::vector<Layer>& layers() { return layers_; }
  const std::vector<Layer>& layers() const { return layers_; }
  void set_length(int64_t n);

  // n empty caches laid out as `layout` (reserved, batch 1: its layers, heads, capacity,
  // dtype and device) whose buffers are rows 0..n-1 of one (n + 1, heads, capacity, head_dim)
  // buffer per layer: a server's slots, so that a batched decode step (forward_batch,
  // BatchDecoder) attends over all of them in one kernel instead of one per sequence. Row n
  // belongs to no cache: the padding lanes of a recorded batched step write there.
  // layout's own buffers stay its own.
  static std::vector<KvCache> pooled(const KvCache& layout, int64_t n);
  // The shared buffers (n + 1, heads, capacity, head_dim) per layer of a pooled cache and
  // this cache's row in them; nullptr and -1 for a cache with buffers of its own.
  const std::vector<Layer>* pool() const { return pool_.get(); }
  std::shared_ptr<const std::vector<Layer>> shared_pool() const { return pool_; }
  int64_t pool_slot() const { return pool_slot_; }

  // ---- Paged caches (a server's KV memory) ----
  // n empty caches of `capacity` positions each (0: the model's context) drawing fixed-size
  // blocks of block_size positions from one pool of num_blocks blocks (BlockPool), each
  // cache holding a block table instead of a row: (num_blocks + 1, heads, block_size,
  // head_dim) per layer, with the layers, heads, head_dim, dtype and device of `layout` (a
  // reserved cache of batch 1 and any capacity), block num_blocks being the spare that
  // padding lanes of a recorded step write.
  // A sequence takes blocks as it grows, so memory follows the tokens held, not capacity x
  // caches, and the pool's prefix cache shares the full blocks of a common prompt prefix
  // across sequences (take_prefix / adopt). Copies of a cache share its table; its blocks go
  // back to the pool with clear() or the last copy.
  static std::vector<KvCache> paged(const KvCache& layout, int64_t n, int64_t capacity, int64_t num_blocks,
                                    int64_t block_size);
  bool paged() const { return table_ != nullptr; }
  // The pool's allocator and the cache's blocks in position order (paged caches only).
  BlockPool& block_pool() const;
  std::span<const int32_t> blocks() const;
  int64_t block_size() const;
  // Blocks for positions [0, n) (n within the capacity): takes what is missing from the pool;
  // false, and nothing changed, when the pool has too few free blocks.
  bool ensure_positions(int64_t n);
  // An empty paged cache starts from blocks already holding `length` positions, taken from the
  // pool (BlockPool::take_prefix: one reference each, which the cache now owns).
  void adopt(std::vector<int32_t> blocks, int64_t length);

 private:
  struct Table;
  std::vector<Layer> layers_;
  int64_t length_ = 0, batch_ = 0, capacity_ = 0;
  std::shared_ptr<const std::vector<Layer>> pool_;
  int64_t pool_slot_ = -1;
  std::shared_ptr<Table> table_;  // paged caches only
};

// What the caches of one paged pool share (KvCache::paged): the blocks' buffers and the
// allocator of their ids.
struct KvBlocks {
  std::shared_ptr<const std::vector<KvCache::Layer>> layers;  // (blocks + 1, heads, block_size, head_dim)
  BlockPool pool;
};

// One sequence of a batched forward (CausalLM::forward_batch): its new tokens, which follow
// the positions its cache holds, and the cache (batch 1) that they extend.
struct BatchSequence {
  std::span<const int32_t> tokens;
  KvCache* cache = nullptr;
  // The logits of the last `logits` new tokens come back (1 <= logits <= tokens.size()):
  // a decode or prefill wants its last token's, a speculative step also those of its drafts.
  int64_t logits = 1;
};

// Device-resident state of a batched decode step with static shapes
// (CausalLM::decode_batch_step): `lanes` sequences, caches of one pool (KvCache::pooled or
// KvCache::paged),
// each feeding one token. Everything a step reads that changes between steps is in
// `inputs`, written by set_batch_inputs with one host-to-device copy, so a CUDA graph can
// record the step once per lane count and replay it (BatchDecoder does).
struct BatchDecodeState {
  int64_t lanes = 0;
  std::shared_ptr<const std::vector<KvCache::Layer>> pool;  // (P + 1, heads, capacity, head_dim) per layer
  Tensor inputs;              // (rows, lanes) i64 on the model device; the rows are the model's
  int64_t table_width = 0;    // a paged pool (KvCache::paged): the block-table entries per lane
  Tensor logits;              // (lanes, vocab_size) f32: the last step's output
  std::vector<Tensor> extra;  // model-specific device state (rope tables held for the recording)
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;

  virtual int64_t vocab_size() const = 0;
  virtual int64_t context_length() const = 0;  // positions the model can attend over
  virtual Device device() const = 0;
  virtual DType dtype() const = 0;  // the compute dtype of activations and the KV cache

  // ids (B, T) integer token ids -> logits (B, T, vocab_size) on the model device (the
  // model dtype, or f32 where the LM head is quantized). With a cache, ids are the positions
  // after the cached ones and the cache is extended by T. With last_only, only the last
  // position's logits (B, 1, vocab_size): all that generation needs.
  virtual Tensor forward(const Tensor& ids, KvCache* cache = nullptr, bool last_only = false) const = 0;

  // Several sequences in one forward pass, each with its own cache (batch 1, distinct
  // caches): the token-wise work (embeddings, norms, projections, MLP) runs once over the
  // concatenated tokens, so the weights are read once per step for all sequences; positions
  // and attention are each sequence's own. Each cache is extended by its sequence's tokens.
  // Returns (sum of seqs[i].logits, vocab_size) f32 on the model device: each sequence's
  // rows in order, the logits of its last `logits` new tokens. The results equal the same
  // rows of forward(tokens, cache) per sequence (up to rounding). This default runs exactly
  // that, one sequence after another.
  virtual Tensor forward_batch(std::span<const BatchSequence> seqs) const;
  // Batched decoding with static shapes over a pool of caches (KvCache::pooled or paged),
  // what a server's steady state is: several sequences, one new token each (BatchDecoder
  // records a step per lane count as a CUDA graph). Models without it return false and
  // callers use forward_batch.
  virtual bool batch_decode_supported() const { return false; }
  // Whether decode_batch_step over `lanes` lanes launches the same work whatever the values
  // (reads nothing on the host), so that a CUDA graph can record it. Not so for a step that
  // synchronizes (Mixture-of-Experts layers past mul_mat_id_on_device's pairs group tokens
  // by expert on the host): BatchDecoder then runs that step op by op.
  virtual bool graph_recordable(int64_t lanes) const { return true; }
  // The state of a step of `lanes` (>= 1) sequences of the pool that pooled_cache belongs to
  // (batch_decode.cpp: the same for every model).
  BatchDecodeState begin_batch_decode(const KvCache& pooled_cache, int64_t lanes) const;
  // Writes a step's inputs (one host-to-device copy): seqs, at most s.lanes of them, each one
  // token, caches of s's pool holding fewer positions than their capacity. Lanes past
  // seqs.size() are padding: they attend and write in the pool's spare row, and their logits
  // mean nothing. Caches are not advanced (the caller does, after the step).
  void set_batch_inputs(BatchDecodeState& s, std::span<const BatchSequence> seqs) const;
  // One step: every lane's token through the model, its key and value written into its
  // slot at its position, its logits into s.logits. Only device ops with static shapes.
  virtual void decode_batch_step(BatchDecodeState& s) const;

  // How many positions from `past` on one forward can take and still compute each of them as
  // one forward per position would (speculative verification stays within it). No bound by
  // default; the Llama family's LongRoPE picks its factors by the length a forward reaches,
  // so there a forward must not cross the original context.
  virtual int64_t exact_span(int64_t past) const;

  // Allocates cache's buffers (batch 1, its resolved capacity) now instead of on first use,
  // so that a server learns at start-up whether its KV memory fits (OutOfMemory).
  // The default does nothing (buffers come with the first forward).
  virtual void reserve_cache(KvCache& cache) const;

 protected:
  // A cache layer's shape, (layers, KV heads, head dim): what begin_batch_decode checks a
  // pool against. Models with a batched decode step say it.
  struct KvShape {
    size_t layers = 0;
    int64_t heads = 0, head_dim = 0;
  };
  virtual KvShape kv_shape() const;
  // What a model's recorded step reads besides its inputs, for positions [0, n) (the Llama
  // family's rotary tables), held by the state so that a recording's addresses stay valid.
  virtual std::vector<Tensor> batch_decode_tables(int64_t n) const;
};

}  // namespace wick::models
