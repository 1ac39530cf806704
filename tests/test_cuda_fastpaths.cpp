// The CUDA backend's fast paths against the CPU backend (the reference: its kernels are
// tested against PyTorch goldens elsewhere) on shapes that hit each path's edges:
//  - elementwise tiled path (a transposed operand, contiguous() of a transpose, copy into
//    a transposed destination, permuted 3-D views) with tiles cut by odd sizes;
//  - elementwise broadcast path (row / column broadcast, odd widths, offset views);
//  - last-dim reductions (odd widths, argmax ties and NaN);
//  - the tiled path's whole-tile vector moves (bf16/f16 pairs, u8 quads) next to edge
//    tiles, misaligned views that fall back to elements, batched 3-D transposes;
//  - bf16 softmax / layer_norm / rms_norm with the row in registers (vector loads for
//    aligned rows whose width is a multiple of 8, scalar loads else; widths around the
//    warp/block boundary).
// On cpu the same code runs CPU against CPU, which checks the test itself.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "support/devices.h"
#include "support/golden.h"

namespace wick {
namespace {

class CudaFastPaths : public test::DeviceTest {};

// The *MatchCpu / *MatchesCpu cases compare the device's result with the CPU's: on the CPU they would compare
// it with itself, so they are reported skipped there (the CPU ops have their own tests against
// PyTorch's goldens).
#define SKIP_ON_THE_CPU() \
  if (dev().is_cpu()) GTEST_SKIP() << "compares the device with the CPU: nothing to compare on the CPU"

// Small non-negative integers (exact in every dtype, sums of two below 256), varied
// so that every row and column differs and values repeat (argmax ties).
Tensor pattern(Shape shape, DType dt, int seed) {
  std::vector<float> v(size_t(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((int64_t(i) * 37 + seed * 11) % 101);
  return Tensor::from_vector(v, shape).to(dt);
}

std::vector<double> V(const Tensor& t) { return t.to(Device::cpu()).to_vector<double>(); }

const DType kEwTypes[] = {DType::F32, DType::BF16, DType::U8, DType::I64};

// The row maxima of dx (on the device) equal those of x (on the CPU), NaN matching NaN.
void expect_same_row_max(const Tensor& dx, const Tensor& x) {
  const auto mx = V(max(dx, {1})), mx_ref = V(max(x, {1}));
  ASSERT_EQ(mx.size(), mx_ref.size());
  for (size_t i = 0; i < mx.size(); ++i)
    EXPECT_TRUE(mx[i] == mx_ref[i] || (std::isnan(mx[i]) && std::isnan(mx_ref[i]))) << "row " << i;
}

TEST_P(CudaFastPaths, AddWithTransposedOperandMatchesCpu) {
  SKIP_ON_THE_CPU();
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{33, 65}, {1, 1000}, {1000, 1}, {64, 64}, {130, 70}};
  for (DType dt : kEwTypes)
    for (auto [r, c] : shapes) {
      SCOPED_TRACE(::testing::Message() << dt << " " << r << "x" << c);
      const Tensor a = pattern({r, c}, dt, 1), bt = pattern({c, r}, dt, 2).t();
      const Tensor da = a.to(dev()), dbt = pattern({c, r}, dt, 2).to(dev()).t();
      EXPECT_EQ(V(add(da, dbt)), V(add(a, bt)));
      EXPECT_EQ(V(add(dbt, da)), V(add(bt, a)));
      EXPECT_EQ(V(dbt.contiguous()), V(bt.contiguous()));
      // The output transposed, the input contiguous.
      Tensor dst = Tensor::empty({c, r}, dt, dev()).t();
      dst.copy_(da);
      EXPECT_EQ(V(dst), V(a));
      // A compare (u8 output) through the same path.
      EXPECT_EQ(V(gt(da, dbt)), V(gt(a, bt)));
    }
}

TEST_P(CudaFastPaths, PermutedThreeDimViewsMatchCpu) {
  SKIP_ON_THE_CPU();
  const std::vector<std::vector<int64_t>> orders = {{2, 0, 1}, {1, 2, 0}, {0, 2, 1}, {2, 1, 0}};
  for (DType dt : kEwTypes)
    for (const auto& order : orders) {
      SCOPED_TRACE(::testing::Message() << dt << " order " << order[0] << order[1] << order[2]);
      const Tensor x = pattern({3, 17, 29}, dt, 3).permute(order);
      const Tensor dx = pattern({3, 17, 29}, dt, 3).to(dev()).permute(order);
      EXPECT_EQ(V(dx.contiguous()), V(x.contiguous()));
      const Tensor y = pattern(x.shape(), dt, 4);
      EXPECT_EQ(V(add(y.to(dev()), dx)), V(add(y, x)));
      // Batch dims beyond the tile: a 4-D permutation with a leading batch of 2.
      const Tensor x4 = pattern({2, 3, 17, 29}, dt, 5).permute({0, order[0] + 1, order[1] + 1, order[2] + 1});
      const Tensor dx4 =
          pattern({2, 3, 17, 29}, dt, 5).to(dev()).permute({0, order[0] + 1, order[1] + 1, order[2] + 1});
      EXPECT_EQ(V(dx4.contiguous()), V(x4.contiguous()));
    }
}

TEST_P(CudaFastPaths, RowAndColumnBroadcastMatchCpu) {
  SKIP_ON_THE_CPU();
  for (DType dt : kEwTypes)
    for (int64_t w : {1, 7, 33, 1000}) {
      SCOPED_TRACE(::testing::Message() << dt << " width " << w);
      const Tensor a = pattern({5, w}, dt, 1), row = pattern({w}, dt, 2), col = pattern({5, 1}, dt, 3);
      const Tensor da = a.to(dev());
      EXPECT_EQ(V(add(da, row.to(dev()))), V(add(a, row)));
      EXPECT_EQ(V(add(row.to(dev()), da)), V(add(row, a)));
      EXPECT_EQ(V(add(da, col.to(dev()))), V(add(a, col)));
      EXPECT_EQ(V(add(da, row.reshape({1, w}).to(dev()))), V(add(a, row.reshape({1, w}))));
      // Offset (unaligned) views: a row starting at element 1, a narrowed matrix.
      const Tensor row_off = pattern({w + 1}, dt, 4).narrow(0, 1, w);
      const Tensor drow_off = pattern({w + 1}, dt, 4).to(dev()).narrow(0, 1, w);
      EXPECT_EQ(V(add(da, drow_off)), V(add(a, row_off)));
      const Tensor a_off = pattern({5, w + 3}, dt, 5).narrow(1, 2, w);
      const Tensor da_off = pattern({5, w + 3}, dt, 5).to(dev()).narrow(1, 2, w);
      EXPECT_EQ(V(add(da_off, row.to(dev()))), V(add(a_off, row)));
      // Three dims: (4, 5, w) + (5, w) + a scalar-like (1, 1, 1) through where.
      const Tensor a3 = pattern({4, 5, w}, dt, 6), b2 = pattern({5, w}, dt, 7);
      EXPECT_EQ(V(add(a3.to(dev()), b2.to(dev()))), V(add(a3, b2)));
      const Tensor cond = gt(a3, pattern({1, 1, w}, dt, 8));
      const Tensor other = pattern({1, 1, 1}, dt, 9);
      EXPECT_EQ(V(where(cond.to(dev()), a3.to(dev()), other.to(dev()))), V(where(cond, a3, other)));
    }
}

TEST_P(CudaFastPaths, LastDimReductionsMatchCpu) {
  SKIP_ON_THE_CPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t w : {1, 31, 33, 1000, 4097})
      for (int64_t rows : {3, 70}) {
        SCOPED_TRACE(::testing::Message() << dt << " " << rows << "x" << w);
        std::vector<float> v(size_t(rows * w));
        for (size_t i = 0; i < v.size(); ++i) v[i] = float((int64_t(i) * 37) % 101) - 50.0f;
        // Row 1 gets two NaNs (argmax and max report the first / NaN).
        if (w > 2) v[size_t(w + w / 2)] = nan, v[size_t(w + w - 1)] = nan;
        const Tensor x = Tensor::from_vector(v, {rows, w}).to(dt), dx = x.to(dev());
        EXPECT_CLOSE(sum(dx, {1}).to(Device::cpu()), sum(x, {1}), 1e-6, 1e-6);
        expect_same_row_max(dx, x);
        EXPECT_EQ(V(argmax(dx, 1)), V(argmax(x, 1)));
        EXPECT_EQ(V(argmin(dx, 1)), V(argmin(x, 1)));
        // A row starting at an odd element (unaligned vector loads).
        if (w > 1) {
          const Tensor xo = x.narrow(1, 1, w - 1), dxo = dx.narrow(1, 1, w - 1);
          EXPECT_EQ(V(argmax(dxo, 1)), V(argmax(xo, 1)));
          EXPECT_CLOSE(sum(dxo, {1}).to(Device::cpu()), sum(xo, {1}), 1e-6, 1e-6);
        }
      }
}

// Rows of 8..64 KiB, more of them than 64 warps per SM: a warp per row instead of a block
// (the choice of plan_reduction in kernels_reduce.cu; 9000 rows fill the 132 SMs of an
// H200 once). Odd widths and a view starting at element 1 put the vector loads at every
// alignment; NaNs in some rows.
TEST_P(CudaFastPaths, ManyLongRowsReduceAsOneWarpPerRow) {
  if (!dev().is_cuda()) GTEST_SKIP() << "40 M elements: the warp-per-row plan is the CUDA backend's";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t rows = 9000, w = 4501;
  std::vector<float> v(size_t(rows * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((int64_t(i) * 37) % 101) - 50.0f;
  for (int64_t r = 5; r < rows; r += 997) v[size_t(r * w + (r * 13) % w)] = nan;
  for (DType dt : {DType::F32, DType::BF16}) {
    const Tensor x = Tensor::from_vector(v, {rows, w}).to(dt), dx = x.to(dev());
    for (int64_t start : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << dt << " columns from " << start);
      const Tensor xs = x.narrow(1, start, w - start), dxs = dx.narrow(1, start, w - start);
      EXPECT_CLOSE(sum(dxs, {1}).to(Device::cpu()), sum(xs, {1}), 1e-5, 1e-5);
      expect_same_row_max(dxs, xs);
      EXPECT_EQ(V(argmax(dxs, 1)), V(argmax(xs, 1)));
      EXPECT_EQ(V(argmin(dxs, 1)), V(argmin(xs, 1)));
    }
  }
}

TEST_P(CudaFastPaths, ArgmaxTiesTakeTheFirstIndexByHand) {
  // Row 0: maximum 9 at 2 and 5; row 1: NaN at 2 and 5 beats every number.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 9, 3, 4, 9, 0, 1, 2, 5, nan, 7, 8, nan, 1, 0}, {2, 8});
  for (DType dt : {DType::F32, DType::BF16}) {
    EXPECT_EQ(V(argmax(x.to(dt).to(dev()), 1)), (std::vector<double>{2, 2}));
    EXPECT_EQ(V(argmin(x.to(dt).to(dev()), 1)), (std::vector<double>{6, 2}));
  }
}

TEST_P(CudaFastPaths, Bf16SoftmaxMatchesCpu) {
  SKIP_ON_THE_CPU();
  for (int64_t w : {1, 7, 1024, 1025, 5000}) {
    SCOPED_TRACE(::testing::Message() << "width " << w);
    std::vector<float> v(size_t(9 * w));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float((int64_t(i) * 37) % 101) / 10.0f - 5.0f;
    const Tensor x = Tensor::from_vector(v, {9, w}).to(DType::BF16);
    const Tensor got = softmax(x.to(dev())).to(Device::cpu());
    EXPECT_EQ(got.dtype(), DType::BF16);
    EXPECT_CLOSE(got, softmax(x), 1e-2, 1e-4);
    // Unaligned rows: a view starting at column 1.
    if (w > 1) {
      EXPECT_CLOSE(softmax(x.to(dev()).narrow(1, 1, w - 1)).to(Device::cpu()), softmax(x.narrow(1, 1, w - 1)), 1e-2,
                   1e-4);
    }
  }
}

// Shapes with whole 64x64 tiles (the vector path) and cut tiles, for every element size
// below 8 bytes; misaligned views (odd offsets / odd strides) take the element path.
TEST_P(CudaFastPaths, TransposesWithWholeAndCutTilesMatchCpu) {
  SKIP_ON_THE_CPU();
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{67, 131}, {64, 128}, {128, 192}, {130, 70}, {8, 200}};
  for (DType dt : {DType::BF16, DType::F16, DType::U8, DType::F32})
    for (auto [r, c] : shapes) {
      SCOPED_TRACE(::testing::Message() << dt << " " << r << "x" << c);
      const Tensor src = pattern({c, r}, dt, 2), dsrc = src.to(dev());
      EXPECT_EQ(V(dsrc.t().contiguous()), V(src.t().contiguous()));
      const Tensor a = pattern({r, c}, dt, 1);
      EXPECT_EQ(V(add(a.to(dev()), dsrc.t())), V(add(a, src.t())));
      EXPECT_EQ(V(add(dsrc.t(), a.to(dev()))), V(add(src.t(), a)));
      // Misaligned: the transposed operand starts at an odd element and has an odd row stride.
      const Tensor wide = pattern({c, r + 1}, dt, 3), dwide = wide.to(dev());
      EXPECT_EQ(V(dwide.narrow(1, 1, r).t().contiguous()), V(wide.narrow(1, 1, r).t().contiguous()));
      EXPECT_EQ(V(add(a.to(dev()), dwide.narrow(1, 1, r).t())), V(add(a, wide.narrow(1, 1, r).t())));
      // Misaligned output: copy into a transposed destination at an odd offset.
      Tensor dst = Tensor::empty({c, r + 1}, dt, dev()).narrow(1, 1, r).t();
      dst.copy_(a.to(dev()));
      EXPECT_EQ(V(dst), V(a));
    }
}

TEST_P(CudaFastPaths, BatchedTransposesMatchCpu) {
  SKIP_ON_THE_CPU();
  for (DType dt : {DType::BF16, DType::U8, DType::F32})
    for (int64_t r : {64, 67}) {
      SCOPED_TRACE(::testing::Message() << dt << " 3x" << r << "x131");
      const Tensor x = pattern({3, r, 131}, dt, 4), dx = x.to(dev());
      EXPECT_EQ(V(dx.transpose(1, 2).contiguous()), V(x.transpose(1, 2).contiguous()));
      const Tensor y = pattern({3, 131, r}, dt, 5);
      EXPECT_EQ(V(add(y.to(dev()), dx.transpose(1, 2))), V(add(y, x.transpose(1, 2))));
      // A broadcast batch operand next to the transposed one: (131, r) + (3, 131, r)^T view.
      const Tensor row = pattern({131, r}, dt, 6);
      EXPECT_EQ(V(add(row.to(dev()), dx.transpose(1, 2))), V(add(row, x.transpose(1, 2))));
    }
}

TEST_P(CudaFastPaths, Bf16RowOpsInRegistersMatchCpu) {
  SKIP_ON_THE_CPU();
  for (int64_t w : {1, 8, 1000, 1024})
    for (int64_t rows : {1, 7, 300}) {
      SCOPED_TRACE(::testing::Message() << rows << "x" << w);
      std::vector<float> v(size_t(rows * w));
      for (size_t i = 0; i < v.size(); ++i) v[i] = float((int64_t(i) * 37) % 101) / 10.0f - 5.0f;
      const Tensor x = Tensor::from_vector(v, {rows, w}).to(DType::BF16), dx = x.to(dev());
      EXPECT_CLOSE(softmax(dx).to(Device::cpu()), softmax(x), 1e-2, 1e-4);
      EXPECT_CLOSE(log_softmax(dx).to(Device::cpu()), log_softmax(x), 2e-2, 1e-2);
      const Tensor wt = pattern({w}, DType::BF16, 1), bs = pattern({w}, DType::BF16, 2);
      EXPECT_CLOSE(layer_norm(dx, wt.to(dev()), bs.to(dev())).to(Device::cpu()), layer_norm(x, wt, bs), 2e-2, 5e-2);
      EXPECT_CLOSE(rms_norm(dx, wt.to(dev())).to(Device::cpu()), rms_norm(x, wt), 2e-2, 5e-2);
      // Non-contiguous rows (a transposed input) take the scalar-load path.
      const Tensor xt = Tensor::from_vector(v, {w, rows}).to(DType::BF16);
      EXPECT_CLOSE(softmax(xt.to(dev()).t()).to(Device::cpu()), softmax(xt.t()), 1e-2, 1e-4);
      EXPECT_CLOSE(rms_norm(xt.to(dev()).t(), wt.to(dev())).to(Device::cpu()), rms_norm(xt.t(), wt), 2e-2, 5e-2);
    }
  // A row of -inf and one with a NaN: softmax gives NaN for the whole row, as on the CPU.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(2 * 16, 1.0f);
  for (int i = 0; i < 16; ++i) v[size_t(i)] = -inf;
  v[20] = nan;
  const Tensor x = Tensor::from_vector(v, {2, 16}).to(DType::BF16);
  const auto got = V(softmax(x.to(dev()))), ref = V(softmax(x));
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i] == ref[i] || (std::isnan(got[i]) && std::isnan(ref[i]))) << "element " << i;
}

