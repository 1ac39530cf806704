// CudaGraph's recordings in the CUDA module: stream capture on the device's one stream, the caching
// allocator's private pool for the memory the recording uses, cudaGraphExec for replay.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_module_parts.h"

namespace wick {

namespace {

class GraphRecording final : public CudaGraph::Impl {
 public:
  CudaBackend* backend = nullptr;
  int pool = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;

  ~GraphRecording() override {
    backend->activate();
    // A replay may still be running: let it finish before its memory changes hands.
    cudaStreamSynchronize(backend->stream());
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    backend->release_graph_pool(pool);
  }
  void replay() override {
    backend->activate();
    WICK_CUDA_CHECK(cudaGraphLaunch(exec, backend->stream()));
  }
  Device device() const override { return backend->device(); }
  size_t node_count() const override { return nodes; }
};

}  // namespace

namespace cuda {

std::shared_ptr<CudaGraph::Impl> capture_graph(int ordinal, const std::function<void()>& record) {
  auto impl = std::make_shared<GraphRecording>();
  CudaBackend& b = cuda_backend_impl(ordinal);
  impl->backend = &b;
  impl->pool = b.begin_capture();
  try {
    record();
  } catch (...) {
    if (cudaGraph_t g = b.end_capture()) cudaGraphDestroy(g);
    throw;  // impl's destructor gives the pool back
  }
  impl->graph = b.end_capture();
  WICK_CHECK(impl->graph, Device, "cuda graph: the capture on ", b.device(),
             " was invalidated (an operation that cannot be recorded ran during it)");
  WICK_CUDA_CHECK(cudaGraphGetNodes(impl->graph, nullptr, &impl->nodes));
  WICK_CUDA_CHECK(cudaGraphInstantiate(&impl->exec, impl->graph, 0));
  return impl;
}

}  // namespace cuda

}  // namespace wick
