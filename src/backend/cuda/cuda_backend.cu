#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_module_parts.h"
#include "backend/cuda/launch.cuh"

namespace wick {

namespace {
constexpr size_t kStagingChunk = 16u << 20;  // pinned staging chunk for large transfers
constexpr size_t kStageAbove = 1u << 20;     // smaller copies go directly

const char* index_op_name(int32_t op) {
  switch (IndexOpId(op)) {
    case IndexOpId::IndexSelect: return "index_select";
    case IndexOpId::Gather: return "gather";
    case IndexOpId::Scatter: return "scatter";
    case IndexOpId::ScatterAdd: return "scatter_add";
    case IndexOpId::IndexAdd: return "index_add";
    case IndexOpId::Embedding: return "embedding";
    case IndexOpId::CacheAttentionSlot: return "cache_attention (blocks)";
    case IndexOpId::CacheWriteSlot: return "cache_write_ (blocks)";
    case IndexOpId::CacheWritePosition: return "cache_write_ (positions)";
    case IndexOpId::MulMatId: return "mul_mat_id (ids)";
    default: return "index op";
  }
}
}  // namespace

namespace {
cudaStream_t create_stream(int ordinal) {
  WICK_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaStream_t s = nullptr;
  WICK_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
}  // namespace

CudaBackend::CudaBackend(int ordinal)
    : ordinal_(ordinal), stream_(create_stream(ordinal)), allocator_(ordinal, stream_) {
  WICK_CUDA_CHECK(cudaGetDeviceProperties(&props_, ordinal));
  WICK_CUDA_CHECK(cudaMalloc(&error_record_, sizeof(DeviceErrorRecord)));
  WICK_CUDA_CHECK(cudaMemset(error_record_, 0, sizeof(DeviceErrorRecord)));
  WICK_CUDA_CHECK(cudaMallocHost(&error_host_, sizeof(DeviceErrorRecord)));
  std::memset(error_host_, 0, sizeof(DeviceErrorRecord));
}

CudaBackend::~CudaBackend() {
  // Backends live until process exit; the driver reclaims everything then.
}

// Every op calls this. cudaGetDevice is a read of the runtime's per-thread state, while
// cudaSetDevice also binds the device's context; asking first makes the usual case (the
// device already current) cheap, and still follows any cudaSetDevice made elsewhere
// (NCCL, the user, another library) instead of trusting a cached value.
void CudaBackend::activate() const {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == ordinal_) return;
  WICK_CUDA_CHECK(cudaSetDevice(ordinal_));
}

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
  void* p = nbytes ? allocator_.allocate(nbytes) : nullptr;
  cuda::CachingAllocator* alloc = &allocator_;
  std::shared_ptr<void> owner(p, [alloc](void* q) { alloc->free(q); });
  return std::make_shared<Allocation>(device(), p, nbytes, false, std::move(owner), "cuda memory");
}

std::shared_ptr<void> CudaBackend::scratch(size_t nbytes) {
  void* p = nbytes ? allocator_.allocate(nbytes) : nullptr;
  cuda::CachingAllocator* alloc = &allocator_;
  return std::shared_ptr<void>(p, [alloc](void* q) { alloc->free(q); });
}

void CudaBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
  if (!nbytes) return;
  fail_if_capturing("copying host memory to the device");
  activate();
  if (nbytes <= kStageAbove) {
    WICK_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream_));
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));  // src is caller-owned pageable memory
    return;
  }
  // Large: double-buffered pinned staging, so the host copy into one buffer overlaps
  // the DMA out of the other.
  std::lock_guard lock(staging_mu_);
  for (int i = 0; i < 2; ++i) {
    if (!staging_[i]) {
      WICK_CUDA_CHECK(cudaMallocHost(&staging_[i], kStagingChunk));
      WICK_CUDA_CHECK(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming));
    }
  }
  for (size_t off = 0, chunk = 0; off < nbytes; off += kStagingChunk, ++chunk) {
    const int i = int(chunk % 2);
    const size_t n = std::min(kStagingChunk, nbytes - off);
    WICK_CUDA_CHECK(cudaEventSynchronize(staging_done_[i]));  // buffer i free again
    std::memcpy(staging_[i], static_cast<const char*>(src) + off, n);
    WICK_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + off, staging_[i], n, cudaMemcpyHostToDevice, stream_));
    WICK_CUDA_CHECK(cudaEventRecord(staging_done_[i], stream_));
  }
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
  fail_if_capturing("reading device memory back to the host");
  activate();
  if (nbytes <= kStageAbove) {
    if (nbytes) WICK_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream_));
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
    check_device_errors();
    return;
  }
  std::lock_guard lock(staging_mu_);
  for (int i = 0; i < 2; ++i) {
    if (!staging_[i]) {
      WICK_CUDA_CHECK(cudaMallocHost(&staging_[i], kStagingChunk));
      WICK_CUDA_CHECK(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming));
    }
  }
  // DMA chunk k+1 while the host copies chunk k out of the other buffer.
  const size_t chunks = (nbytes + kStagingChunk - 1) / kStagingChunk;
  auto enqueue = [&](size_t c) {
    const size_t off = c * kStagingChunk, n = std::min(kStagingChunk, nbytes - off);
    WICK_CUDA_CHECK(
        cudaMemcpyAsync(staging_[c % 2], static_cast<const char*>(src) + off, n, cudaMemcpyDeviceToHost, stream_));
    WICK_CUDA_CHECK(cudaEventRecord(staging_done_[c % 2], stream_));
  };
  enqueue(0);
  for (size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) enqueue(c + 1);
    WICK_CUDA_CHECK(cudaEventSynchronize(staging_done_[c % 2]));
    const size_t off = c * kStagingChunk, n = std::min(kStagingChunk, nbytes - off);
    std::memcpy(static_cast<char*>(dst) + off, staging_[c % 2], n);
  }
  check_device_errors();
}

