// The interface between libwick and a device backend built as a module that is loaded at
// run time: the CUDA backend is libwick_cuda.so, found beside libwick.so (ggml's
// ggml-backend-dl does the same). libwick itself has no link-time dependency on the CUDA
// runtime, cuBLAS, cuRAND or NCCL, so a CPU-only machine never loads them, and a wick
// built with CUDA still runs where the CUDA runtime is not installed.
//
// What libwick's public CUDA-facing types need from the module is here: the backends,
// DeviceEvent's events, CudaGraph's recordings and Communicator's collectives. The
// public types check their arguments in src/core and call these with them checked.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "wick/distributed.h"
#include "wick/graph.h"

namespace wick {

// A recorded CUDA graph (backend/cuda/cuda_graph.cpp).
struct CudaGraph::Impl {
  virtual ~Impl() = default;
  virtual void replay() = 0;
  virtual Device device() const = 0;
  virtual size_t node_count() const = 0;
};

// One rank's NCCL communicator (backend/cuda/nccl_communicator.cpp). Buffers are
// contiguous, of count elements of dtype on the communicator's device (checked by
// src/core/communicator.cpp); the collectives queue on that device's stream.
struct Communicator::Impl {
  virtual ~Impl() = default;
  virtual void all_reduce(void* data, size_t count, DType dtype, ReduceKind kind) = 0;
  virtual void all_gather(const void* in, void* out, size_t count, DType dtype) = 0;
  virtual void reduce_scatter(const void* in, void* out, size_t count, DType dtype, ReduceKind kind) = 0;
  virtual void broadcast(void* data, size_t count, DType dtype, int root) = 0;
};

class DeviceModule {
 public:
  virtual ~DeviceModule() = default;
  virtual int device_count() = 0;
  virtual Backend& backend(int ordinal) = 0;
  // What the module's backend runs, asked without a device (`wick info --ops`).
  virtual bool supports(OpId op, DType dtype) const = 0;

  virtual void* event_record(int ordinal) = 0;
  virtual float event_elapsed_ms(int ordinal, void* start, void* stop) = 0;
  virtual void event_destroy(int ordinal, void* event) noexcept = 0;

  virtual std::shared_ptr<CudaGraph::Impl> capture_graph(int ordinal, const std::function<void()>& record) = 0;

  virtual std::vector<std::unique_ptr<Communicator::Impl>> communicators_local(const std::vector<int>& ordinals) = 0;
  virtual NcclUniqueId communicator_unique_id() = 0;
  virtual std::unique_ptr<Communicator::Impl> communicator_join(const NcclUniqueId& id, int rank, int world_size,
                                                                int ordinal) = 0;
};

// Bumped whenever DeviceModule, Backend or the op table change: a module built against
// another libwick is refused instead of crashing.
inline constexpr int kDeviceModuleAbi = 1;

// The module's one exported symbol: returns its module, or null when abi or version
// differ from what it was built with.
extern "C" {
using DeviceModuleEntry = DeviceModule* (*)(int abi, const char* version);
}
inline constexpr const char* kCudaModuleEntry = "wick_cuda_module_entry";

// The CUDA module, loaded on first use (thread-safe); null when it is absent or could not
// be loaded, and then cuda_module_status() says why in one line.
DeviceModule* cuda_module();
std::string cuda_module_status();

}  // namespace wick
