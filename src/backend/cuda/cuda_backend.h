// The CUDA backend: one instance per device ordinal, with its own stream on which all
// work is ordered. Launches are asynchronous; reading values back waits. Kernels live in
// kernels_*.cu, one generic kernel per op family.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "backend/cuda/caching_allocator.h"

namespace wick {

// Where kernels report the first bad index they meet; checked at synchronization.
struct DeviceErrorRecord {
  int32_t flag;   // 0: none
  int32_t op;     // IndexOpId
  int64_t value;  // the bad index
  int64_t bound;  // the size it had to be below
};
enum class IndexOpId : int32_t {
  None,
  IndexSelect,
  Gather,
  Scatter,
  ScatterAdd,
  IndexAdd,
  Embedding,
  CacheAttentionSlot,
  CacheAttentionLength,
  CacheWriteSlot,
  CacheWritePosition,
  MulMatId
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;

  Device device() const override { return Device::cuda(ordinal_); }
  std::string name() const override;
  DeviceInfo info() const override;

  std::shared_ptr<Allocation> allocate(size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, size_t nbytes) override;
  void synchronize() override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void reset_peak_memory() override { allocator_.reset_peak(); }
  void empty_cache() override { allocator_.empty_cache(); }
  void set_memory_limit(size_t bytes) override { allocator_.set_limit(bytes); }
  void set_allocator(AllocatorKind kind) override { allocator_.set_kind(kind); }

  WICK_BACKEND_OVERRIDES

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  int sm_count() const { return props_.multiProcessorCount; }
  // Makes this backend's device current on the calling thread.
  void activate() const;
  cublasHandle_t cublas();
  cublasLtHandle_t cublaslt();
  void* cublas_workspace() const { return workspace_; }
  static constexpr size_t kCublasWorkspace = 32u << 20;  // 32 MiB, as PyTorch on Hopper
  curandGenerator_t curand();
  DeviceErrorRecord* error_record() const { return error_record_; }
  // A temporary device buffer (from the caching allocator) freed when the handle dies.
  std::shared_ptr<void> scratch(size_t nbytes);
  // Throws the first error a kernel recorded since the last check (after a sync).
  void check_device_errors();

  // CUDA-graph capture of the work queued on this device's stream (used by CudaGraph in
  // cuda_graph.cpp). begin_capture opens the stream capture and the allocator's private
  // pool (returns its id); end_capture closes both and returns the recorded graph (null
  // when the capture was invalidated). While capturing, anything that waits for the
  // device (reading values back, host transfers, synchronize) raises InvalidArgument.
  int begin_capture();
  cudaGraph_t end_capture();
  void release_graph_pool(int id) { allocator_.release_private_pool(id); }
  bool capturing() const { return capturing_; }

 private:
  void fail_if_capturing(const char* what) const;

  int ordinal_;
  bool capturing_ = false;
  cudaStream_t stream_ = nullptr;
  cudaDeviceProp props_{};
  cuda::CachingAllocator allocator_;
  std::mutex handle_mu_;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  curandGenerator_t curand_ = nullptr;
  void* workspace_ = nullptr;
  DeviceErrorRecord* error_record_ = nullptr;  // device memory
  DeviceErrorRecord* error_host_ = nullptr;    // pinned host mirror
  void* staging_[2] = {nullptr, nullptr};      // pinned buffers for large transfers
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};
  std::mutex staging_mu_;
};

CudaBackend& cuda_backend_impl(int ordinal);

}  // namespace wick
