// wick::Communicator: one-rank collectives on cuda:0 (legal NCCL, one GPU suffices),
// N-rank collectives over all local GPUs (one thread per rank) checked against
// closed-form sums, and the argument checks. Without a GPU only the host-side parts run.
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "support/golden.h"
#include "wick/distributed.h"
#include "wick/wick.h"

namespace wick {
namespace {

// A tensor with the given values, converted to dtype on the host, then moved to device.
Tensor make(const std::vector<double>& values, Shape shape, DType dtype, Device device) {
  return Tensor::from_vector(values, std::move(shape)).to(dtype).to(device);
}

std::vector<double> iota_times(int64_t n, double scale) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * double(i + 1);
  return v;
}

// The dtypes NCCL reduces; values below are small integers, exact in all of them.
const std::vector<DType> kAllDTypes = {DType::U8,   DType::U32, DType::I64, DType::F16,
                                       DType::BF16, DType::F32, DType::F64};

TEST(NcclUniqueId, HexRoundTrip) {
  NcclUniqueId id;
  for (size_t i = 0; i < NcclUniqueId::kBytes; ++i) id.bytes[i] = char(i * 37 + 11);
  const std::string hex = id.hex();
  ASSERT_EQ(hex.size(), 2 * NcclUniqueId::kBytes);
  EXPECT_EQ(hex.substr(0, 4), "0b30");  // bytes 11, 48
  EXPECT_EQ(NcclUniqueId::from_hex(hex).bytes, id.bytes);
}

TEST(NcclUniqueId, MalformedHex) {
  EXPECT_WICK_ERROR(NcclUniqueId::from_hex("abc"), InvalidArgument, "expected 256 hex digits, got 3");
  EXPECT_WICK_ERROR(NcclUniqueId::from_hex(std::string(256, 'g')), InvalidArgument, "'g' is not a hex digit");
}

TEST(Communicator, NeedsACudaDevice) {
  // CPU builds: Unsupported; CUDA builds: cpu is not a CUDA device. Either names the op.
  EXPECT_THROW(Communicator::init_local({Device::cpu()}), Error);
  try {
    Communicator::init_local({Device::cpu()});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Communicator::init_local"), std::string::npos) << e.what();
  }
  if (cuda_device_count() == 0) {
    EXPECT_THROW(Communicator::init_local({Device::cuda(0)}), Error);
  }
}

class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < 1) GTEST_SKIP() << "needs a CUDA device (" << cuda_device_count() << " present)";
  }
};

TEST_F(OneRank, CollectivesAreTheIdentity) {
  const Device dev = Device::cuda(0);
  std::vector<Communicator> comms = Communicator::init_local({dev});
  ASSERT_EQ(comms.size(), 1u);
  Communicator& c = comms[0];
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.world_size(), 1);
  EXPECT_EQ(c.device(), dev);
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7};  // odd length
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor t = make(v, {7}, dt, dev);
    c.all_reduce(t, ReduceKind::Sum);
    EXPECT_EQ(t.to_vector<double>(), v);
    c.all_reduce(t, ReduceKind::Max);
    EXPECT_EQ(t.to_vector<double>(), v);
    Tensor g = c.all_gather(t);
    EXPECT_EQ(g.shape(), Shape({7}));
    EXPECT_EQ(g.dtype(), dt);
    EXPECT_EQ(g.to_vector<double>(), v);
    Tensor r = c.reduce_scatter(t, ReduceKind::Sum);
    EXPECT_EQ(r.shape(), Shape({7}));
    EXPECT_EQ(r.to_vector<double>(), v);
    c.broadcast(t, 0);
    EXPECT_EQ(t.to_vector<double>(), v);
  }
}

TEST_F(OneRank, UniqueIdConstructorAndEmptyTensors) {
  const Device dev = Device::cuda(0);
  Communicator c(Communicator::unique_id(), 0, 1, dev);
  EXPECT_EQ(c.world_size(), 1);
  Tensor t = make({1.5, -2.5, 3.0, 4.0, 5.0, 6.0}, {2, 3}, DType::F32, dev);
  Tensor g = c.all_gather(t);
  EXPECT_EQ(g.shape(), Shape({2, 3}));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1.5f, -2.5f, 3.f, 4.f, 5.f, 6.f}));
  Tensor empty = Tensor::empty({0, 3}, DType::F32, dev);
  c.all_reduce(empty, ReduceKind::Sum);
  EXPECT_EQ(c.all_gather(empty).shape(), Shape({0, 3}));
  EXPECT_EQ(c.reduce_scatter(empty, ReduceKind::Max).shape(), Shape({0, 3}));
  // A moved-from communicator refuses work instead of crashing.
  Communicator moved = std::move(c);
  EXPECT_WICK_ERROR(c.all_reduce(t, ReduceKind::Sum), InvalidArgument, "moved from");
  moved.all_reduce(t, ReduceKind::Sum);
  EXPECT_EQ(t.to_vector<float>()[0], 1.5f);
}

