// CudaGraph on the CUDA backend: stream capture on the device's one stream, the caching
// allocator's private pool for the memory the recording uses, cudaGraphExec for replay.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "wick/graph.h"

namespace wick {

struct CudaGraph::Impl {
  CudaBackend* backend = nullptr;
  int pool = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;

  ~Impl() {
    backend->activate();
    // A replay may still be running: let it finish before its memory changes hands.
    cudaStreamSynchronize(backend->stream());
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    backend->release_graph_pool(pool);
  }
};

CudaGraph CudaGraph::capture(Device device, const std::function<void()>& record) {
  WICK_CHECK(device.is_cuda(), InvalidArgument, "cuda graph: capture needs a CUDA device, got ", device);
  auto impl = std::make_shared<Impl>();
  CudaBackend& b = cuda_backend_impl(device.index);
  impl->backend = &b;
  impl->pool = b.begin_capture();
  try {
    record();
  } catch (...) {
    if (cudaGraph_t g = b.end_capture()) cudaGraphDestroy(g);
    throw;  // impl's destructor gives the pool back
  }
  impl->graph = b.end_capture();
  WICK_CHECK(impl->graph, Device, "cuda graph: the capture on ", device,
             " was invalidated (an operation that cannot be recorded ran during it)");
  WICK_CUDA_CHECK(cudaGraphGetNodes(impl->graph, nullptr, &impl->nodes));
  WICK_CUDA_CHECK(cudaGraphInstantiate(&impl->exec, impl->graph, 0));
  CudaGraph g;
  g.impl_ = std::move(impl);
  return g;
}

void CudaGraph::replay() const {
  WICK_CHECK(impl_, InvalidArgument, "cuda graph: replay() of an empty graph (capture one first)");
  impl_->backend->activate();
  WICK_CUDA_CHECK(cudaGraphLaunch(impl_->exec, impl_->backend->stream()));
}

Device CudaGraph::device() const {
  WICK_CHECK(impl_, InvalidArgument, "cuda graph: device() of an empty graph");
  return impl_->backend->device();
}

size_t CudaGraph::node_count() const { return impl_ ? impl_->nodes : 0; }

}  // namespace wick