// More than 2^31 elements through the contiguous elementwise path: the CUDA kernel's index
// math is 32-bit and the host launches it in chunks of 2^30 elements, aligned (vector
// kernel) and misaligned (element kernel). Marked elements at the chunk edges and the
// tail, and the sum of all, show every element computed once from its own inputs.
TEST_P(CudaFastPaths, ContiguousAddBeyondTwoToThe31Elements) {
  if (!dev().is_cuda()) GTEST_SKIP() << "23 GiB of operands and sums: the chunked launch is the CUDA kernel's";
  const int64_t n = (int64_t(1) << 31) + 4099, chunk = int64_t(1) << 30;
  Tensor a = full({n}, 1, DType::U8, dev());
  const Tensor b = full({n}, 2, DType::U8, dev());
  const int64_t marks[] = {0, chunk - 1, chunk, 2 * chunk - 1, 2 * chunk, 2 * chunk + 1, n - 1};
  int64_t marked = 0;  // sum of (mark value - 1) over the marks
  for (int64_t k = 0; k < int64_t(std::size(marks)); ++k) {
    a.narrow(0, marks[k], 1).fill_(10 + k);
    marked += 9 + k;
  }
  for (int64_t shift : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "operands offset by " << shift << " element");
    const int64_t m = n - shift;
    const Tensor out = add(a.narrow(0, shift, m), b.narrow(0, shift, m));
    for (int64_t k = 0; k < int64_t(std::size(marks)); ++k) {
      const int64_t at = marks[k] - shift;
      if (at < 0) continue;
      const int64_t lo = std::max<int64_t>(at - 1, 0), hi = std::min(at + 2, m);
      const auto got = out.narrow(0, lo, hi - lo).to_vector<int64_t>();
      for (int64_t i = lo; i < hi; ++i) {
        const auto* mark = std::find(std::begin(marks), std::end(marks), i + shift);
        const int64_t want = mark == std::end(marks) ? 3 : 12 + (mark - std::begin(marks));
        EXPECT_EQ(got[size_t(i - lo)], want) << "element " << i << " of " << m;
      }
    }
    const int64_t skipped = shift == 0 ? 0 : 9;  // the mark at element 0 is outside the view
    EXPECT_EQ(sum(out.to(DType::I64)).item<int64_t>(), 3 * m + marked - skipped);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(CudaFastPaths);

}  // namespace
}  // namespace wick
