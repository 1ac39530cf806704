// Layout and Shape: contiguity, the view operations, reshape without copies (PyTorch's
// computeStride rule), -1 inference, dim collapsing for kernels, and overflow checks.
#include <gtest/gtest.h>

#include "support/golden.h"
#include "wick/layout.h"
#include "wick/shape.h"

namespace wick {
namespace {

using Strides = std::vector<int64_t>;

TEST(Shape, NumelAndChecks) {
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape{}.numel(), 1);  // rank 0: a scalar
  EXPECT_EQ(Shape({3, 0}).numel(), 0);
  EXPECT_EQ(Shape({2, 3}).dim(-1), 3);
  EXPECT_WICK_ERROR(Shape({2, -1}), InvalidArgument, "non-negative");
  EXPECT_WICK_ERROR(Shape({int64_t(1) << 32, int64_t(1) << 32}).numel(), InvalidArgument, "overflows");
  EXPECT_WICK_ERROR(checked_mul(INT64_MAX, 2, "myop"), InvalidArgument, "myop: size");
  EXPECT_WICK_ERROR(Shape({2, 3}).dim(2), IndexOutOfRange, "dim 2 out of range for a tensor of rank 2");
  EXPECT_WICK_ERROR(normalize_dim(-3, 2, "sum"), IndexOutOfRange, "sum: dim -3");
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes({3, 1}, {4}, "add"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}, "add"), (Shape{2, 2}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 5}, "add"), (Shape{0, 5}));
  EXPECT_WICK_ERROR(broadcast_shapes({2, 3}, {4}, "add"), ShapeMismatch, "add: shapes [2, 3] and [4]");
}

TEST(Layout, ContiguousStridesAndContiguity) {
  const Layout l(Shape{2, 3, 4});
  EXPECT_EQ(l.strides(), (Strides{12, 4, 1}));
  EXPECT_TRUE(l.is_contiguous());
  EXPECT_EQ(l.storage_extent(), 24);
  EXPECT_TRUE(Layout(Shape{}).is_contiguous());
  EXPECT_TRUE(Layout(Shape{1, 3}, {99, 1}, 0).is_contiguous());  // size-1 dims: any stride
  EXPECT_TRUE(Layout(Shape{0, 3}, {7, 5}, 0).is_contiguous());   // empty: nothing to lay out
  EXPECT_FALSE(Layout(Shape{2, 3}, {1, 2}, 0).is_contiguous());
  EXPECT_EQ(Layout(Shape{0, 3}, {7, 5}, 3).storage_extent(), 0);
  EXPECT_EQ(Layout(Shape{2, 3}, {1, 2}, 5).storage_extent(), 5 + 1 + 4 + 1);
  EXPECT_EQ(Layout::contiguous_strides(Shape{2, 0, 3}), (Strides{3, 3, 1}));
  EXPECT_WICK_ERROR(Layout(Shape{2}, {1, 1}, 0), InvalidArgument, "2 strides for shape [2]");
  EXPECT_WICK_ERROR(Layout(Shape{2}, {-1}, 0), InvalidArgument, "negative stride -1");
  EXPECT_WICK_ERROR(Layout(Shape{2}, {1}, -1), InvalidArgument, "negative offset");
}

