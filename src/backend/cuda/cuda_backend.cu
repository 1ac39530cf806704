#include <memory>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"

namespace wick {

CudaBackend::CudaBackend(int ordinal) : ordinal_(ordinal) {
  WICK_CUDA_CHECK(cudaGetDeviceProperties(&props_, ordinal));
  activate();
  WICK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaBackend::~CudaBackend() {
  // Backends live until process exit; the driver reclaims the stream then.
}

void CudaBackend::activate() const { WICK_CUDA_CHECK(cudaSetDevice(ordinal_)); }

std::string CudaBackend::name() const { return props_.name; }

DeviceInfo CudaBackend::info() const {
  DeviceInfo d = Backend::info();
  activate();
  size_t free_bytes = 0, total_bytes = 0;
  WICK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  d.total_memory = total_bytes;
  d.free_memory = free_bytes;
  d.compute_capability = std::to_string(props_.major) + "." + std::to_string(props_.minor);
  return d;
}

std::shared_ptr<Allocation> CudaBackend::allocate(size_t nbytes) {
  activate();
  void* p = nullptr;
  if (nbytes) {
    const cudaError_t err = cudaMalloc(&p, nbytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      fail(ErrorKind::OutOfMemory, "allocate: cannot allocate ", nbytes, " bytes on ", device(), " (", free_bytes,
           " bytes free of ", total_bytes, "): ", cudaGetErrorString(err));
    }
  }
  const int ordinal = ordinal_;
  std::shared_ptr<void> owner(p, [ordinal](void* q) {
    if (q) {
      cudaSetDevice(ordinal);
      cudaFree(q);
    }
  });
  return std::make_shared<Allocation>(device(), p, nbytes, false, std::move(owner), "cuda memory");
}

void CudaBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
  if (!nbytes) return;
  activate();
  WICK_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream_));
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));  // src is caller-owned pageable memory
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
  if (!nbytes) return;
  activate();
  WICK_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream_));
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::synchronize() {
  activate();
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

int cuda_backend_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

Backend& cuda_backend(int ordinal) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CudaBackend>> backends;
  std::lock_guard lock(mu);
  if (backends.empty()) backends.resize(size_t(cuda_backend_device_count()));
  WICK_CHECK(ordinal >= 0 && size_t(ordinal) < backends.size(), Device, "device: cuda:", ordinal, " is not available");
  auto& b = backends[size_t(ordinal)];
  if (!b) b = std::make_unique<CudaBackend>(ordinal);
  return *b;
}

}  // namespace wick
