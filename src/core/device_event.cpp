// wick::DeviceEvent: the host clock on the CPU (work there is synchronous), a CUDA event
// on the device's stream otherwise.
#include <chrono>

#include "backend/cuda_events.h"
#include "wick/error.h"
#include "wick/event.h"

namespace wick {

struct DeviceEvent::Impl {
  Device device;
  std::chrono::steady_clock::time_point host{};  // CPU events
  void* cuda = nullptr;                          // CUDA events
  ~Impl() {
    if (cuda) detail::cuda_event_destroy(device.index, cuda);
  }
};

DeviceEvent DeviceEvent::record(Device device) {
  DeviceEvent e;
  e.impl_ = std::make_shared<Impl>();
  e.impl_->device = device;
  if (device.is_cuda())
    e.impl_->cuda = detail::cuda_event_record(device.index);
  else
    e.impl_->host = std::chrono::steady_clock::now();
  return e;
}

double DeviceEvent::seconds_until(const DeviceEvent& later) const {
  WICK_CHECK(defined() && later.defined(), InvalidArgument, "DeviceEvent: seconds_until needs two recorded events");
  WICK_CHECK(impl_->device == later.impl_->device, InvalidArgument, "DeviceEvent: events of ", impl_->device, " and ",
             later.impl_->device, " cannot be compared");
  if (impl_->cuda)
    return 1e-3 * double(detail::cuda_event_elapsed_ms(impl_->device.index, impl_->cuda, later.impl_->cuda));
  return std::chrono::duration<double>(later.impl_->host - impl_->host).count();
}

Device DeviceEvent::device() const {
  WICK_CHECK(defined(), InvalidArgument, "DeviceEvent: empty event");
  return impl_->device;
}

}  // namespace wick
