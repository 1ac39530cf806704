// The CUDA caching allocator under pressure: out-of-memory errors (asking for more than
// the card has, or more than set_memory_limit allows) are clean wick::Errors naming the
// requested and free bytes, release the cache, and leave the device working; the
// statistics in memory_stats() track reuse, peaks and empty_cache. Runs on cuda:0 only
// (skipped elsewhere). Each test restores the allocator's global settings.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/golden.h"
#include "wick/memory.h"
#include "wick/ops.h"

namespace wick {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

class CudaMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device";
    dev_ = Device::parse("cuda:0");
    synchronize(dev_);
    empty_cache(dev_);
  }
  void TearDown() override {
    if (cuda_device_count() < 1) return;
    set_memory_limit(dev_, 0);
    set_allocator(dev_, AllocatorKind::Caching);
    synchronize(dev_);
    empty_cache(dev_);
  }
  // A small op whose result we know: the device still works.
  void expect_device_works() const {
    const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2}).to(dev_);
    EXPECT_EQ(add(a, a).to(Device::cpu()).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
    EXPECT_EQ(matmul(a, a).to(Device::cpu()).to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  }
  Device dev_;
};

std::string oom_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected ErrorKind::OutOfMemory";
  return {};
}

TEST_F(CudaMemory, MoreThanTheCardHasFailsCleanlyAndReleasesTheCache) {
  // Leave something in the cache: a freed 64 MiB block stays reserved.
  { const Tensor t = Tensor::empty(Shape{int64_t(64 * kMiB)}, DType::U8, dev_); }
  synchronize(dev_);
  const MemoryStats before = memory_stats(dev_);
  EXPECT_GE(before.reserved_bytes, before.allocated_bytes + 64 * kMiB);

  const int64_t four_tb = int64_t(4) << 40;
  const std::string msg = oom_message([&] { (void)Tensor::empty(Shape{four_tb}, DType::U8, dev_); });
  EXPECT_NE(msg.find(std::to_string(four_tb) + " bytes"), std::string::npos) << msg;  // requested
  EXPECT_NE(msg.find("bytes free"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;

  const MemoryStats after = memory_stats(dev_);
  EXPECT_GT(after.oom_retries, before.oom_retries);
  EXPECT_LE(after.reserved_bytes + 64 * kMiB, before.reserved_bytes) << "the cached 64 MiB were not released";
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  expect_device_works();

  // f64 elements: 4 TB / 8 elements, the byte count is what the message names.
  const std::string msg64 = oom_message([&] { (void)Tensor::empty(Shape{four_tb / 8}, DType::F64, dev_); });
  EXPECT_NE(msg64.find(std::to_string(four_tb) + " bytes"), std::string::npos) << msg64;
  expect_device_works();
}

TEST_F(CudaMemory, HugeSizesDoNotOverflowTheRounding) {
  // Byte counts near the top of size_t must not wrap to a small allocation.
  for (int64_t n : {int64_t(1) << 62, (int64_t(1) << 62) - 1, INT64_MAX / 2 + 1}) {
    SCOPED_TRACE(n);
    const std::string msg = oom_message([&] { (void)Tensor::empty(Shape{n}, DType::U8, dev_); });
    EXPECT_NE(msg.find(std::to_string(n) + " bytes"), std::string::npos) << msg;
  }
  // Element counts whose byte size overflows int64 are rejected before the allocator.
  EXPECT_THROW((void)Tensor::empty(Shape{INT64_MAX / 4}, DType::F64, dev_), Error);
  expect_device_works();
}

TEST_F(CudaMemory, MemoryLimitIsEnforcedAndCanBeLifted) {
  set_memory_limit(dev_, 512 * kMiB);
  EXPECT_EQ(memory_stats(dev_).limit_bytes, 512 * kMiB);
  const std::string msg = oom_message([&] { (void)Tensor::empty(Shape{int64_t(1024 * kMiB)}, DType::U8, dev_); });
  EXPECT_NE(msg.find("limit " + std::to_string(512 * kMiB)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(1024 * kMiB) + " bytes"), std::string::npos) << msg;
  // Under the limit still works.
  { const Tensor small = Tensor::empty(Shape{int64_t(64 * kMiB)}, DType::U8, dev_); }
  expect_device_works();

  set_memory_limit(dev_, 0);
  EXPECT_EQ(memory_stats(dev_).limit_bytes, 0u);
  Tensor big = Tensor::empty(Shape{int64_t(1024 * kMiB)}, DType::U8, dev_);
  big.fill_(Scalar(3));
  EXPECT_EQ(big.narrow(0, int64_t(1024 * kMiB) - 2, 2).to(Device::cpu()).to_vector<uint8_t>(),
            (std::vector<uint8_t>{3, 3}));
}

TEST_F(CudaMemory, FreedBlocksAreReusedFromTheCache) {
  const Shape shape{int64_t(kMiB / 4)};  // 1 MiB of f32: the small pool's largest size
  { const Tensor warm = Tensor::empty(shape, DType::F32, dev_); }
  const MemoryStats s0 = memory_stats(dev_);
  for (int i = 0; i < 10; ++i) {
    const Tensor t = Tensor::empty(shape, DType::F32, dev_);
  }
  const MemoryStats s1 = memory_stats(dev_);
  EXPECT_EQ(s1.driver_allocations, s0.driver_allocations);
  EXPECT_GE(s1.cache_hits, s0.cache_hits + 10);
  EXPECT_GE(s1.allocations, s0.allocations + 10);

  // Large blocks (> 1 MiB) are cached too.
  { const Tensor warm = Tensor::empty(Shape{int64_t(16 * kMiB)}, DType::U8, dev_); }
  const MemoryStats s2 = memory_stats(dev_);
  for (int i = 0; i < 5; ++i) {
    const Tensor t = Tensor::empty(Shape{int64_t(16 * kMiB)}, DType::U8, dev_);
  }
  const MemoryStats s3 = memory_stats(dev_);
  EXPECT_EQ(s3.driver_allocations, s2.driver_allocations);
  EXPECT_GE(s3.cache_hits, s2.cache_hits + 5);
}

TEST_F(CudaMemory, PeakTrackingAndEmptyCache) {
  const size_t base = memory_stats(dev_).allocated_bytes;
  reset_peak_memory(dev_);
  EXPECT_EQ(memory_stats(dev_).peak_allocated_bytes, base);
  {
    const Tensor a = Tensor::empty(Shape{int64_t(8 * kMiB)}, DType::U8, dev_);
    const Tensor b = Tensor::empty(Shape{int64_t(8 * kMiB)}, DType::U8, dev_);
    EXPECT_GE(memory_stats(dev_).allocated_bytes, base + 16 * kMiB);
  }
  const MemoryStats after = memory_stats(dev_);
  EXPECT_EQ(after.allocated_bytes, base);
  EXPECT_GE(after.peak_allocated_bytes, base + 16 * kMiB);
  EXPECT_LT(after.peak_allocated_bytes, base + 20 * kMiB);
  EXPECT_GE(after.reserved_bytes, base + 16 * kMiB);  // still cached

  synchronize(dev_);
  empty_cache(dev_);
  const MemoryStats emptied = memory_stats(dev_);
  EXPECT_GT(emptied.driver_frees, after.driver_frees);
  // Only segments holding live blocks stay reserved.
  EXPECT_LE(emptied.reserved_bytes, emptied.allocated_bytes + 2 * kMiB);
  if (emptied.allocated_bytes == 0) {
    EXPECT_EQ(emptied.reserved_bytes, 0u);
  }
  reset_peak_memory(dev_);
  EXPECT_EQ(memory_stats(dev_).peak_allocated_bytes, emptied.allocated_bytes);
}

TEST_F(CudaMemory, AsyncPoolAllocatorRunsOps) {
  set_allocator(dev_, AllocatorKind::AsyncPool);
  const uint64_t before = memory_stats(dev_).allocations;
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}).to(dev_);
  const Tensor b = ones({2, 3}, DType::F32, dev_);
  EXPECT_EQ(add(a, b).to(Device::cpu()).to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(sum(a, {1}).to(Device::cpu()).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_GT(memory_stats(dev_).allocations, before);
  // Blocks from the pool stay valid after switching back.
  set_allocator(dev_, AllocatorKind::Caching);
  EXPECT_EQ(mul(a, a).to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  // Out of memory through the pool is clean too.
  set_allocator(dev_, AllocatorKind::AsyncPool);
  const std::string msg = oom_message([&] { (void)Tensor::empty(Shape{int64_t(4) << 40}, DType::U8, dev_); });
  EXPECT_NE(msg.find("bytes free"), std::string::npos) << msg;
  expect_device_works();
}

TEST(CudaMemoryCpu, StatisticsAreZeroOnTheCpu) {
  const MemoryStats s = memory_stats(Device::cpu());
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.driver_allocations, 0u);
  set_memory_limit(Device::cpu(), kMiB);                                  // does nothing on the cpu
  const Tensor t = Tensor::empty(Shape{int64_t(16 * kMiB)}, DType::F32);  // 64 MiB
  EXPECT_EQ(t.numel(), int64_t(16 * kMiB));
  set_memory_limit(Device::cpu(), 0);
}

}  // namespace
}  // namespace wick