void CudaBackend::synchronize() {
  fail_if_capturing("synchronize()");
  activate();
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
  check_device_errors();
}

void CudaBackend::check_device_errors() {
  WICK_CUDA_CHECK(
      cudaMemcpyAsync(error_host_, error_record_, sizeof(DeviceErrorRecord), cudaMemcpyDeviceToHost, stream_));
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (error_host_->flag == 0) return;
  const DeviceErrorRecord rec = *error_host_;
  WICK_CUDA_CHECK(cudaMemsetAsync(error_record_, 0, sizeof(DeviceErrorRecord), stream_));
  std::memset(error_host_, 0, sizeof(DeviceErrorRecord));
  // A length is recorded as length - 1 against the row's capacity (valid lengths are 1..M*N).
  if (IndexOpId(rec.op) == IndexOpId::CacheAttentionLength)
    fail(ErrorKind::IndexOutOfRange, "cache_attention: length ", rec.value + 1, " outside [1, ", rec.bound,
         "] (the positions its blocks hold; detected on ", device(), " at synchronization)");
  fail(ErrorKind::IndexOutOfRange, index_op_name(rec.op), ": index ", rec.value,
       " out of range for a dimension of size ", rec.bound, " (detected on ", device(), " at synchronization)");
}

void CudaBackend::fail_if_capturing(const char* what) const {
  WICK_CHECK(!capturing_, InvalidArgument, "cuda graph: ", what, " waits for the device, which is not possible while ",
             device(), " is capturing a graph; create inputs before the capture and read outputs after replay()");
}

int CudaBackend::begin_capture() {
  activate();
  // Handles and their workspaces are created now: creating them inside the capture
  // would allocate outside the graph's pool (cuBLAS gets its fixed workspace here).
  cublas();
  cublaslt();
  const int pool = allocator_.begin_private_pool();
  // Relaxed: the allocator may still cudaMalloc a new segment for the pool meanwhile.
  const cudaError_t err = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    allocator_.end_private_pool();
    allocator_.release_private_pool(pool);
    fail(ErrorKind::Device, "cuda graph: cudaStreamBeginCapture failed on ", device(), ": ", cudaGetErrorString(err));
  }
  capturing_ = true;
  return pool;
}

cudaGraph_t CudaBackend::end_capture() {
  activate();
  capturing_ = false;
  allocator_.end_private_pool();
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    return nullptr;
  }
  return graph;
}

cublasHandle_t CudaBackend::cublas() {
  std::lock_guard lock(handle_mu_);
  if (!cublas_) {
    activate();
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) fail(ErrorKind::Device, "cublas: cublasCreate failed");
    cublasSetStream(cublas_, stream_);
    if (!workspace_) WICK_CUDA_CHECK(cudaMalloc(&workspace_, kCublasWorkspace));
    cublasSetWorkspace(cublas_, workspace_, kCublasWorkspace);
  }
  return cublas_;
}

cublasLtHandle_t CudaBackend::cublaslt() {
  std::lock_guard lock(handle_mu_);
  if (!cublaslt_) {
    activate();
    if (cublasLtCreate(&cublaslt_) != CUBLAS_STATUS_SUCCESS) fail(ErrorKind::Device, "cublasLt: create failed");
    if (!workspace_) WICK_CUDA_CHECK(cudaMalloc(&workspace_, kCublasWorkspace));
  }
  return cublaslt_;
}

curandGenerator_t CudaBackend::curand() {
  std::lock_guard lock(handle_mu_);
  if (!curand_) {
    activate();
    if (curandCreateGenerator(&curand_, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS)
      fail(ErrorKind::Device, "curand: curandCreateGenerator failed");
    curandSetStream(curand_, stream_);
  }
  return curand_;
}

int cuda::device_count() {
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

CudaBackend& cuda_backend_impl(int ordinal) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CudaBackend>> backends;
  std::lock_guard lock(mu);
  if (backends.empty()) backends.resize(size_t(cuda::device_count()));
  WICK_CHECK(ordinal >= 0 && size_t(ordinal) < backends.size(), Device, "device: cuda:", ordinal, " is not available");
  auto& b = backends[size_t(ordinal)];
  if (!b) b = std::make_unique<CudaBackend>(ordinal);
  return *b;
}

}  // namespace wick

namespace wick::cuda {

int current_sm_count() {
  // Per device ordinal; the grids of every launch are sized from it, so it is cached.
  static std::atomic<int> counts[64] = {};
  int dev = 0;
  WICK_CUDA_CHECK(cudaGetDevice(&dev));
  std::atomic<int>* slot = dev >= 0 && dev < 64 ? &counts[dev] : nullptr;
  if (slot)
    if (const int c = slot->load(std::memory_order_relaxed)) return c;
  int c = 0;
  WICK_CUDA_CHECK(cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev));
  c = std::max(c, 1);
  if (slot) slot->store(c, std::memory_order_relaxed);
  return c;
}

}  // namespace wick::cuda
