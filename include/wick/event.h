// Device timing points, like torch.cuda.Event: the time between two points of a device's
// queue of work, as the device saw it (launch and synchronize costs on the host side are
// not counted, except where the device sat idle waiting for work).
//
//   auto start = DeviceEvent::record(cuda);
//   y = model(x);                                    // queued, not finished
//   auto stop = DeviceEvent::record(cuda);
//   double s = start.seconds_until(stop);            // waits for stop, then reads
//
// On the CPU, where wick's work is finished when a call returns, an event is the host
// clock. On CUDA it is an event recorded on the device's stream; recording one inside a
// CudaGraph capture raises InvalidArgument.
#pragma once

#include <memory>

#include "wick/device.h"

namespace wick {

class DeviceEvent {
 public:
  DeviceEvent() = default;  // empty: seconds_until raises InvalidArgument

  // Marks the point the device's queue has reached (everything queued so far).
  static DeviceEvent record(Device device);

  // Seconds from this point to `later` (recorded afterwards on the same device); waits
  // until the device has reached `later`.
  double seconds_until(const DeviceEvent& later) const;

  bool defined() const { return impl_ != nullptr; }
  Device device() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace wick
