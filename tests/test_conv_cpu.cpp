// The CPU convolution paths (src/backend/cpu/cpu_conv.cpp, cpu_conv_direct.cpp) against a
// naive f64 loop written here: the direct kernel's bands (several per image, a short last
// one), tiles that cross output rows (narrow images) or stop at a row (vertical stride),
// channel tails (C_out per group not a multiple of its 4-channel tiles), several blocks of
// input channels and of channel tiles, groups and depthwise, dilation, asymmetric padding,
// 1x1 kernels (padded and strided: direct; unpadded: one GEMM per image), 1-D convs, batches
// of many images, every float dtype, and inputs, weights and biases that are views. Results
// must not depend on the thread count (each output is summed by one thread in one order).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "support/golden.h"
#include "wick/wick.h"

namespace wick {
namespace {

struct Geometry {
  std::vector<int64_t> x, w;  // (N, C_in, H, W), (C_out, C_in / groups, kh, kw)
  Conv2dOptions o;
  bool bias = true;
};

// The conv of x, w, b (f64 values, contiguous) and, per output, the sum of the magnitudes of
// its terms (|b| + sum |x w|), which bounds its rounding error.
struct Reference {
  std::vector<double> y, magnitude;
};

Reference naive_conv(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w,
                     const std::vector<double>& b) {
  const int64_t n = g.x[0], c = g.x[1], h = g.x[2], wd = g.x[3];
  const int64_t co = g.w[0], cig = g.w[1], kh = g.w[2], kw = g.w[3], cog = co / g.o.groups;
  const auto [sh, sw] = g.o.stride;
  const auto [ph, pw] = g.o.padding;
  const auto [dh, dw] = g.o.dilation;
  const int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  Reference r{std::vector<double>(size_t(n * co * oh * ow)), std::vector<double>(size_t(n * co * oh * ow))};
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < co; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double sum = b.empty() ? 0.0 : b[size_t(o)], mag = std::fabs(sum);
          for (int64_t ci = 0; ci < cig; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = y * sh - ph + i * dh, iw = xo * sw - pw + j * dw;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                const double xv = x[size_t(((in * c + o / cog * cig + ci) * h + ih) * wd + iw)];
                const double wv = w[size_t(((o * cig + ci) * kh + i) * kw + j)];
                sum += xv * wv, mag += std::fabs(xv * wv);
              }
          const size_t at = size_t(((in * co + o) * oh + y) * ow + xo);
          r.y[at] = sum, r.magnitude[at] = mag;
        }
  return r;
}

// got (any float dtype) against the reference: within twice Higham's bound for K + 1 terms
// summed in the compute type (f32, or f64 for f64) in any order, plus one rounding to the
// dtype at the end (f16: 2^-11, bf16: 2^-8 of the value).
::testing::AssertionResult matches_reference(const Tensor& got_t, const Reference& want, int64_t k) {
  const DType dt = got_t.dtype();
  const double unit = dt == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double last = dt == DType::F16 ? std::ldexp(1.0, -11) : dt == DType::BF16 ? std::ldexp(1.0, -8) : 0.0;
  const std::vector<double> got = got_t.to(DType::F64).to_vector<double>();
  if (got.size() != want.y.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.y.size();
  size_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < got.size(); ++i) {
    const double sum_bound = 2.0 * double(k + 1) * unit * want.magnitude[i];
    const double bound = sum_bound + last * (std::fabs(want.y[i]) + sum_bound);
    if (!(std::fabs(got[i] - want.y[i]) <= bound) && ++bad <= 5)
      os << "\n  [" << i << "] got " << got[i] << ", expected " << want.y[i] << " (bound " << bound << ")";
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " outputs differ:" << os.str();
  return ::testing::AssertionSuccess();
}

// Runs every geometry in every float dtype against the naive conv of the same (rounded) values.
void check_geometries(const std::vector<Geometry>& cases, uint64_t seed) {
  manual_seed(seed);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Geometry& g = cases[ci];
    const Tensor x32 = randn(Shape(g.x)), w32 = randn(Shape(g.w)) * 0.5;
    const Tensor b32 = g.bias ? randn(Shape{g.w[0]}) : Tensor{};
    for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
      SCOPED_TRACE("case " + std::to_string(ci) + " " + std::string(dtype_name(dt)));
      const Tensor x = x32.to(dt), w = w32.to(dt), b = g.bias ? b32.to(dt) : Tensor{};
      const Reference want = naive_conv(g, x.to(DType::F64).to_vector<double>(), w.to(DType::F64).to_vector<double>(),
                                        g.bias ? b.to(DType::F64).to_vector<double>() : std::vector<double>{});
      const Tensor y = conv2d(x, w, b, g.o);
      ASSERT_EQ(y.dtype(), dt);
      EXPECT_TRUE(matches_reference(y, want, g.w[1] * g.w[2] * g.w[3]));
    }
  }
}

