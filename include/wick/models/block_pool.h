// BlockPool: the block allocator of a paged KV cache with automatic prefix caching across
// requests (the bookkeeping half of vLLM v1's block_pool.py / kv_cache_manager.py). It holds
// no tensors: blocks are ids 0..num_blocks-1, each standing for block_size token positions
// of a cache the caller owns. A sequence's block table lists its blocks in position order.
//
// Once a sequence has written a full block, publish() registers it under its chain (the
// previous block's key and this block's tokens), so a later request whose prompt starts with
// the same tokens takes it with take_prefix() instead of recomputing it. Keys are exact: a
// 64-bit chain hash only finds a candidate, which must also have the same parent block (of
// the same generation: ids are reused) and the same stored tokens. A released block keeps
// its cached contents on an LRU free list until allocate() needs it; within one release the
// tail blocks go first, since a sequence's head is the prefix most likely shared.
//
// All operations are O(blocks touched * block_size) at most; memory is
// O(num_blocks * block_size) tokens. Not thread-safe: one scheduler thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace wick::models {

class BlockPool {
 public:
  // Both >= 1 (and num_blocks must fit an int32 id) else InvalidArgument.
  BlockPool(int64_t num_blocks, int64_t block_size);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  // Blocks with no reference: never used, or cached and evictable.
  int64_t free_blocks() const { return int64_t(fresh_.size()) + lru_size_; }
  // Blocks referenced by at least one holder.
  int64_t used_blocks() const { return num_blocks_ - free_blocks(); }
  // Blocks registered in the prefix cache, referenced or not. A block whose parent was
  // evicted stays registered (and counted) but unreachable until it is evicted or replaced.
  int64_t cached_blocks() const { return cached_; }

  // n fresh blocks, each with reference count 1, contents unspecified (never a cached hit).
  // Takes never-used blocks first, then evicts free cached blocks least-recently-freed
  // first (an evicted block leaves the prefix cache). std::nullopt and nothing changed when
  // fewer than n blocks are free. n >= 0 else InvalidArgument.
  std::optional<std::vector<int32_t>> allocate(int64_t n);

  // The number of leading full blocks that take_prefix(tokens, limit) would return now,
  // without taking them. A limit past tokens.size() means tokens.size().
  int64_t cached_prefix_blocks(std::span<const int32_t> tokens,
                               size_t limit = std::numeric_limits<size_t>::max()) const;

  // The cached blocks holding tokens' leading full blocks (block i holds tokens
  // [i*block_size, (i+1)*block_size) and follows block i-1 of the same chain), as many as
  // are cached in a row from the start; each gains a reference (a free one leaves the free
  // list). Only blocks wholly within the first limit tokens count (clamped to tokens.size());
  // a caller that must recompute the last prompt token passes tokens.size() - 1.
  // Adds limit to query_tokens() and the tokens returned to hit_tokens().
  std::vector<int32_t> take_prefix(std::span<const int32_t> tokens, size_t limit);

  // After the sequence with block table `table` has written the keys/values of `tokens`
  // (table.size() >= ceil(tokens.size() / block_size)), registers each full block of it not
  // registered yet. Where an identical chain+tokens block is already registered, the
  // sequence's own block stays private (freed normally) and the chain goes on from the
  // registered one. Registered blocks must never be written again by their holders.
  // InvalidArgument if a full block's id is out of range or not held (checked before any
  // change), or if a block already registered holds other tokens than tokens says (found
  // during the walk: the blocks before it may have been registered, correctly).
  // Cheap every step: blocks this chain already registered cost O(1) each.
  void publish(std::span<const int32_t> table, std::span<const int32_t> tokens);

  // Drops one reference from each block of table (a finished or cancelled sequence). A block
  // reaching 0 becomes free: a cached one joins the tail of the LRU list (the blocks of one
  // release in reverse table order), an uncached one becomes a never-used block again.
  // A block with no reference left to drop or an id outside [0, num_blocks) is
  // InvalidArgument and changes nothing.
  void release(std::span<const int32_t> table);
  // The holders of block (id outside [0, num_blocks) is InvalidArgument).
  int32_t ref_count(int32_t block) const;
  // Whether block is registered in the prefix cache (published; its contents are frozen).
  bool cached(int32_t block) const;

  // Cache-hit accounting since construction: tokens asked about (the clamped limits) and
  // tokens found (returned blocks * block_size) by take_prefix.
  uint64_t query_tokens() const { return query_tokens_; }
  uint64_t hit_tokens() const { return hit_tokens_; }

 private:
  static constexpr int32_t kNone = -1;

  void check_id(int32_t b, const char* op) const;
  // The registered block continuing chain `parent` with `block` tokens (hash h), or kNone.
  int32_t lookup(uint64_t h, int32_t parent, std::span<const int32_t> block) const;
  // Walks tokens' full blocks within limit through the cache; the hits in order.
  std::vector<int32_t> walk(std::span<const int32_t> tokens, size_t limit) const;
  bool links_to(int32_t b, int32_t parent) const;
  bool stale(int32_t b) const;
  void register_block(int32_t b, uint64_t h, int32_t parent, std::span<const int32_t> block);
  void unregister(int32_t b);
  void lru_push_back(int32_t b);
  void lru_unlink(int32_t b);

  int64_t num_blocks_;
  int64_t block_size_;
  std::vector<int32_t> ref_;
  // Never-used (or uncached, released) blocks, a stack; back() is handed out next.
  std::vector<int32_t> fresh_;
  // The intrusive LRU list of free cached blocks; index num_blocks_ is the sentinel, so the
  // list's head (the next to evict) is next_[num_blocks_]. prev_ == kNone: not linked.
  std::vector<int32_t> prev_, next_;
  int64_t lru_size_ = 0;
  // What each block is registered as (meaningful while registered_): its chain hash, its
  // parent and the parent's generation at registration, and its tokens (tokens_ holds
  // block_size entries per block). gen_ is bumped whenever a block leaves the cache, so
  // children registered under its old contents stop matching when its id is reused.
  std::vector<char> registered_;
  std::vector<uint64_t> hash_;
  std::vector<int32_t> parent_;
  std::vector<uint64_t> parent_gen_;
  std::vector<uint64_t> gen_;
  std::vector<int32_t> tokens_;
  std::unordered_map<uint64_t, int32_t> map_;  // chain hash -> registered block
  int64_t cached_ = 0;
  uint64_t query_tokens_ = 0;
  uint64_t hit_tokens_ = 0;
};

}  // namespace wick::models
