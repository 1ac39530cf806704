// Device parameterization: every device-aware test runs on cpu and cuda:0; the cuda
// cases are skipped (reported as such) where no GPU or no CUDA build is present.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wick/wick.h"

namespace wick::test {

class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    device_ = Device::parse(GetParam());
    if (device_.is_cuda() && cuda_device_count() <= device_.index)
      GTEST_SKIP() << GetParam() << " not present (" << cuda_device_count() << " CUDA devices)";
  }
  Device dev() const { return device_; }
  Device device_;
};

inline std::string device_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (c == ':') c = '_';
  return s;
}

}  // namespace wick::test

#define WICK_INSTANTIATE_DEVICE_TEST(Suite) \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::Values("cpu", "cuda:0"), ::wick::test::device_param_name)