// The direct kernel's cuts: bands (32 channels of 102-float padded rows: 12 input rows, 10
// output rows a band, so 30 rows make 3 bands), tiles of 24 positions over rows of 7 (narrow images:
// a tile spans 4 rows and their padding), vertical stride (a run per output row), channel
// tails (C_out 5, 6, 7), input channels in 3 blocks (C_in 80), 34 channel tiles in one pass
// (C_out 136), passes of fewer channel tiles than a group has: 5 and 1 where their weights
// fill the L2 share (K = 2304), one at a time where their staged sums do (1000-wide rows).
TEST(ConvCpu, DirectKernelCutsAgainstNaive) {
  check_geometries(
      {
          {{2, 32, 30, 100}, {8, 32, 3, 3}, {.padding = {1, 1}}},
          {{3, 3, 9, 5}, {5, 3, 3, 3}, {.padding = {1, 1}}},
          {{1, 4, 2, 1}, {7, 4, 3, 3}, {.padding = {1, 1}}},
          {{2, 5, 17, 23}, {6, 5, 3, 3}, {.stride = {2, 1}, .padding = {1, 1}}},
          {{1, 80, 6, 30}, {9, 80, 3, 3}, {.padding = {1, 1}}},
          {{1, 4, 8, 26}, {136, 4, 3, 3}, {.padding = {1, 1}}, false},
          {{1, 256, 4, 5}, {24, 256, 3, 3}, {.padding = {1, 1}}},
          {{1, 4, 8, 1000}, {8, 4, 3, 3}, {.padding = {1, 1}}},
      },
      1);
}

// Kernel shapes and options: 5x5, 7x1 and 1x7, dilation, asymmetric and wide padding, a
// kernel as large as the padded image, 1x1 padded and vertically strided (direct), 1x1
// unpadded (one GEMM per image), a horizontal stride (im2col + GEMM).
TEST(ConvCpu, KernelShapesAgainstNaive) {
  check_geometries(
      {
          {{2, 6, 12, 13}, {7, 6, 5, 5}, {.padding = {2, 2}}},
          {{1, 3, 15, 9}, {4, 3, 7, 1}, {.padding = {3, 0}}},
          {{1, 3, 9, 15}, {4, 3, 1, 7}, {.padding = {0, 3}}},
          {{2, 4, 14, 16}, {5, 4, 3, 3}, {.padding = {2, 3}, .dilation = {2, 3}}, false},
          {{1, 2, 5, 6}, {3, 2, 3, 3}, {.padding = {4, 5}}},
          {{1, 2, 4, 4}, {3, 2, 6, 6}, {.padding = {1, 1}}},
          {{2, 8, 7, 9}, {6, 8, 1, 1}, {.padding = {1, 1}}},
          {{2, 8, 7, 9}, {6, 8, 1, 1}, {.stride = {2, 1}}},
          {{2, 8, 7, 9}, {6, 8, 1, 1}, {}},
          {{2, 4, 9, 11}, {5, 4, 3, 3}, {.stride = {1, 2}, .padding = {1, 1}}},
      },
      2);
}

