// models::BlockPool: allocation counts, exact prefix hits (limits, chains, duplicates),
// LRU eviction order, refusals that change nothing, and ids reused after eviction no longer
// matching, on small hand-derived cases; then random admit/write/publish/finish traffic
// against a reference model that knows what every block really holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "support/thrown.h"
#include "wick/error.h"
#include "wick/models/block_pool.h"

namespace wick {
namespace {

using models::BlockPool;
using Ids = std::vector<int32_t>;
using Toks = std::vector<int32_t>;

TEST(BlockPool, ConstructorRejectsBadSizes) {
  EXPECT_THROW(BlockPool(0, 4), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
  EXPECT_EQ(test::thrown_kind([] { BlockPool(-1, 4); }), ErrorKind::InvalidArgument);
}

TEST(BlockPool, AllocateAndReleaseCount) {
  BlockPool p(4, 2);
  EXPECT_EQ(p.num_blocks(), 4);
  EXPECT_EQ(p.block_size(), 2);
  EXPECT_EQ(p.free_blocks(), 4);
  auto a = p.allocate(3);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (Ids{0, 1, 2}));
  EXPECT_EQ(p.free_blocks(), 1);
  EXPECT_EQ(p.used_blocks(), 3);
  EXPECT_EQ(p.ref_count(1), 1);
  EXPECT_EQ(p.ref_count(3), 0);
  EXPECT_EQ(*p.allocate(0), Ids{});
  EXPECT_EQ(test::thrown_kind([&] { (void)p.allocate(-1); }), ErrorKind::InvalidArgument);
  p.release(*a);
  EXPECT_EQ(p.free_blocks(), 4);
  EXPECT_EQ(p.used_blocks(), 0);
  EXPECT_EQ(p.cached_blocks(), 0);
}

TEST(BlockPool, TakePrefixReturnsPublishedBlocks) {
  BlockPool p(8, 2);
  const Toks t{1, 2, 3, 4, 5};
  auto a = *p.allocate(3);  // {0, 1, 2}: two full blocks and a partial one
  p.publish(a, t);
  EXPECT_EQ(p.cached_blocks(), 2);
  p.publish(a, t);  // again: nothing new
  EXPECT_EQ(p.cached_blocks(), 2);

  EXPECT_EQ(p.cached_prefix_blocks(t), 2);
  EXPECT_EQ(p.cached_prefix_blocks(t, 4), 2);                 // block 1 is [2, 4): inside
  EXPECT_EQ(p.cached_prefix_blocks(t, 3), 1);                 // block 1 is cut by the limit
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2, 3, 4}, 3), 1);  // size - 1 excludes the last full block
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2, 3, 9}), 1);     // block 1 differs
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 9, 3, 4}), 0);     // block 0 differs
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1}), 0);

  const Ids got = p.take_prefix(t, t.size());
  EXPECT_EQ(got, (Ids{0, 1}));
  EXPECT_EQ(p.ref_count(0), 2);
  EXPECT_EQ(p.ref_count(1), 2);
  EXPECT_EQ(p.ref_count(2), 1);
  EXPECT_EQ(p.take_prefix(Toks{1, 2, 3, 4}, 3), (Ids{0}));
  EXPECT_EQ(p.ref_count(0), 3);
  EXPECT_EQ(p.query_tokens(), 5u + 3u);
  EXPECT_EQ(p.hit_tokens(), 4u + 2u);

  // Taking from free cached blocks moves them off the free list.
  p.release(a);
  p.release(got);
  p.release(Ids{0});
  EXPECT_EQ(p.free_blocks(), 8);
  EXPECT_EQ(p.cached_blocks(), 2);
  EXPECT_EQ(p.take_prefix(t, 4), (Ids{0, 1}));
  EXPECT_EQ(p.free_blocks(), 6);
  EXPECT_EQ(p.used_blocks(), 2);
}

TEST(BlockPool, ChainsKeyOnTheWholePrefix) {
  BlockPool p(8, 2);
  auto a = *p.allocate(2), b = *p.allocate(2);
  p.publish(a, Toks{1, 2, 3, 4});
  p.publish(b, Toks{5, 6, 7, 8});
  EXPECT_EQ(p.cached_blocks(), 4);
  // {3, 4} is cached, but only after {1, 2}.
  EXPECT_EQ(p.cached_prefix_blocks(Toks{5, 6, 3, 4}), 1);
  EXPECT_EQ(p.take_prefix(Toks{5, 6, 3, 4}, 4), (Ids{b[0]}));
  EXPECT_EQ(p.cached_prefix_blocks(Toks{3, 4}), 0);  // not a root block either
}

