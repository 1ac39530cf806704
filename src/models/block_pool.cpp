// BlockPool: block allocation and exact prefix caching over block ids (block_pool.h).
#include "wick/models/block_pool.h"

#include <algorithm>
#include <cstring>

#include "wick/error.h"

namespace wick::models {

namespace {

constexpr uint64_t kRootHash = 0x9e3779b97f4a7c15ull;

// splitmix64's finalizer: every input bit moves every output bit, so chains that differ in
// one token of one block land in unrelated buckets.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The key of a block continuing a chain whose last block has key h. It only finds
// candidates; lookup() confirms them exactly.
uint64_t chain_hash(uint64_t h, std::span<const int32_t> block) {
  for (int32_t t : block) h = mix(h ^ (uint64_t(uint32_t(t)) + 0x632be59bd9b4e019ull));
  return h;
}

}  // namespace

BlockPool::BlockPool(int64_t num_blocks, int64_t block_size) : num_blocks_(num_blocks), block_size_(block_size) {
  WICK_CHECK(num_blocks >= 1 && num_blocks < std::numeric_limits<int32_t>::max(), InvalidArgument,
             "block pool: num_blocks must be in [1, 2^31 - 1), got ", num_blocks);
  WICK_CHECK(block_size >= 1, InvalidArgument, "block pool: block_size must be >= 1, got ", block_size);
  const size_t n = size_t(num_blocks);
  ref_.assign(n, 0);
  fresh_.resize(n);
  for (size_t i = 0; i < n; ++i) fresh_[i] = int32_t(n - 1 - i);  // block 0 handed out first
  prev_.assign(n + 1, kNone);
  next_.assign(n + 1, kNone);
  prev_[n] = next_[n] = int32_t(n);  // the empty list: the sentinel linked to itself
  registered_.assign(n, 0);
  hash_.assign(n, 0);
  parent_.assign(n, kNone);
  parent_gen_.assign(n, 0);
  gen_.assign(n, 0);
  tokens_.assign(n * size_t(block_size), 0);
}

void BlockPool::check_id(int32_t b, const char* op) const {
  WICK_CHECK(b >= 0 && b < num_blocks_, InvalidArgument, "block pool: ", op, " of block ", b, " outside [0, ",
             num_blocks_, ")");
}

int32_t BlockPool::ref_count(int32_t block) const {
  check_id(block, "ref_count");
  return ref_[size_t(block)];
}

bool BlockPool::cached(int32_t block) const {
  check_id(block, "cached");
  return registered_[size_t(block)] != 0;
}

void BlockPool::lru_push_back(int32_t b) {
  const int32_t s = int32_t(num_blocks_), last = prev_[size_t(s)];
  prev_[size_t(b)] = last;
  next_[size_t(b)] = s;
  next_[size_t(last)] = b;
  prev_[size_t(s)] = b;
  ++lru_size_;
}

void BlockPool::lru_unlink(int32_t b) {
  const int32_t p = prev_[size_t(b)], n = next_[size_t(b)];
  next_[size_t(p)] = n;
  prev_[size_t(n)] = p;
  prev_[size_t(b)] = next_[size_t(b)] = kNone;
  --lru_size_;
}

// Whether b is registered as the continuation of parent as parent is now. The root's
// "generation" is always 0.
bool BlockPool::links_to(int32_t b, int32_t parent) const {
  const uint64_t g = parent == kNone ? 0 : gen_[size_t(parent)];
  return parent_[size_t(b)] == parent && parent_gen_[size_t(b)] == g;
}

// A registered block whose parent has left the cache since: no walk from the root can reach
// it, so its map slot may be given to a live block with the same hash.
bool BlockPool::stale(int32_t b) const {
  const int32_t p = parent_[size_t(b)];
  return p != kNone && parent_gen_[size_t(b)] != gen_[size_t(p)];
}

int32_t BlockPool::lookup(uint64_t h, int32_t parent, std::span<const int32_t> block) const {
  const auto it = map_.find(h);
  if (it == map_.end()) return kNone;
  const int32_t b = it->second;
  const int32_t* stored = tokens_.data() + size_t(b) * size_t(block_size_);
  if (!links_to(b, parent) || !std::equal(block.begin(), block.end(), stored)) return kNone;
  return b;
}

std::vector<int32_t> BlockPool::walk(std::span<const int32_t> tokens, size_t limit) const {
  const size_t bs = size_t(block_size_), n = std::min(limit, tokens.size()) / bs;
  std::vector<int32_t> hits;
  int32_t parent = kNone;
  uint64_t h = kRootHash;
  for (size_t i = 0; i < n; ++i) {
    const auto block = tokens.subspan(i * bs, bs);
    h = chain_hash(h, block);
    parent = lookup(h, parent, block);
    if (parent == kNone) break;
    hits.push_back(parent);
  }
  return hits;
}

int64_t BlockPool::cached_prefix_blocks(std::span<const int32_t> tokens, size_t limit) const {
  return int64_t(walk(tokens, limit).size());
}

std::vector<int32_t> BlockPool::take_prefix(std::span<const int32_t> tokens, size_t limit) {
  std::vector<int32_t> hits = walk(tokens, limit);
  for (int32_t b : hits) {
    if (ref_[size_t(b)]++ == 0) lru_unlink(b);  // registered and free: it was on the LRU list
  }
  query_tokens_ += std::min(limit, tokens.size());
  hit_tokens_ += uint64_t(hits.size()) * uint64_t(block_size_);
  return hits;
}

void BlockPool::register_block(int32_t b, uint64_t h, int32_t parent, std::span<const int32_t> block) {
  registered_[size_t(b)] = 1;
  hash_[size_t(b)] = h;
  parent_[size_t(b)] = parent;
  parent_gen_[size_t(b)] = parent == kNone ? 0 : gen_[size_t(parent)];
  std::copy(block.begin(), block.end(), tokens_.begin() + ptrdiff_t(size_t(b) * size_t(block_size_)));
  map_[h] = b;
  ++cached_;
}

// b leaves the cache. The generation bump makes every child registered under b's old
// contents stale, so none can match under b's next registration.
void BlockPool::unregister(int32_t b) {
  map_.erase(hash_[size_t(b)]);
  registered_[size_t(b)] = 0;
  ++gen_[size_t(b)];
  --cached_;
}

std::optional<std::vector<int32_t>> BlockPool::allocate(int64_t n) {
  WICK_CHECK(n >= 0, InvalidArgument, "block pool: allocate of ", n, " blocks");
  if (n > free_blocks()) return std::nullopt;
  std::vector<int32_t> out;
  out.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int32_t b;
    if (!fresh_.empty()) {
      b = fresh_.back();
      fresh_.pop_back();
    } else {
      b = next_[size_t(num_blocks_)];  // the least recently freed cached block
      lru_unlink(b);
      unregister(b);
    }
    ref_[size_t(b)] = 1;
    out.push_back(b);
  }
  return out;
}