// Groups: two groups with a channel tail each (C_out 6 per group), depthwise (one channel
// per group: mostly tail), and groups of 8 input channels to 4 outputs.
TEST(ConvCpu, GroupsAgainstNaive) {
  check_geometries(
      {
          {{2, 4, 10, 11}, {12, 2, 3, 3}, {.padding = {1, 1}, .groups = 2}},
          {{2, 6, 9, 10}, {6, 1, 3, 3}, {.padding = {1, 1}, .groups = 6}},
          {{1, 32, 8, 8}, {16, 8, 3, 3}, {.padding = {1, 1}, .groups = 4}},
      },
      3);
}

// Many images of one band each, taken by two threads from a shared counter in whatever
// order: every image must land in its own output.
TEST(ConvCpu, ManyImagesAgainstNaive) { check_geometries({{{37, 3, 6, 7}, {5, 3, 3, 3}, {.padding = {1, 1}}}}, 4); }

// 1-D convs run as 2-D ones with H = 1: one band, tiles along the sequence.
TEST(ConvCpu, Conv1dAgainstNaive) {
  manual_seed(5);
  const Tensor x = randn(Shape{2, 6, 50}), w = randn(Shape{9, 6, 5}) * 0.5, b = randn(Shape{9});
  const Conv1dOptions o{.padding = 4, .dilation = 2};
  const Geometry g{{2, 6, 1, 50}, {9, 6, 1, 5}, {.padding = {0, 4}, .dilation = {1, 2}}};
  const Reference want = naive_conv(g, x.to(DType::F64).to_vector<double>(), w.to(DType::F64).to_vector<double>(),
                                    b.to(DType::F64).to_vector<double>());
  EXPECT_TRUE(matches_reference(conv1d(x, w, b, o), want, 30));
}

// Views: a channels-last input, an input narrowed along the batch (an offset), a permuted
// weight and a bias at an offset. The front end makes them contiguous; the values must be
// the views' values.
TEST(ConvCpu, ViewsAgainstNaive) {
  manual_seed(6);
  const Geometry g{{3, 16, 12, 13}, {24, 16, 3, 3}, {.padding = {1, 1}}};
  const Tensor x = randn(Shape(g.x)), w = randn(Shape(g.w)) * 0.5, b = randn(Shape{24});
  const Reference want = naive_conv(g, x.to(DType::F64).to_vector<double>(), w.to(DType::F64).to_vector<double>(),
                                    b.to(DType::F64).to_vector<double>());
  const Tensor x_last = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  Tensor x_offset = zeros(Shape{5, 16, 12, 13}).narrow(0, 1, 3);
  x_offset.copy_(x);
  const Tensor w_permuted = w.permute({2, 3, 1, 0}).contiguous().permute({3, 2, 0, 1});
  Tensor b_offset = zeros(Shape{25}).narrow(0, 1, 24);
  b_offset.copy_(b);
  ASSERT_FALSE(x_last.is_contiguous());
  ASSERT_FALSE(w_permuted.is_contiguous());
  ASSERT_EQ(x_offset.offset(), 16 * 12 * 13);
  EXPECT_TRUE(matches_reference(conv2d(x_last, w_permuted, b_offset, g.o), want, 144));
  EXPECT_TRUE(matches_reference(conv2d(x_offset, w, b, g.o), want, 144));
}

// The same conv on 1, 2 and 3 threads gives the same bits: each output is summed by one
// thread, in one order, whatever the split.
TEST(ConvCpu, ThreadCountDoesNotChangeResults) {
  manual_seed(7);
  const Tensor x = randn(Shape{5, 16, 20, 21}), w = randn(Shape{10, 16, 3, 3}), b = randn(Shape{10});
  const Conv2dOptions o{.padding = {1, 1}};
  const int before = cpu_num_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    set_cpu_num_threads(threads);
    results.push_back(conv2d(x, w, b, o).to_vector<float>());
  }
  set_cpu_num_threads(before);
  EXPECT_TRUE(test::bits_equal(results[1], results[0]));
  EXPECT_TRUE(test::bits_equal(results[2], results[0]));
}

}  // namespace
}  // namespace wick
