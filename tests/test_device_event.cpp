// DeviceEvent: the device time between two recorded points covers the work queued
// between them (a longer queue takes longer), never runs backwards, and misuse is a clear
// error. CUDA cases are skipped without a GPU.
#include <chrono>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/event.h"
#include "wick/graph.h"

namespace wick {
namespace {

class DeviceEventTest : public test::DeviceTest {};

TEST_P(DeviceEventTest, MeasuresTheWorkQueuedBetweenTwoPoints) {
  const Tensor x = randn(Shape{1 << 20}, DType::F32, dev());
  auto time = [&](int ops) {
    synchronize(dev());
    const DeviceEvent start = DeviceEvent::record(dev());
    Tensor y = x;
    for (int i = 0; i < ops; ++i) y = exp(y * Scalar(0.5));
    return start.seconds_until(DeviceEvent::record(dev()));
  };
  (void)time(2);  // warm-up
  const double none = time(0), few = time(5);
  const auto t0 = std::chrono::steady_clock::now();
  const double many = time(200);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(none, 0.0);
  EXPECT_GT(few, 0.0);
  EXPECT_GT(many, few);  // 400 passes over 4 MB against 10
  // Seconds, not another unit: no more than the wall-clock time around it (however slow the
  // build or busy the machine: a sanitizer build takes tens of seconds here).
  EXPECT_LE(many, wall * 1.05 + 1e-3) << wall;
  const DeviceEvent e = DeviceEvent::record(dev());
  EXPECT_EQ(e.device(), dev());
  EXPECT_EQ(e.seconds_until(e), 0.0);
}

TEST_P(DeviceEventTest, MisuseIsAClearError) {
  const DeviceEvent empty, e = DeviceEvent::record(dev());
  EXPECT_FALSE(empty.defined());
  EXPECT_WICK_ERROR(empty.seconds_until(e), InvalidArgument, "two recorded events");
  EXPECT_WICK_ERROR(e.seconds_until(empty), InvalidArgument, "two recorded events");
  EXPECT_WICK_ERROR((void)empty.device(), InvalidArgument, "empty event");
  if (dev().is_cuda()) {
    const DeviceEvent cpu = DeviceEvent::record(Device::cpu());
    EXPECT_WICK_ERROR(cpu.seconds_until(e), InvalidArgument, "cannot be compared");
    EXPECT_WICK_ERROR(CudaGraph::capture(dev(), [&] { (void)DeviceEvent::record(dev()); }), InvalidArgument,
                      "capture is open");
    // The failed capture left the device usable.
    EXPECT_GE(e.seconds_until(DeviceEvent::record(dev())), 0.0);
  }
}

TEST(DeviceEventCuda, AnAbsentDeviceIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW((void)DeviceEvent::record(Device::parse("cuda:0")), Error);
}

WICK_INSTANTIATE_DEVICE_TEST(DeviceEventTest);

}  // namespace
}  // namespace wick
