// Aliasing rules of the in-place ops (docs/ops.md, "Aliasing rules for in-place ops"):
// a destination with internal overlap is refused; an input that overlaps the destination
// in another layout is read through a temporary, so every in-place op gives what its
// out-of-place form gives; disjoint parts of one storage are independent. The in-place
// ops of the API: Tensor::copy_, fill_, zero_ and index_copy_.
#include <gtest/gtest.h>

#include <numeric>

#include "core/overlap.h"
#include "support/devices.h"
#include "support/golden.h"
#include "wick/wick.h"

namespace wick {
namespace {

using I = std::vector<int64_t>;

class Aliasing : public test::DeviceTest {
 protected:
  // 0, 1, ..., n-1 in dtype dt on the test's device, with shape.
  Tensor iota(Shape shape, DType dt = DType::F32) const {
    return arange(shape.numel(), DType::I64).reshape(shape).to(dt).to(dev());
  }
  Tensor ints(const I& v) const { return Tensor::from_vector(v).to(dev()); }
};

// The values of an n x n iota after copy_ of its own transpose: row r is column r.
I transposed_iota(int64_t n) {
  I want(size_t(n * n));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) want[size_t(r * n + c)] = c * n + r;
  return want;
}

TEST_P(Aliasing, CopyOfOwnTransposeGivesTheTranspose) {
  for (DType dt : {DType::F32, DType::I64, DType::BF16, DType::U8}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = iota({3, 3}, dt);
    a.copy_(a.t());
    EXPECT_EQ(a.to_vector<int64_t>(), (I{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  }
  // Large enough for the parallel CPU loop and many CUDA blocks.
  Tensor big = iota({128, 128}, DType::I64);
  big.copy_(big.t());
  EXPECT_EQ(big.to_vector<int64_t>(), transposed_iota(128));
}

TEST_P(Aliasing, ShiftedNarrowsReadTheOldValues) {
  const int64_t n = 100000;  // a naive forward loop would smear element 0 over all of it
  Tensor a = iota({n}, DType::I64);
  a.narrow(0, 1, n - 1).copy_(a.narrow(0, 0, n - 1));
  I want(static_cast<size_t>(n));
  std::iota(want.begin() + 1, want.end(), int64_t(0));
  EXPECT_EQ(a.to_vector<int64_t>(), want);
  // The other direction, and 2-D rows shifted by one.
  Tensor b = iota({6}, DType::I64);
  b.narrow(0, 0, 5).copy_(b.narrow(0, 1, 5));
  EXPECT_EQ(b.to_vector<int64_t>(), (I{1, 2, 3, 4, 5, 5}));
  Tensor m = iota({3, 2}, DType::F32);
  m.narrow(0, 1, 2).copy_(m.narrow(0, 0, 2));
  EXPECT_EQ(m.to_vector<int64_t>(), (I{0, 1, 0, 1, 2, 3}));
}

TEST_P(Aliasing, BroadcastSourceFromTheDestination) {
  Tensor a = iota({3, 3}, DType::F32);
  a.copy_(a.select(0, 1));  // every row becomes the old row 1
  EXPECT_EQ(a.to_vector<int64_t>(), (I{3, 4, 5, 3, 4, 5, 3, 4, 5}));
  Tensor b = iota({3, 3}, DType::F32);
  b.copy_(b.select(1, 2).unsqueeze(0));  // every row becomes the old column 2
  EXPECT_EQ(b.to_vector<int64_t>(), (I{2, 5, 8, 2, 5, 8, 2, 5, 8}));
}

TEST_P(Aliasing, CopyOntoItselfChangesNothing) {
  Tensor a = iota({4, 5}, DType::F32);
  a.copy_(a);
  a.t().copy_(a.t());
  a.narrow(1, 1, 3).copy_(a.narrow(1, 1, 3));
  I want(20);
  std::iota(want.begin(), want.end(), int64_t(0));
  EXPECT_EQ(a.to_vector<int64_t>(), want);
}

TEST_P(Aliasing, DisjointPartsOfOneStorageCopyCorrectly) {
  Tensor a = iota({8}, DType::I64);
  a.narrow(0, 0, 4).copy_(a.narrow(0, 4, 4));
  EXPECT_EQ(a.to_vector<int64_t>(), (I{4, 5, 6, 7, 4, 5, 6, 7}));
  Tensor m = iota({4, 3}, DType::F32);  // bottom half into the top half
  m.narrow(0, 0, 2).copy_(m.narrow(0, 2, 2));
  EXPECT_EQ(m.to_vector<int64_t>(), (I{6, 7, 8, 9, 10, 11, 6, 7, 8, 9, 10, 11}));
  // Interleaved: odd columns into even columns (proved disjoint, no temporary).
  Tensor c = iota({2, 4}, DType::F32);
  c.slice(1, 0, 4, 2).copy_(c.slice(1, 1, 4, 2));
  EXPECT_EQ(c.to_vector<int64_t>(), (I{1, 1, 3, 3, 5, 5, 7, 7}));
}

// Every in-place op of the API, aimed at an expand()ed view: refused, base unchanged.
TEST_P(Aliasing, ExpandedDestinationIsRefusedByEveryInPlaceOp) {
  const Tensor base = iota({3}, DType::F32);
  Tensor e = base.expand(Shape{2, 3});
  const std::string overlap = "maps several indices to one element";
  EXPECT_WICK_ERROR(e.fill_(Scalar(7)), InvalidArgument, "fill_: the destination (shape=[2, 3] strides=[0, 1]");
  EXPECT_WICK_ERROR(e.zero_(), InvalidArgument, overlap);
  EXPECT_WICK_ERROR(e.copy_(ones({2, 3}, DType::F32, dev())), InvalidArgument, "copy_: the destination");
  EXPECT_WICK_ERROR(e.copy_(e), InvalidArgument, overlap);
  EXPECT_WICK_ERROR(index_copy_(e, 1, ints({2, 0}), ones({2, 2}, DType::F32, dev())), InvalidArgument,
                    "index_copy_: the destination");
  EXPECT_WICK_ERROR(index_copy_(e, 0, ints({1}), ones({1, 3}, DType::F32, dev())), InvalidArgument, overlap);
  // Broadcast through a size-1 dim of the view, then transposed: still refused.
  EXPECT_WICK_ERROR(base.unsqueeze(1).expand(Shape{3, 4}).t().fill_(Scalar(1)), InvalidArgument, overlap);
  EXPECT_EQ(base.to_vector<int64_t>(), (I{0, 1, 2}));
  // Expanding only size-1 dims to size 1 duplicates nothing.
  Tensor one = base.narrow(0, 2, 1).unsqueeze(0).expand(Shape{1, 1});
  one.fill_(Scalar(9));
  EXPECT_EQ(base.to_vector<int64_t>(), (I{0, 1, 9}));
}

// A hand-made layout whose strides collide is refused; one whose strides do not nest but
// never collide is written element by element.
TEST_P(Aliasing, HandMadeLayouts) {
  const Tensor store = zeros({11}, DType::I64, dev());
  Tensor collide(store.storage(), Layout(Shape{2, 2}, {1, 1}, 0));  // offsets 0 1 1 2
  EXPECT_WICK_ERROR(collide.fill_(Scalar(1)), InvalidArgument, "fill_: the destination");
  EXPECT_EQ(store.to_vector<int64_t>(), I(11, 0));
  Tensor distinct(store.storage(), Layout(Shape{3, 3}, {2, 3}, 0));  // offsets 0 3 6 2 5 8 4 7 10
  distinct.copy_(iota({3, 3}, DType::I64));
  EXPECT_EQ(store.to_vector<int64_t>(), (I{0, 0, 3, 1, 6, 4, 2, 7, 5, 0, 8}));
}

TEST_P(Aliasing, IndexCopyReadsAnAliasedSourceBeforeWriting) {
  // dst[idx[i]] = src[i] with src = dst: pairs swap (in index order, the second write
  // would read the value the first one wrote).
  Tensor a = iota({4, 2}, DType::I64);
  index_copy_(a, 0, ints({1, 0, 3, 2}), a);
  EXPECT_EQ(a.to_vector<int64_t>(), (I{2, 3, 0, 1, 6, 7, 4, 5}));
  // src a shifted view of dst along dim 1.
  Tensor b = iota({2, 4}, DType::F32);
  index_copy_(b, 1, ints({1, 2, 3}), b.narrow(1, 0, 3));
  EXPECT_EQ(b.to_vector<int64_t>(), (I{0, 0, 1, 2, 4, 4, 5, 6}));
  // Indices that live in dst itself are read before dst changes.
  Tensor c = ints({1, 0, 7, 7});
  index_copy_(c, 0, c.narrow(0, 0, 2), ints({5, 6}));
  EXPECT_EQ(c.to_vector<int64_t>(), (I{6, 5, 7, 7}));
}

// ---- the overlap tests themselves ------------------------------------------------------------

TEST(AliasingRules, InternalOverlap) {
  using detail::has_internal_overlap;
  EXPECT_FALSE(has_internal_overlap(Layout(Shape{3, 4})));
  EXPECT_FALSE(has_internal_overlap(Layout(Shape{3, 4}).transpose(0, 1)));
  EXPECT_FALSE(has_internal_overlap(Layout(Shape{1, 4}, {0, 1}, 0)));  // stride 0 on a size-1 dim
  EXPECT_FALSE(has_internal_overlap(Layout(Shape{0, 4}, {0, 0}, 0)));  // empty
  EXPECT_TRUE(has_internal_overlap(Layout(Shape{3}).broadcast_as(Shape{2, 3})));
  EXPECT_TRUE(has_internal_overlap(Layout(Shape{2, 2}, {1, 1}, 0)));
  EXPECT_FALSE(has_internal_overlap(Layout(Shape{3, 3}, {2, 3}, 0)));  // not nested, all distinct
  EXPECT_TRUE(has_internal_overlap(Layout(Shape{3, 3}, {2, 4}, 0)));   // (2, 0) and (0, 1)
  // Too large to enumerate and not nested: reported as overlapping.
  EXPECT_TRUE(has_internal_overlap(Layout(Shape{2048, 1024}, {1, 2}, 0)));
}

TEST(AliasingRules, MemoryOverlap) {
  using detail::memory_overlap;
  using detail::Overlap;
  const Tensor a = zeros({4, 6});
  EXPECT_EQ(memory_overlap(a, a), Overlap::Same);
  EXPECT_EQ(memory_overlap(a, a.reshape({6, 4})), Overlap::Partial);  // same bytes, other order
  EXPECT_EQ(memory_overlap(a, a.t()), Overlap::Partial);
  EXPECT_EQ(memory_overlap(a, zeros({4, 6})), Overlap::None);
  EXPECT_EQ(memory_overlap(a.narrow(0, 0, 2), a.narrow(0, 2, 2)), Overlap::None);
  EXPECT_EQ(memory_overlap(a.narrow(0, 0, 3), a.narrow(0, 2, 2)), Overlap::Partial);
  EXPECT_EQ(memory_overlap(a.slice(1, 0, 6, 2), a.slice(1, 1, 6, 2)), Overlap::None);  // even / odd columns
  EXPECT_EQ(memory_overlap(a.slice(1, 0, 6, 3), a.slice(1, 1, 6, 3)), Overlap::None);
  EXPECT_EQ(memory_overlap(a.slice(1, 0, 6, 2), a.narrow(1, 3, 1)), Overlap::None);  // column 3 is odd
  // Left and right column halves are disjoint but interleave with stride gcd 1: reported
  // as Partial, as documented (it costs copy_ a temporary, never a wrong value).
  EXPECT_EQ(memory_overlap(a.narrow(1, 0, 3), a.narrow(1, 3, 3)), Overlap::Partial);
  EXPECT_EQ(memory_overlap(a, zeros({0})), Overlap::None);
}

// Two borrowed views of one host array are different allocations; the check goes by address.
TEST(AliasingRules, BorrowedMemoryIsComparedByAddress) {
  std::vector<int64_t> host = {0, 1, 2, 3, 4, 5};
  Tensor all = Tensor::from_blob(host.data(), DType::I64, Shape{6});
  Tensor tail = Tensor::from_blob(host.data() + 1, DType::I64, Shape{5});
  tail.copy_(all.narrow(0, 0, 5));
  EXPECT_EQ(host, (I{0, 0, 1, 2, 3, 4}));
}

WICK_INSTANTIATE_DEVICE_TEST(Aliasing);

}  // namespace
}  // namespace wick
