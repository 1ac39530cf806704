// Tensor front end: creation, reading values back, conversion and copies, views,
// joining and splitting, random numbers, and printing (checked against PyTorch's own
// formatter).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "support/golden.h"
#include "wick/wick.h"

namespace wick {
namespace {

using F = std::vector<float>;
using I = std::vector<int64_t>;

// ---- creation ------------------------------------------------------------------------------

TEST(TensorCreate, FromVectorAndList) {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(a.dtype(), DType::F32);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(a.to_vector<float>(), (F{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Tensor::from_vector<uint8_t>({7, 8}).shape(), Shape{2});
  EXPECT_EQ(Tensor::from_vector<uint8_t>({7, 8}).dtype(), DType::U8);
  EXPECT_EQ(Tensor::from_list<int64_t>({-1, 2}, Shape{2, 1}).to_vector<int64_t>(), (I{-1, 2}));
  EXPECT_EQ(Tensor::from_list<double>({2.5}, Shape{}).item<double>(), 2.5);
  EXPECT_WICK_ERROR(Tensor::from_vector<float>({1, 2, 3}, Shape{2, 2}), ShapeMismatch,
                    "from_data: 3 values for shape [2, 2] (4 elements)");
}

TEST(TensorCreate, FromBlobBorrowsWithoutCopy) {
  std::vector<float> host = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_blob(host.data(), DType::F32, Shape{3, 2});
  EXPECT_EQ(t.data(), host.data());
  host[5] = 60;  // the tensor sees the caller's memory
  EXPECT_EQ(t.to_vector<float>()[5], 60.0f);
  t.narrow(0, 0, 1).fill_(Scalar(-1.0));  // and writes go to it
  EXPECT_EQ(host[0], -1.0f);
  EXPECT_EQ(host[1], -1.0f);
  EXPECT_EQ(host[2], 3.0f);
  Tensor ro = Tensor::from_blob(host.data(), DType::F32, Shape{6}, /*read_only=*/true);
  EXPECT_TRUE(ro.read_only());
  EXPECT_WICK_ERROR(ro.fill_(Scalar(0)), ReadOnly, "fill_: refusing to modify a read-only tensor");
  EXPECT_WICK_ERROR(ro.copy_(zeros({6})), ReadOnly, "copy_");
  EXPECT_WICK_ERROR(ro.zero_(), ReadOnly, "read-only");
  EXPECT_EQ(host[3], 4.0f);  // untouched
  EXPECT_WICK_ERROR(Tensor::from_blob(reinterpret_cast<char*>(host.data()) + 1, DType::F32, Shape{2}), InvalidArgument,
                    "not aligned for f32");
}

TEST(TensorCreate, ZerosOnesFull) {
  EXPECT_EQ(zeros({2, 2}).to_vector<float>(), (F{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}, DType::I64).to_vector<int64_t>(), (I{1, 1, 1}));
  EXPECT_EQ(full({2}, Scalar(2.5), DType::BF16).to_vector<float>(), (F{2.5f, 2.5f}));
  EXPECT_EQ(full({2}, Scalar(-7), DType::I64).to_vector<int64_t>(), (I{-7, -7}));
  EXPECT_EQ(full({1}, Scalar(4000000000LL), DType::U32).item<uint32_t>(), 4000000000u);
  EXPECT_EQ(full(Shape{}, Scalar(1.5), DType::F64).item<double>(), 1.5);
  EXPECT_EQ(zeros({0, 3}).numel(), 0);
  const Tensor like = full_like(ones({2, 3}, DType::F16), Scalar(3));
  EXPECT_EQ(like.dtype(), DType::F16);
  EXPECT_EQ(like.shape(), (Shape{2, 3}));
  EXPECT_EQ(like.to_vector<float>()[5], 3.0f);
  EXPECT_WICK_ERROR(zeros({2, -1}), InvalidArgument, "non-negative");
}

TEST(TensorCreate, ArangeLinspaceEye) {
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (I{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), DType::I64);
  EXPECT_EQ(arange(Scalar(0), Scalar(1), Scalar(0.25)).to_vector<float>(), (F{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(Scalar(5), Scalar(0), Scalar(-2), DType::I64).to_vector<int64_t>(), (I{5, 3, 1}));
  EXPECT_EQ(arange(Scalar(1), Scalar(2.01), Scalar(0.5), DType::F64).to_vector<double>(),
            (std::vector<double>{1, 1.5, 2}));
  EXPECT_EQ(arange(Scalar(3), Scalar(3)).numel(), 0);
  EXPECT_EQ(arange(Scalar(3), Scalar(0)).numel(), 0);  // wrong direction: empty, as in PyTorch
  EXPECT_WICK_ERROR(arange(Scalar(0), Scalar(1), Scalar(0)), InvalidArgument, "step must be non-zero");
  // torch.linspace(0, 1, 5) and torch.linspace(-1, 2, 4)
  EXPECT_EQ(linspace(0, 1, 5).to_vector<float>(), (F{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(linspace(-1, 2, 4, DType::F64).to_vector<double>(), (std::vector<double>{-1, 0, 1, 2}));
  EXPECT_EQ(linspace(3, 7, 1).to_vector<float>(), (F{3}));
  EXPECT_EQ(linspace(3, 7, 0).numel(), 0);
  // torch.linspace(0, 1, 7, dtype=torch.float64): filled from both ends, the end exact.
  EXPECT_EQ(linspace(0, 1, 7, DType::F64).to_vector<double>(),
            (std::vector<double>{0.0, 0.16666666666666666, 0.3333333333333333, 0.5, 0.6666666666666667,
                                 0.8333333333333334, 1.0}));
  EXPECT_WICK_ERROR(linspace(0, 1, -1), InvalidArgument, "steps must be non-negative");
  EXPECT_EQ(eye(3).to_vector<float>(), (F{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(eye(2, 3, DType::U8).to_vector<int64_t>(), (I{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(3, 2).shape(), (Shape{3, 2}));
  EXPECT_EQ(eye(3, 2).to_vector<float>(), (F{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(eye(0).numel(), 0);
}

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

TEST(TensorCreate, RandomIsReproducibleAndRoughlyDistributed) {
  manual_seed(42);
  const Tensor a = rand({20000});
  const Tensor b = randn({20000});
  manual_seed(42);
  EXPECT_EQ(rand({20000}).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(randn({20000}).to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(rand({20000}).to_vector<float>(), a.to_vector<float>());  // the generator advanced
  manual_seed(7);
  EXPECT_NE(rand({20000}).to_vector<float>(), a.to_vector<float>());  // another seed
  const std::vector<double> u = a.to_vector<double>(), n = b.to_vector<double>();
  for (double x : u) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;
  // Standard errors: mean 0.002 (uniform), 0.007 (normal); 5 sigma margins.
  EXPECT_NEAR(mean_of(u), 0.5, 0.01);
  EXPECT_NEAR(std_of(u), std::sqrt(1.0 / 12), 0.01);
  EXPECT_NEAR(mean_of(n), 0.0, 0.035);
  EXPECT_NEAR(std_of(n), 1.0, 0.03);
  const std::vector<double> r = rand({5000}, DType::F64, Device::cpu(), 2.0, 5.0).to_vector<double>();
  for (double x : r) ASSERT_TRUE(x >= 2.0 && x < 5.0) << x;
  EXPECT_NEAR(mean_of(r), 3.5, 0.07);
  const std::vector<double> g = randn({5000}, DType::BF16, Device::cpu(), 10.0, 2.0).to_vector<double>();
  EXPECT_NEAR(mean_of(g), 10.0, 0.15);
  EXPECT_NEAR(std_of(g), 2.0, 0.15);
  EXPECT_WICK_ERROR(rand({2}, DType::U8), DTypeMismatch, "rand: expected a floating-point dtype, got u8");
  EXPECT_WICK_ERROR(randn({2}, DType::F32, Device::cpu(), 0, -1), InvalidArgument, "stddev");
}

// ---- reading back, conversion, copies ------------------------------------------------------

TEST(TensorValues, ToVectorAndItemConvert) {
  const Tensor f = Tensor::from_vector<float>({-1.7f, 2.5f, 300.f, NAN});
  EXPECT_EQ(f.to_vector<int64_t>(), (I{-1, 2, 300, 0}));                    // truncation; NaN -> 0
  EXPECT_EQ(f.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 2, 255, 0}));  // saturation
  EXPECT_EQ(Tensor::from_vector<int64_t>({-1, 256}).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 0}));  // wraps
  EXPECT_EQ(Tensor::from_vector<int64_t>({3}).item<double>(), 3.0);
  EXPECT_EQ(full(Shape{1, 1}, Scalar(0.5)).item<float>(), 0.5f);
  EXPECT_WICK_ERROR(f.item<float>(), InvalidArgument, "item: expected a tensor with one element, got shape [4]");
  EXPECT_WICK_ERROR(Tensor().to_vector<float>(), InvalidArgument, "undefined tensor");
}

// An undefined tensor holds no element: numel() and nbytes() are 0 (they were 1 and 4,
// from the default layout's scalar shape), while reading it still raises.
TEST(TensorValues, UndefinedTensorHasNoElements) {
  const Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_EQ(u.numel(), 0);
  EXPECT_EQ(u.nbytes(), 0u);
  EXPECT_WICK_ERROR(u.item<float>(), InvalidArgument, "item: input is an undefined tensor");
  EXPECT_EQ(Tensor::empty({0, 3}).numel(), 0);
  EXPECT_EQ(Tensor::empty({}).numel(), 1);  // a defined 0-d tensor holds one element
}

TEST(TensorValues, ToDTypeRoundsToNearestEven) {
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1);
  // 1 + 3 * 2^-8 ties to 1 + 2^-6. f16 keeps both exactly.
  const Tensor x = Tensor::from_vector<float>({1.00390625f, 1.01171875f, 65520.f});
  EXPECT_EQ(x.to(DType::BF16).to_vector<float>(), (F{1.0f, 1.015625f, 65536.f}));
  EXPECT_EQ(x.to(DType::F16).to_vector<float>()[0], 1.00390625f);
  EXPECT_TRUE(std::isinf(x.to(DType::F16).to_vector<float>()[2]));  // 65520 rounds past f16 max
  EXPECT_TRUE(x.to(DType::F32).shares_storage(x));                  // same dtype: no copy
  const Tensor t = x.reshape({1, 3}).t().to(DType::F64);            // strided source
  EXPECT_EQ(t.shape(), (Shape{3, 1}));
  EXPECT_EQ(t.to_vector<double>()[1], 1.01171875);
}

TEST(TensorValues, ContiguousCloneCopy) {
  const Tensor a = arange(Scalar(0), Scalar(6), Scalar(1), DType::F32).reshape({2, 3});
  const Tensor t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.shares_storage(a));
  const Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(a));
  EXPECT_EQ(c.to_vector<float>(), (F{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(a.contiguous().shares_storage(a));
  Tensor k = a.clone();
  EXPECT_FALSE(k.shares_storage(a));
  k.fill_(Scalar(9));
  EXPECT_EQ(a.to_vector<float>()[0], 0.0f);
  // copy_ broadcasts and converts.
  Tensor dst = zeros({2, 3});
  dst.copy_(Tensor::from_vector<int64_t>({1, 2, 3}));
  EXPECT_EQ(dst.to_vector<float>(), (F{1, 2, 3, 1, 2, 3}));
  dst.copy_(Tensor::from_vector<double>({-1, 1}, Shape{2, 1}));
  EXPECT_EQ(dst.to_vector<float>(), (F{-1, -1, -1, 1, 1, 1}));
  // Into a strided view: only its elements change.
  Tensor m = zeros({3, 3});
  Tensor col = m.select(1, 1);
  col.copy_(Tensor::from_vector<float>({7, 8, 9}));
  EXPECT_EQ(m.to_vector<float>(), (F{0, 7, 0, 0, 8, 0, 0, 9, 0}));
  m.t().narrow(0, 2, 1).fill_(Scalar(5));  // the last column, through a transpose
  EXPECT_EQ(m.to_vector<float>(), (F{0, 7, 5, 0, 8, 5, 0, 9, 5}));
  EXPECT_WICK_ERROR(dst.copy_(zeros({4})), ShapeMismatch, "cannot broadcast shape [4] to [2, 3]");
}

// ---- views -----------------------------------------------------------------------------------

TEST(TensorViews, ReshapeViewFlatten) {
  const Tensor a = arange(Scalar(0), Scalar(12), Scalar(1), DType::F32);
  const Tensor r = a.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_TRUE(r.shares_storage(a));
  const Tensor t = r.t();
  EXPECT_WICK_ERROR(t.view({12}), InvalidArgument, "cannot express shape [12] without a copy; use reshape()");
  const Tensor flat = t.reshape({-1});  // copies
  EXPECT_FALSE(flat.shares_storage(a));
  EXPECT_EQ(flat.to_vector<float>(), (F{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(t.view({2, 2, 3}).shape(), (Shape{2, 2, 3}));  // splitting a dim is a view
  EXPECT_EQ(a.reshape({2, 3, 2}).flatten(1).shape(), (Shape{2, 6}));
  EXPECT_EQ(a.reshape({2, 3, 2}).flatten().shape(), (Shape{12}));
  EXPECT_EQ(full(Shape{}, Scalar(1)).flatten().shape(), (Shape{1}));
  EXPECT_WICK_ERROR(a.reshape({5, -1}), ShapeMismatch, "reshape: cannot infer the -1 dimension for 12");
}

TEST(TensorViews, SliceSelectNarrow) {
  const Tensor a = arange(Scalar(0), Scalar(20), Scalar(1), DType::I64).reshape({4, 5});
  EXPECT_EQ(a.slice(1, 1, -1).to_vector<int64_t>(), (I{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18}));
  EXPECT_EQ(a.slice(0, 0, 4, 2).to_vector<int64_t>(), (I{0, 1, 2, 3, 4, 10, 11, 12, 13, 14}));
  EXPECT_EQ(a.slice(1, -2, 100).shape(), (Shape{4, 2}));  // clamped like Python
  EXPECT_EQ(a.slice(1, 3, 1).shape(), (Shape{4, 0}));
  EXPECT_EQ(a.slice(1, 0, 5, 3).to_vector<int64_t>(), (I{0, 3, 5, 8, 10, 13, 15, 18}));
  EXPECT_EQ(a.select(0, -1).to_vector<int64_t>(), (I{15, 16, 17, 18, 19}));
  EXPECT_EQ(a.select(1, 2).shape(), (Shape{4}));
  EXPECT_EQ(a.select(1, 2).to_vector<int64_t>(), (I{2, 7, 12, 17}));
  EXPECT_EQ(a.select(0, 1).select(0, 2).item<int64_t>(), 7);
  EXPECT_EQ(a.narrow(0, 1, 2).narrow(1, 3, 2).to_vector<int64_t>(), (I{8, 9, 13, 14}));
  EXPECT_WICK_ERROR(a.select(0, 4), IndexOutOfRange, "select: index 4 out of range for dim 0 of size 4");
  EXPECT_WICK_ERROR(a.slice(0, 0, 2, 0), InvalidArgument, "step must be positive");
  EXPECT_WICK_ERROR(a.narrow(1, 4, 2), IndexOutOfRange, "narrow");
}

TEST(TensorViews, BroadcastSqueezePermute) {
  const Tensor v = Tensor::from_vector<float>({1, 2, 3});
  const Tensor b = v.broadcast_as({2, 3});
  EXPECT_EQ(b.strides(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(b.to_vector<float>(), (F{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(v.unsqueeze(1).expand({3, 2}).to_vector<float>(), (F{1, 1, 2, 2, 3, 3}));
  EXPECT_WICK_ERROR(v.broadcast_as({2, 4}), ShapeMismatch, "cannot broadcast shape [3] to [2, 4]");
  EXPECT_EQ(v.reshape({1, 3, 1}).squeeze().shape(), (Shape{3}));
  EXPECT_EQ(v.reshape({1, 3, 1}).squeeze(-1).shape(), (Shape{1, 3}));
  const Tensor p = arange(Scalar(0), Scalar(24), Scalar(1), DType::F32).reshape({2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.select(0, 1).to_vector<float>(), (F{1, 5, 9, 13, 17, 21}));
}

// ---- joining and splitting -------------------------------------------------------------------

TEST(TensorJoin, CatStackSplitChunk) {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  const Tensor b = Tensor::from_vector<float>({5, 6}, Shape{1, 2});
  EXPECT_EQ(cat({a, b}).to_vector<float>(), (F{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(cat({a, a.t()}, 1).to_vector<float>(), (F{1, 2, 1, 3, 3, 4, 2, 4}));
  const Tensor mixed = cat({Tensor::from_vector<uint8_t>({1}), Tensor::from_vector<float>({0.5f})});
  EXPECT_EQ(mixed.dtype(), DType::F32);  // promoted
  EXPECT_EQ(mixed.to_vector<float>(), (F{1, 0.5f}));
  EXPECT_EQ(cat({a, zeros({0, 2})}).shape(), (Shape{2, 2}));
  EXPECT_WICK_ERROR(cat({a, b}, 1), ShapeMismatch, "cat: tensor 1 has shape [1, 2], tensor 0 has shape [2, 2]");
  EXPECT_WICK_ERROR(cat({}), InvalidArgument, "at least one tensor");
  const Tensor s = stack({a, a}, 1);
  EXPECT_EQ(s.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(s.to_vector<float>(), (F{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(stack({a, a}, -1).shape(), (Shape{2, 2, 2}));
  EXPECT_WICK_ERROR(stack({a, b}), ShapeMismatch, "stack: tensor 1 has shape [1, 2]");

  const Tensor x = arange(Scalar(0), Scalar(5), Scalar(1), DType::I64);
  const auto parts = x.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].to_vector<int64_t>(), (I{4}));
  EXPECT_TRUE(parts[1].shares_storage(x));
  // torch.arange(5).chunk(3) -> sizes 2, 2, 1; torch.arange(6).chunk(4) -> 2, 2, 2.
  auto sizes = [](const std::vector<Tensor>& ts) {
    I out;
    for (const Tensor& t : ts) out.push_back(t.numel());
    return out;
  };
  EXPECT_EQ(sizes(x.chunk(3)), (I{2, 2, 1}));
  EXPECT_EQ(sizes(arange(6).chunk(4)), (I{2, 2, 2}));
  EXPECT_EQ(sizes(arange(6).reshape({2, 3}).split(1, 1)), (I{2, 2, 2}));
  EXPECT_WICK_ERROR(x.split(0), InvalidArgument, "split_size must be positive");
}

// ---- printing ----------------------------------------------------------------------------------

// Expected strings are PyTorch 1.13's own formatter with wick's suffixes:
//   from torch._tensor_str import _tensor_str, _add_suffixes
//   _add_suffixes("tensor(" + _tensor_str(t, 7), [size?, "dtype=f32", "device=cpu"], 7, False)
TEST(TensorPrint, MatchesPyTorch) {
  EXPECT_EQ(Tensor::from_vector<float>({1.5f, -2.25f, 3.0f, 0.125f, 4.0f, -0.5f}, Shape{2, 3}).to_string(),
            "tensor([[ 1.5000, -2.2500,  3.0000],\n"
            "        [ 0.1250,  4.0000, -0.5000]], dtype=f32, device=cpu)");
  EXPECT_EQ(Tensor::from_vector<int64_t>({1, -2, 30, 4}, Shape{2, 2}).to_string(),
            "tensor([[ 1, -2],\n"
            "        [30,  4]], dtype=i64, device=cpu)");
  EXPECT_EQ(zeros({0}).to_string(), "tensor([], dtype=f32, device=cpu)");
  EXPECT_EQ(zeros({2, 0}).to_string(), "tensor([], size=(2, 0), dtype=f32, device=cpu)");
  EXPECT_EQ(full(Shape{}, Scalar(3.5)).to_string(), "tensor(3.5000, dtype=f32, device=cpu)");
  EXPECT_EQ(Tensor::from_vector<float>({1e-5f, 1.0f, 100.0f}).to_string(),
            "tensor([1.0000e-05, 1.0000e+00, 1.0000e+02], dtype=f32, device=cpu)");
  EXPECT_EQ(Tensor::from_vector<double>({1.0, NAN, -INFINITY, 0.0}).to_string(),
            "tensor([1., nan, -inf, 0.], dtype=f64, device=cpu)");
  EXPECT_EQ(arange(Scalar(0), Scalar(24), Scalar(1), DType::F32).reshape({2, 3, 4}).to_string(),
            "tensor([[[ 0.,  1.,  2.,  3.],\n"
            "         [ 4.,  5.,  6.,  7.],\n"
            "         [ 8.,  9., 10., 11.]],\n"
            "\n"
            "        [[12., 13., 14., 15.],\n"
            "         [16., 17., 18., 19.],\n"
            "         [20., 21., 22., 23.]]], dtype=f32, device=cpu)");
}

TEST(TensorPrint, WrapsAndElidesLikePyTorch) {
  // torch.arange(30.) * 0.5 - 3: wrapped at 80 columns, suffix moved to its own line.
  EXPECT_EQ(arange(Scalar(-3.0), Scalar(12.0), Scalar(0.5), DType::F32).to_string(),
            "tensor([-3.0000, -2.5000, -2.0000, -1.5000, -1.0000, -0.5000,  0.0000,  0.5000,\n"
            "         1.0000,  1.5000,  2.0000,  2.5000,  3.0000,  3.5000,  4.0000,  4.5000,\n"
            "         5.0000,  5.5000,  6.0000,  6.5000,  7.0000,  7.5000,  8.0000,  8.5000,\n"
            "         9.0000,  9.5000, 10.0000, 10.5000, 11.0000, 11.5000], dtype=f32,\n"
            "       device=cpu)");
  // torch.arange(2000.): over 1000 elements, summarized; integral but a range over 1000
  // switches PyTorch to scientific notation.
  EXPECT_EQ(arange(Scalar(0.0), Scalar(2000.0), Scalar(1.0), DType::F32).to_string(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03], dtype=f32, device=cpu)");
  EXPECT_EQ(arange(2000).reshape({40, 50}).to_string(),
            "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
            "        [  50,   51,   52,  ...,   97,   98,   99],\n"
            "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
            "        ...,\n"
            "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
            "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
            "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]], dtype=i64, device=cpu)");
  // i64 values beyond 2^53 print exactly.
  EXPECT_EQ(Tensor::from_vector<int64_t>({INT64_MAX}).to_string(),
            "tensor([9223372036854775807], dtype=i64, device=cpu)");
  EXPECT_EQ(Tensor().to_string(), "tensor(undefined)");
}

}  // namespace
}  // namespace wick