TEST(BlockPool, EvictsTailFirstAndOlderReleasesFirst) {
  BlockPool p(5, 1);
  auto a = *p.allocate(3);  // {0, 1, 2}
  p.publish(a, Toks{10, 11, 12});
  p.release(a);             // LRU: 2, 1, 0
  auto b = *p.allocate(2);  // never-used blocks first
  EXPECT_EQ(b, (Ids{3, 4}));
  EXPECT_EQ(p.cached_blocks(), 3);
  p.publish(b, Toks{20, 21});
  p.release(b);  // LRU: 2, 1, 0, 4, 3
  EXPECT_EQ(p.free_blocks(), 5);
  EXPECT_EQ(p.cached_blocks(), 5);

  EXPECT_EQ(*p.allocate(1), (Ids{2}));
  EXPECT_EQ(p.cached_blocks(), 4);
  EXPECT_EQ(p.cached_prefix_blocks(Toks{10, 11, 12}), 2);
  EXPECT_EQ(*p.allocate(2), (Ids{1, 0}));
  EXPECT_EQ(p.cached_prefix_blocks(Toks{10, 11, 12}), 0);
  EXPECT_EQ(p.cached_prefix_blocks(Toks{20, 21}), 2);
  EXPECT_EQ(*p.allocate(1), (Ids{4}));
  EXPECT_EQ(p.cached_prefix_blocks(Toks{20, 21}), 1);
  EXPECT_EQ(p.cached_blocks(), 1);
  // Uncached blocks come back as never-used ones, handed out before the cached block 3.
  p.release(Ids{2, 1, 0, 4});
  EXPECT_EQ(p.free_blocks(), 5);
  EXPECT_EQ(*p.allocate(4), (Ids{2, 1, 0, 4}));  // a stack: the last released first
  EXPECT_EQ(p.cached_prefix_blocks(Toks{20, 21}), 1);
}

TEST(BlockPool, AllocateShortChangesNothing) {
  BlockPool p(3, 1);
  auto a = *p.allocate(3);
  p.publish(a, Toks{1, 2, 3});
  p.release(Ids{a[2]});
  EXPECT_FALSE(p.allocate(2));
  EXPECT_EQ(p.free_blocks(), 1);
  EXPECT_EQ(p.cached_blocks(), 3);
  p.release(Ids{a[0], a[1]});
  EXPECT_FALSE(p.allocate(4));
  EXPECT_EQ(p.free_blocks(), 3);
  EXPECT_EQ(p.cached_blocks(), 3);
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2, 3}), 3);
}

TEST(BlockPool, BadReleaseAndPublishChangeNothing) {
  BlockPool p(4, 1);
  auto a = *p.allocate(2);                                                                  // {0, 1}
  EXPECT_EQ(test::thrown_kind([&] { p.release(Ids{0, 0}); }), ErrorKind::InvalidArgument);  // one reference
  EXPECT_THROW(p.release(Ids{1, 7}), Error);
  EXPECT_THROW(p.release(Ids{0, -1}), Error);
  EXPECT_THROW(p.release(Ids{0, 2}), Error);  // 2 was never allocated
  EXPECT_EQ(p.ref_count(0), 1);
  EXPECT_EQ(p.ref_count(1), 1);
  EXPECT_EQ(p.free_blocks(), 2);
  EXPECT_THROW((void)p.ref_count(4), Error);
  EXPECT_THROW((void)p.ref_count(-1), Error);

  EXPECT_EQ(test::thrown_kind([&] { p.publish(Ids{0, 3}, Toks{5, 6}); }), ErrorKind::InvalidArgument);  // 3 free
  EXPECT_THROW(p.publish(Ids{0}, Toks{5, 6}), Error);  // table too short
  EXPECT_THROW(p.publish(Ids{0, 9}, Toks{5, 6}), Error);
  EXPECT_EQ(p.cached_blocks(), 0);

  p.release(a);
  EXPECT_EQ(test::thrown_kind([&] { p.release(Ids{0}); }), ErrorKind::InvalidArgument);  // double free
  EXPECT_EQ(p.free_blocks(), 4);
}