TEST_F(OneRank, BadInputs) {
  const Device dev = Device::cuda(0);
  std::vector<Communicator> comms = Communicator::init_local({dev});
  Communicator& c = comms[0];
  Tensor cpu = make({1, 2, 3, 4}, {2, 2}, DType::F32, Device::cpu());
  EXPECT_WICK_ERROR(c.all_reduce(cpu, ReduceKind::Sum), DeviceMismatch, "all_reduce: tensor f32 [2, 2] is on cpu");
  EXPECT_WICK_ERROR(c.all_gather(cpu), DeviceMismatch, "the communicator (rank 0) on cuda:0");
  Tensor gpu = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::F32, dev);
  Tensor transposed = gpu.t();
  EXPECT_WICK_ERROR(c.all_reduce(transposed, ReduceKind::Sum), InvalidArgument,
                    "all_reduce: tensor f32 [3, 2] on cuda:0 is not contiguous");
  EXPECT_WICK_ERROR(c.reduce_scatter(transposed, ReduceKind::Sum), InvalidArgument, "reduce_scatter");
  Tensor scalar = make({1}, {}, DType::F32, dev);
  EXPECT_WICK_ERROR(c.all_gather(scalar), InvalidArgument, "all_gather: input f32 [] has rank 0");
  EXPECT_WICK_ERROR(c.broadcast(gpu, 1), InvalidArgument, "broadcast: root 1 outside world size 1");
  EXPECT_WICK_ERROR(Communicator(Communicator::unique_id(), 1, 1, dev), InvalidArgument, "rank 1 outside world size 1");
  EXPECT_WICK_ERROR(Communicator::init_local({dev, dev}), InvalidArgument, "cuda:0 listed twice");
  EXPECT_WICK_ERROR(Communicator::init_local({Device::cuda(cuda_device_count())}), InvalidArgument, "not present");
}

// ---- several GPUs, one thread per rank ------------------------------------------------

class MultiRank : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < 2)
      GTEST_SKIP() << "needs >= 2 CUDA devices for a multi-rank communicator (" << cuda_device_count() << " present)";
  }
};

// What each rank observed, compared on the main thread after the join.
struct RankResult {
  std::vector<double> sum, max, gathered, scattered, broadcast;
  std::string error;
};

TEST_F(MultiRank, CollectivesMatchClosedForms) {
  const int n = cuda_device_count();
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(Device::cuda(i));
  std::vector<Communicator> comms = Communicator::init_local(devices);
  ASSERT_EQ(int(comms.size()), n);
  const int64_t rows = 2, cols = 3, len = rows * cols;  // per-rank input [2, 3]
  const double tri = double(n) * (n + 1) / 2;           // sum of (r + 1) over ranks
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    std::vector<RankResult> results(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          Communicator& c = comms[size_t(r)];
          const Device dev = c.device();
          RankResult& out = results[size_t(r)];
          // Rank r holds (r + 1) * (i + 1): sum = tri * (i + 1), max = n * (i + 1).
          Tensor x = make(iota_times(len, r + 1), {rows, cols}, dt, dev);
          c.all_reduce(x, ReduceKind::Sum);
          out.sum = x.to_vector<double>();
          Tensor y = make(iota_times(len, r + 1), {rows, cols}, dt, dev);
          c.all_reduce(y, ReduceKind::Max);
          out.max = y.to_vector<double>();
          Tensor own = make(iota_times(len, r + 1), {rows, cols}, dt, dev);
          Tensor g = c.all_gather(own);
          if (g.shape() != Shape({n * rows, cols})) out.error = "all_gather shape " + g.shape().to_string();
          out.gathered = g.to_vector<double>();
          // reduce_scatter input [n * 2, 3]: rank r holds (r + 1) * (j + 1) at flat index j.
          Tensor big = make(iota_times(n * len, r + 1), {n * rows, cols}, dt, dev);
          Tensor s = c.reduce_scatter(big, ReduceKind::Sum);
          if (s.shape() != Shape({rows, cols})) out.error = "reduce_scatter shape " + s.shape().to_string();
          out.scattered = s.to_vector<double>();
          Tensor b = make(iota_times(len, r + 1), {rows, cols}, dt, dev);
          c.broadcast(b, n - 1);
          out.broadcast = b.to_vector<double>();
        } catch (const std::exception& e) {
          results[size_t(r)].error = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      const RankResult& res = results[size_t(r)];
      ASSERT_EQ(res.error, "");
      EXPECT_EQ(res.sum, iota_times(len, tri));
      EXPECT_EQ(res.max, iota_times(len, n));
      std::vector<double> gathered;
      for (int q = 0; q < n; ++q)
        for (double v : iota_times(len, q + 1)) gathered.push_back(v);
      EXPECT_EQ(res.gathered, gathered);
      std::vector<double> chunk;
      for (int64_t j = r * len; j < (r + 1) * len; ++j) chunk.push_back(tri * double(j + 1));
      EXPECT_EQ(res.scattered, chunk);
      EXPECT_EQ(res.broadcast, iota_times(len, n));
    }
  }
}

TEST_F(MultiRank, WrongDeviceAndIndivisibleScatter) {
  std::vector<Communicator> comms = Communicator::init_local({Device::cuda(0), Device::cuda(1)});
  Tensor on1 = make({1, 2, 3}, {3}, DType::F32, Device::cuda(1));
  // Both fail in the argument checks, before any NCCL call, so one thread may do this.
  EXPECT_WICK_ERROR(comms[0].all_reduce(on1, ReduceKind::Sum), DeviceMismatch,
                    "all_reduce: tensor f32 [3] is on cuda:1, the communicator (rank 0) on cuda:0");
  EXPECT_WICK_ERROR(comms[1].reduce_scatter(on1, ReduceKind::Sum), ShapeMismatch,
                    "reduce_scatter: dim 0 of [3] is not divisible by the world size 2");
}

}  // namespace
}  // namespace wick
