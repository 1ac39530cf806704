// CudaGraph's front end: argument checks here, the recording in the CUDA module
// (backend/cuda/cuda_graph.cpp).
#include "wick/graph.h"

#include "backend/device_module.h"

namespace wick {

CudaGraph CudaGraph::capture(Device device, const std::function<void()>& record) {
  WICK_CHECK(device.is_cuda(), InvalidArgument, "cuda graph: capture needs a CUDA device, got ", device);
  DeviceModule* m = cuda_module();
  WICK_CHECK(m, Unsupported, "cuda graph: capture on ", device, " needs the CUDA backend, which is not available (",
             cuda_module_status(), ")");
  backend_for(device);  // raises Device for an ordinal that is not present
  CudaGraph g;
  g.impl_ = m->capture_graph(device.index, record);
  return g;
}

void CudaGraph::replay() const {
  WICK_CHECK(impl_, InvalidArgument, "cuda graph: replay() of an empty graph (capture one first)");
  impl_->replay();
}

Device CudaGraph::device() const {
  WICK_CHECK(impl_, InvalidArgument, "cuda graph: device() of an empty graph");
  return impl_->device();
}

size_t CudaGraph::node_count() const { return impl_ ? impl_->node_count() : 0; }

}  // namespace wick