TEST(BlockPool, SecondIdenticalPublishKeepsTheFirst) {
  BlockPool p(8, 2);
  const Toks t{1, 2, 3, 4};
  auto a = *p.allocate(2);  // {0, 1}
  auto b = *p.allocate(3);  // {2, 3, 4}: the same prefix computed again, plus a block
  p.publish(a, t);
  const Toks u{1, 2, 3, 4, 5, 6};
  p.publish(b, u);
  // b's first two blocks stay private; its third follows a's chain.
  EXPECT_EQ(p.cached_blocks(), 3);
  EXPECT_EQ(p.take_prefix(u, u.size()), (Ids{0, 1, 4}));
  p.publish(b, u);
  EXPECT_EQ(p.cached_blocks(), 3);
  // b's private blocks are freed as never-used ones.
  p.release(b);
  EXPECT_EQ(p.ref_count(4), 1);
  EXPECT_EQ(*p.allocate(2), (Ids{2, 3}));
  EXPECT_EQ(p.cached_blocks(), 3);
}

TEST(BlockPool, EvictedBlocksAndTheirChildrenNoLongerMatch) {
  BlockPool p(4, 1);
  auto a = *p.allocate(2);  // {0, 1}
  p.publish(a, Toks{1, 2});
  p.release(Ids{0});
  p.release(Ids{1});        // LRU: 0, 1
  auto x = *p.allocate(3);  // 2, 3, then evicts the root 0
  EXPECT_EQ(x, (Ids{2, 3, 0}));
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2}), 0);
  EXPECT_EQ(p.cached_blocks(), 1);  // 1 stays registered, unreachable
  p.release(Ids{2, 3});

  // Block 0 now holds {1} again, but block 1 was computed after the old block 0.
  EXPECT_THROW(p.publish(Ids{0, 2}, Toks{1, 7}), Error);  // 2 is not held
  EXPECT_EQ(p.cached_blocks(), 1);
  auto c2 = *p.allocate(1);
  EXPECT_EQ(c2, (Ids{2}));
  p.publish(Ids{0, 2}, Toks{1, 7});
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 7}), 2);
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2}), 1);

  // A new {1, 2} chain replaces the stale child 1, which becomes a never-used block.
  auto d = p.take_prefix(Toks{1, 2}, 2);
  EXPECT_EQ(d, (Ids{0}));
  auto d2 = *p.allocate(1);
  EXPECT_EQ(d2, (Ids{3}));
  d.push_back(d2[0]);
  p.publish(d, Toks{1, 2});
  EXPECT_EQ(p.cached_prefix_blocks(Toks{1, 2}), 2);
  EXPECT_EQ(p.cached_blocks(), 3);  // 0, 2, 3
  EXPECT_EQ(p.free_blocks(), 1);
  EXPECT_EQ(*p.allocate(1), (Ids{1}));
  EXPECT_EQ(p.cached_blocks(), 3);
}

// Random traffic against a reference model. Tokens come from {0, 1, 2} and prompts share
// prefixes often, so hits, duplicates, evictions and reused ids are all common.
struct Seq {
  Ids table;
  Toks tokens;     // the whole sequence, known at admission
  size_t written;  // positions whose keys/values are in the cache
  size_t shared;   // blocks taken from the cache
};

