// CudaGraph: recorded ops replay with the values their inputs hold at replay time; memory
// used inside a capture is never handed to work outside the graph while the graph lives;
// anything that waits for the device inside a capture is a clean error that leaves the
// device usable. The CUDA cases are skipped without a GPU; the CPU and no-CUDA behaviour
// (clear errors) runs everywhere.
#include <cmath>
#include <vector>

#include "support/golden.h"
#include "wick/graph.h"
#include "wick/memory.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick {
namespace {

class CudaGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device";
    dev_ = Device::parse("cuda:0");
  }
  Tensor on_dev(std::vector<float> v, Shape s) const {
    return Tensor::from_vector(std::move(v), std::move(s)).to(dev_);
  }
  static std::vector<float> host(const Tensor& t) { return t.to(Device::cpu()).to_vector<float>(); }
  Device dev_;
};

TEST_F(CudaGraphTest, ReplayUsesCurrentInputValues) {
  Tensor x = on_dev({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor w = on_dev({1, 0, 2, 0, 1, 0}, Shape{2, 3});  // linear: (out 2, in 3)
  Tensor y;
  const CudaGraph g = CudaGraph::capture(dev_, [&] { y = relu(linear(x, w) - Scalar(5.0)) * x.narrow(1, 0, 2); });
  EXPECT_TRUE(g.defined());
  EXPECT_GE(g.node_count(), 4u);  // matmul, sub, relu, mul (plus fills)
  g.replay();
  // x @ w^T = [[7, 2], [16, 5]]; minus 5, relu: [[2, 0], [11, 0]]; times x[:, :2].
  EXPECT_EQ(host(y), (std::vector<float>{2, 0, 44, 0}));
  x.copy_(on_dev({0, 0, 4, 1, 1, 1}, Shape{2, 3}));  // x @ w^T = [[8, 0], [3, 1]]
  g.replay();
  EXPECT_EQ(host(y), (std::vector<float>{0, 0, 0, 0}));
  x.copy_(on_dev({3, 0, 4, 1, 1, 1}, Shape{2, 3}));  // [[11, 0], [3, 1]] -> [[6, 0], [0, 0]] * x
  g.replay();
  g.replay();  // replaying twice gives the same result: the recording has no hidden state
  EXPECT_EQ(host(y), (std::vector<float>{18, 0, 0, 0}));
}

TEST_F(CudaGraphTest, MatchesEagerOnATransformerBlock) {
  manual_seed(7);
  const Tensor x = randn(Shape{2, 5, 32}, DType::F32, dev_);
  const Tensor w1 = randn(Shape{64, 32}, DType::F32, dev_) * Scalar(0.2), b1 = randn(Shape{64}, DType::F32, dev_);
  const Tensor w2 = randn(Shape{32, 64}, DType::F32, dev_) * Scalar(0.2);
  const Tensor lw = ones(Shape{32}, DType::F32, dev_), lb = zeros(Shape{32}, DType::F32, dev_);
  auto block = [&] {
    const Tensor h = layer_norm(x, lw, lb, 1e-5);
    const Tensor q = h.reshape({2, 5, 4, 8}).permute({0, 2, 1, 3});
    AttentionOptions o;
    o.causal = true;
    const Tensor a = scaled_dot_product_attention(q, q, q, {}, o).permute({0, 2, 1, 3}).reshape({2, 5, 32});
    return linear(gelu(linear(a + x, w1, b1)), w2) + x;
  };
  const std::vector<float> eager = host(block());
  Tensor y;
  const CudaGraph g = CudaGraph::capture(dev_, [&] { y = softmax(block()); });
  g.replay();
  const std::vector<float> want = host(softmax(Tensor::from_vector(eager, Shape{2, 5, 32}).to(dev_)));
  EXPECT_EQ(host(y), want);  // the same kernels on the same values: bit-identical
}

TEST_F(CudaGraphTest, CaptureMemoryIsNotReusedOutsideTheGraph) {
  const Tensor x = on_dev({1, 2, 3, 4}, Shape{4});
  Tensor before = on_dev({9, 9, 9, 9}, Shape{4}) * Scalar(1.0);  // freed inside the capture
  Tensor y;
  const CudaGraph g = CudaGraph::capture(dev_, [&] {
    const Tensor scratch = x * Scalar(2.0) + before;  // reads `before`, then drops it
    before = Tensor();
    y = scratch + Scalar(1.0);
  });
  // Eager tensors allocated now must not share memory with the graph's scratch or with the
  // block `before` released during the capture.
  std::vector<Tensor> eager;
  for (int i = 0; i < 16; ++i) eager.push_back(full(Shape{4}, 100.0 + i, DType::F32, dev_));
  g.replay();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(host(eager[size_t(i)]), std::vector<float>(4, float(100 + i))) << i;
  // `before` still held 9s when the graph's kernels captured its address.
  EXPECT_EQ(host(y), (std::vector<float>{12, 14, 16, 18}));
}

TEST_F(CudaGraphTest, ReleasedGraphGivesItsMemoryBack) {
  const Tensor x = on_dev(std::vector<float>(1 << 20, 1.0f), Shape{1 << 20});
  synchronize(dev_);
  size_t reserved_after_first = 0;
  for (int round = 0; round < 4; ++round) {
    {
      Tensor y;
      const CudaGraph g = CudaGraph::capture(dev_, [&] { y = exp(x) * x + x; });
      g.replay();
      EXPECT_NEAR(host(y)[12345], std::exp(1.0f) + 1.0f, 1e-6);
    }
    if (round == 0) reserved_after_first = memory_stats(dev_).reserved_bytes;
  }
  // Later rounds reuse the memory the first graph gave back instead of reserving more.
  EXPECT_EQ(memory_stats(dev_).reserved_bytes, reserved_after_first);
}

TEST_F(CudaGraphTest, WaitingInsideACaptureIsAnErrorAndTheDeviceStillWorks) {
  const Tensor x = on_dev({1, 2}, Shape{2});
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_, [&] { (void)(x + x).to(Device::cpu()); }), InvalidArgument,
                    "while cuda:0 is capturing a graph");
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_, [&] { (void)Tensor::from_vector<float>({1}, Shape{1}).to(dev_); }),
                    InvalidArgument, "copying host memory to the device");
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_, [&] { synchronize(dev_); }), InvalidArgument, "synchronize()");
  // An exception from the recorded function passes through; the capture is closed.
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_,
                                       [&] {
                                         (void)add(x, on_dev({1, 2, 3}, Shape{3}));
                                       }),
                    InvalidArgument, "copying host memory");
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_, [&] { (void)add(x, zeros(Shape{3}, DType::F32, dev_)); }), ShapeMismatch,
                    "add");
  EXPECT_EQ(host(x + x), (std::vector<float>{2, 4}));
  Tensor y;
  const CudaGraph g = CudaGraph::capture(dev_, [&] { y = x * x; });
  g.replay();
  EXPECT_EQ(host(y), (std::vector<float>{1, 4}));
}

TEST_F(CudaGraphTest, NeedsTheCachingAllocator) {
  set_allocator(dev_, AllocatorKind::AsyncPool);
  const Tensor x = on_dev({1}, Shape{1});
  EXPECT_WICK_ERROR(CudaGraph::capture(dev_, [&] { (void)(x + x); }), Unsupported, "caching allocator");
  set_allocator(dev_, AllocatorKind::Caching);
}

TEST(CudaGraphErrors, WithoutACudaDevice) {
  EXPECT_WICK_ERROR(CudaGraph::capture(Device::cpu(), [] {}), InvalidArgument, "needs a CUDA device");
  const CudaGraph empty;
  EXPECT_FALSE(empty.defined());
  EXPECT_EQ(empty.node_count(), 0u);
  EXPECT_WICK_ERROR(empty.replay(), InvalidArgument, "empty graph");
  if (cuda_device_count() == 0 && !build_info().cuda)
    EXPECT_WICK_ERROR(CudaGraph::capture(Device::parse("cuda:0"), [] {}), Unsupported, "without");
}

}  // namespace
}  // namespace wick