void BlockPool::publish(std::span<const int32_t> table, std::span<const int32_t> tokens) {
  const size_t bs = size_t(block_size_), full = tokens.size() / bs;
  WICK_CHECK(table.size() >= (tokens.size() + bs - 1) / bs, InvalidArgument, "block pool: publish of ", tokens.size(),
             " tokens with a table of ", table.size(), " blocks of ", bs);
  for (size_t i = 0; i < full; ++i) {
    check_id(table[i], "publish");
    WICK_CHECK(ref_[size_t(table[i])] > 0, InvalidArgument, "block pool: publish of block ", table[i], " (table entry ",
               i, ") that nobody holds");
  }
  // parent: the registered block holding the chain so far, the sequence's own or (where it
  // computed a block someone registered first) the other one, whose contents are the same.
  int32_t parent = kNone;
  uint64_t h = kRootHash;
  for (size_t i = 0; i < full; ++i) {
    const int32_t b = table[i];
    if (registered_[size_t(b)] && links_to(b, parent)) {  // the steady state: done earlier
      parent = b;
      h = hash_[size_t(b)];
      continue;
    }
    const auto block = tokens.subspan(i * bs, bs);
    h = chain_hash(h, block);
    if (registered_[size_t(b)]) {
      // Registered under an earlier copy of this chain's parent that was evicted since (the
      // parent now registered holds the same tokens, so b's contents still follow it):
      // re-link it. Anything else means b was written after registration.
      const int32_t* stored = tokens_.data() + size_t(b) * bs;
      WICK_CHECK(hash_[size_t(b)] == h && std::equal(block.begin(), block.end(), stored), InvalidArgument,
                 "block pool: publish of block ", b, " (table entry ", i,
                 ") registered with other tokens; registered blocks must not be rewritten");
      parent_[size_t(b)] = parent;
      parent_gen_[size_t(b)] = parent == kNone ? 0 : gen_[size_t(parent)];
      parent = b;
      continue;
    }
    if (const int32_t same = lookup(h, parent, block); same != kNone) {
      parent = same;  // another sequence registered this block first; ours stays private
      continue;
    }
    if (const auto it = map_.find(h); it != map_.end()) {
      const int32_t old = it->second;
      if (!stale(old)) break;  // a true 64-bit collision with a live chain: keep the rest private
      unregister(old);         // unreachable anyway; give its slot to the live chain
      if (ref_[size_t(old)] == 0) {
        lru_unlink(old);
        fresh_.push_back(old);
      }
    }
    register_block(b, h, parent, block);
    parent = b;
  }
}

void BlockPool::release(std::span<const int32_t> table) {
  // First pass drops the references, undoing them all if one is bad, so an error changes
  // nothing (a block listed twice needs two references).
  for (size_t i = 0; i < table.size(); ++i) {
    const int32_t b = table[i];
    if (b < 0 || b >= num_blocks_ || ref_[size_t(b)] == 0) {
      for (size_t j = 0; j < i; ++j) ++ref_[size_t(table[j])];
      check_id(b, "release");
      fail(ErrorKind::InvalidArgument, "block pool: release of block ", b, " (table entry ", i,
           ") that has no reference left");
    }
    --ref_[size_t(b)];
  }
  // Reverse order: the LRU list evicts a sequence's tail before its head. A block listed
  // twice is queued once: fresh ones are marked in prev_ (unused off the LRU list) meanwhile.
  constexpr int32_t kQueued = -2;
  const size_t fresh_before = fresh_.size();
  for (size_t i = table.size(); i-- > 0;) {
    const int32_t b = table[i];
    if (ref_[size_t(b)] != 0 || prev_[size_t(b)] != kNone) continue;  // held, or queued already
    if (registered_[size_t(b)]) {
      lru_push_back(b);
    } else {
      fresh_.push_back(b);
      prev_[size_t(b)] = kQueued;
    }
  }
  for (size_t i = fresh_before; i < fresh_.size(); ++i) prev_[size_t(fresh_[i])] = kNone;
}

}  // namespace wick::models