void run_random(uint32_t seed, int64_t num_blocks, int64_t bs, int ops) {
  SCOPED_TRACE(testing::Message() << "seed " << seed << " blocks " << num_blocks << " bs " << bs);
  std::mt19937 rng(seed);
  auto uni = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  BlockPool p(num_blocks, bs);
  const size_t b = size_t(bs);
  // What each block really holds: the chain of tokens [0, end) its owner wrote into it
  // (end - start < b while partly written); empty: garbage.
  std::map<int32_t, Toks> holds;
  std::vector<Seq> live;
  uint64_t queries = 0, hits = 0;
  // A few base prompts, so prefixes repeat beyond what the alphabet gives.
  std::vector<Toks> bases;
  for (int i = 0; i < 4; ++i) {
    Toks t(uni(1, 5 * b));
    for (auto& x : t) x = int32_t(uni(0, 2));
    bases.push_back(t);
  }

  auto check = [&] {
    std::vector<int32_t> refs(size_t(num_blocks), 0);
    for (const Seq& s : live) {
      std::set<int32_t> seen(s.table.begin(), s.table.end());
      ASSERT_EQ(seen.size(), s.table.size()) << "a block twice in one table";
      for (int32_t id : s.table) ++refs[size_t(id)];
    }
    for (int32_t id = 0; id < num_blocks; ++id) ASSERT_EQ(p.ref_count(id), refs[size_t(id)]) << "block " << id;
    ASSERT_EQ(p.used_blocks(), int64_t(num_blocks - std::count(refs.begin(), refs.end(), 0)));
    ASSERT_EQ(p.free_blocks() + p.used_blocks(), num_blocks);
    ASSERT_LE(p.cached_blocks(), num_blocks);
    ASSERT_EQ(p.query_tokens(), queries);
    ASSERT_EQ(p.hit_tokens(), hits);
    ASSERT_LE(hits, queries);
  };

  for (int op = 0; op < ops; ++op) {
    if (testing::Test::HasFatalFailure()) return;
    const size_t kind = live.empty() ? 0 : uni(0, 9);
    if (kind <= 2) {  // admit
      Seq s;
      const Toks& base = bases[uni(0, bases.size() - 1)];
      s.tokens.assign(base.begin(), base.begin() + ptrdiff_t(uni(0, base.size())));
      while (s.tokens.size() < 1 || uni(0, 2) == 0) {
        if (s.tokens.size() >= 5 * b) break;
        s.tokens.push_back(int32_t(uni(0, 2)));
      }
      const size_t limit = s.tokens.size() - 1;
      const int64_t expect = p.cached_prefix_blocks(s.tokens, limit);
      Ids got = p.take_prefix(s.tokens, limit);
      queries += limit;
      hits += got.size() * b;
      ASSERT_EQ(int64_t(got.size()), expect);
      ASSERT_LE(got.size() * b, limit);
      for (size_t i = 0; i < got.size(); ++i) {
        const Toks want(s.tokens.begin(), s.tokens.begin() + ptrdiff_t((i + 1) * b));
        ASSERT_EQ(holds[got[i]], want) << "hit " << i << " is block " << got[i];
      }
      const size_t need = (s.tokens.size() + b - 1) / b - got.size();
      const int64_t free_before = p.free_blocks();
      auto fresh = p.allocate(int64_t(need));
      if (!fresh) {
        ASSERT_LT(free_before, int64_t(need));
        p.release(got);
        check();
        continue;
      }
      for (int32_t id : *fresh) holds[id].clear();  // contents unspecified
      s.table = got;
      s.table.insert(s.table.end(), fresh->begin(), fresh->end());
      s.shared = got.size();
      s.written = got.size() * b;
      live.push_back(std::move(s));
    } else if (kind <= 5) {  // write some positions (the shared blocks are never written)
      Seq& s = live[uni(0, live.size() - 1)];
      s.written = uni(s.written, s.tokens.size());
      for (size_t i = s.shared; i * b < s.written; ++i) {
        const size_t end = std::min(s.written, (i + 1) * b);
        holds[s.table[i]].assign(s.tokens.begin(), s.tokens.begin() + ptrdiff_t(end));
      }
    } else if (kind <= 7) {  // publish what is written
      const Seq& s = live[uni(0, live.size() - 1)];
      const std::span<const int32_t> done(s.tokens.data(), s.written);
      p.publish(s.table, done);
      // Every full written block is now findable: its own or an identical one.
      ASSERT_EQ(p.cached_prefix_blocks(done), int64_t(s.written / b));
    } else {  // finish
      const size_t i = uni(0, live.size() - 1);
      p.release(live[i].table);
      live.erase(live.begin() + ptrdiff_t(i));
    }
    check();
  }
  if (testing::Test::HasFatalFailure()) return;
  for (const Seq& s : live) p.release(s.table);
  live.clear();
  check();
  EXPECT_EQ(p.free_blocks(), num_blocks);
  EXPECT_EQ(p.used_blocks(), 0);
  EXPECT_GT(hits, 0u);
}

TEST(BlockPool, RandomTrafficMatchesReferenceModel) {
  const struct {
    uint32_t seed;
    int64_t blocks, bs;
  } cases[] = {{1, 6, 2}, {2, 12, 2}, {3, 9, 3}, {4, 20, 4}, {5, 4, 2}, {6, 16, 3}, {7, 40, 2}, {8, 10, 4}};
  for (const auto& c : cases) {
    run_random(c.seed, c.blocks, c.bs, 4000);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace wick
