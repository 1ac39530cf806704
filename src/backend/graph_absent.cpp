// CudaGraph when the CUDA backend is not compiled: capture raises Unsupported.
#include "wick/error.h"
#include "wick/graph.h"

namespace wick {

struct CudaGraph::Impl {};

CudaGraph CudaGraph::capture(Device device, const std::function<void()>&) {
  WICK_CHECK(device.is_cuda(), InvalidArgument, "cuda graph: capture needs a CUDA device, got ", device);
  fail(ErrorKind::Unsupported, "cuda graph: capture on ", device,
       " needs the CUDA backend, and wick was built without it");
}
void CudaGraph::replay() const {
  fail(ErrorKind::InvalidArgument, "cuda graph: replay() of an empty graph (capture one first)");
}
Device CudaGraph::device() const { fail(ErrorKind::InvalidArgument, "cuda graph: device() of an empty graph"); }
size_t CudaGraph::node_count() const { return 0; }

}  // namespace wick