TEST(Layout, TransposePermute) {
  const Layout l(Shape{2, 3, 4});
  const Layout t = l.transpose(0, -1);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Strides{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.transpose(0, 2), l);
  const Layout p = l.permute({1, 2, 0});
  EXPECT_EQ(p.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(p.strides(), (Strides{4, 1, 12}));
  EXPECT_WICK_ERROR(l.permute({0, 1}), InvalidArgument, "permute: 2 dims given for a tensor of rank 3");
  EXPECT_WICK_ERROR(l.permute({0, 1, 1}), InvalidArgument, "permute: dim 1 repeated");
  EXPECT_WICK_ERROR(l.permute({0, 1, 3}), IndexOutOfRange, "permute: dim 3");
  EXPECT_WICK_ERROR(l.transpose(0, 3), IndexOutOfRange, "transpose: dim 3");
}

TEST(Layout, Narrow) {
  const Layout l(Shape{4, 5});
  const Layout n = l.narrow(1, 2, 3);
  EXPECT_EQ(n.shape(), (Shape{4, 3}));
  EXPECT_EQ(n.strides(), (Strides{5, 1}));
  EXPECT_EQ(n.offset(), 2);
  EXPECT_FALSE(n.is_contiguous());
  EXPECT_EQ(l.narrow(0, 1, 2).offset(), 5);
  EXPECT_TRUE(l.narrow(0, 1, 2).is_contiguous());
  EXPECT_EQ(l.narrow(0, 4, 0).shape(), (Shape{0, 5}));  // empty at the end is allowed
  EXPECT_WICK_ERROR(l.narrow(1, 3, 3), IndexOutOfRange, "narrow: range [3, 3 + 3) out of bounds for dim 1 of size 5");
  EXPECT_WICK_ERROR(l.narrow(1, -1, 1), IndexOutOfRange, "narrow");
  EXPECT_WICK_ERROR(l.narrow(0, 1, INT64_MAX), IndexOutOfRange, "narrow");  // no overflow in start + length
}

TEST(Layout, BroadcastAs) {
  const Layout l(Shape{3, 1});
  const Layout b = l.broadcast_as(Shape{2, 3, 4});
  EXPECT_EQ(b.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(b.strides(), (Strides{0, 1, 0}));
  EXPECT_EQ(b.storage_extent(), 3);
  EXPECT_EQ(Layout(Shape{}).broadcast_as(Shape{2, 2}).strides(), (Strides{0, 0}));
  EXPECT_WICK_ERROR(l.broadcast_as(Shape{3, 2, 4}), ShapeMismatch,
                    "broadcast_as: cannot broadcast shape [3, 1] to [3, 2, 4]");
  EXPECT_WICK_ERROR(l.broadcast_as(Shape{4}), ShapeMismatch, "cannot broadcast shape [3, 1] to [4]");
}

TEST(Layout, SqueezeUnsqueeze) {
  const Layout l(Shape{1, 3, 1, 2});
  EXPECT_EQ(l.squeeze(0).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(l.squeeze(1).shape(), l.shape());  // not size 1: unchanged, as in PyTorch
  EXPECT_EQ(l.squeeze_all().shape(), (Shape{3, 2}));
  EXPECT_EQ(l.squeeze_all().strides(), (Strides{2, 1}));
  EXPECT_EQ(Layout(Shape{1, 1}).squeeze_all().shape(), Shape{});
  const Layout u = Layout(Shape{3, 2}).unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(u.strides(), (Strides{2, 2, 1}));
  EXPECT_TRUE(u.is_contiguous());
  EXPECT_EQ(Layout(Shape{3, 2}).unsqueeze(-1).shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(Layout(Shape{}).unsqueeze(0).shape(), (Shape{1}));
  EXPECT_WICK_ERROR(Layout(Shape{3, 2}).unsqueeze(3), IndexOutOfRange, "unsqueeze: dim 3");
  EXPECT_WICK_ERROR(l.squeeze(4), IndexOutOfRange, "squeeze: dim 4");
}

// PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp) on the cases its tests and
// docs use; every expected stride is what torch.Tensor.view gives (torch 1.13).
TEST(Layout, ReshapeViewFollowsComputeStride) {
  // Contiguous: always a view.
  EXPECT_EQ(Layout(Shape{2, 3, 4}).reshape_view(Shape{6, 4})->strides(), (Strides{4, 1}));
  // Transposed [3, 2] (strides [1, 3]): merging the dims needs a copy...
  const Layout t = Layout(Shape{2, 3}).transpose(0, 1);
  EXPECT_FALSE(t.reshape_view(Shape{6}).has_value());
  // ...but inserting size-1 dims does not.
  const auto t1 = t.reshape_view(Shape{3, 1, 2});
  ASSERT_TRUE(t1.has_value());
  EXPECT_EQ(t1->strides(), (Strides{1, 6, 3}));
  // x = arange(24).view(2,3,4).transpose(1,2) -> [2,4,3] strides [12,1,4]; splitting the
  // first dim is fine: view(1,2,4,3) strides [24,12,1,4].
  const Layout x = Layout(Shape{2, 3, 4}).transpose(1, 2);
  EXPECT_EQ(x.reshape_view(Shape{1, 2, 4, 3})->strides(), (Strides{24, 12, 1, 4}));
  EXPECT_FALSE(x.reshape_view(Shape{2, 12}).has_value());
  EXPECT_FALSE(x.reshape_view(Shape{8, 3}).has_value());
  // Narrowed rows keep row chunks: [4,5] narrow(1,0,3) -> [4,3] strides [5,1]:
  // view(2,2,3) is a view (strides [10,5,1]); view(12) is not.
  const Layout n = Layout(Shape{4, 5}).narrow(1, 0, 3);
  EXPECT_EQ(n.reshape_view(Shape{2, 2, 3})->strides(), (Strides{10, 5, 1}));
  EXPECT_FALSE(n.reshape_view(Shape{12}).has_value());
  // Narrowed columns of a [4, 6] matrix seen as [4, 2, 3] keep the offset.
  const Layout m = Layout(Shape{6, 4}).narrow(0, 2, 4);
  const auto mv = m.reshape_view(Shape{2, 2, 4});
  EXPECT_EQ(mv->offset(), 8);
  EXPECT_EQ(mv->strides(), (Strides{8, 4, 1}));
  // Broadcast (stride 0) dims can be split but not merged with others.
  const Layout b = Layout(Shape{1, 4}).broadcast_as(Shape{6, 4});
  EXPECT_EQ(b.reshape_view(Shape{2, 3, 4})->strides(), (Strides{0, 0, 1}));
  EXPECT_FALSE(b.reshape_view(Shape{24}).has_value());
  // Empty tensors reshape freely.
  EXPECT_TRUE(Layout(Shape{0, 3}, {1, 7}, 0).reshape_view(Shape{3, 0}).has_value());
  EXPECT_WICK_ERROR(Layout(Shape{2, 3}).reshape_view(Shape{5}), ShapeMismatch,
                    "cannot reshape [2, 3] (6 elements) to [5] (5 elements)");
}

TEST(Layout, InferShape) {
  EXPECT_EQ(infer_shape({-1, 4}, 12, "reshape"), (Shape{3, 4}));
  EXPECT_EQ(infer_shape({2, -1, 2}, 12, "reshape"), (Shape{2, 3, 2}));
  EXPECT_EQ(infer_shape({-1}, 0, "reshape"), (Shape{0}));
  EXPECT_EQ(infer_shape({}, 1, "reshape"), Shape{});
  EXPECT_WICK_ERROR(infer_shape({-1, -1}, 4, "reshape"), InvalidArgument, "only one dimension can be -1");
  EXPECT_WICK_ERROR(infer_shape({-1, 5}, 12, "view"), ShapeMismatch, "view: cannot infer the -1 dimension for 12");
  EXPECT_WICK_ERROR(infer_shape({-1, 0}, 0, "reshape"), ShapeMismatch, "cannot infer");
  EXPECT_WICK_ERROR(infer_shape({-2, 3}, 6, "reshape"), InvalidArgument, "invalid size -2");
  EXPECT_WICK_ERROR(infer_shape({5}, 6, "reshape"), ShapeMismatch, "shape [5] has 5 elements, the tensor has 6");
  EXPECT_WICK_ERROR(infer_shape({int64_t(1) << 40, int64_t(1) << 40, -1}, 6, "reshape"), InvalidArgument, "overflows");
}

TEST(Layout, CollapseDims) {
  // Contiguous: one dim.
  const Shape s{2, 3, 4};
  const Strides c = Layout::contiguous_strides(s);
  auto r = collapse_dims(s, {&c});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{24}));
  EXPECT_EQ(r.strides[0], (Strides{1}));
  // Transposed last two dims: the leading dim merges with nothing.
  const Strides t{12, 1, 4};  // [2, 4, 3] view of [2, 3, 4]
  r = collapse_dims(Shape{2, 4, 3}, {&t});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 4, 3}));
  // Two operands: merge only where both are contiguous across the boundary.
  const Strides a{12, 4, 1}, bcast{0, 0, 1};
  r = collapse_dims(s, {&a, &bcast});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(r.strides[0], (Strides{4, 1}));
  EXPECT_EQ(r.strides[1], (Strides{0, 1}));
  // Size-1 dims drop out; all-ones collapses to rank 0.
  const Strides one{5, 1, 1};
  r = collapse_dims(Shape{1, 3, 1}, {&one});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{3}));
  r = collapse_dims(Shape{1, 1}, {&one});
  EXPECT_TRUE(r.shape.empty());
}

TEST(Layout, ElementCountOverflow) {
  EXPECT_WICK_ERROR(Layout(Shape{int64_t(1) << 62, 4}), InvalidArgument, "overflows");
  EXPECT_WICK_ERROR(Layout(Shape{int64_t(1) << 62, 8}).numel(), InvalidArgument, "overflows");
}

}  // namespace
}  // namespace wick
