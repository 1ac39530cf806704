// The NCCL half of wick::Communicator, in the CUDA module: one NcclRank per rank. Every
// collective runs on the device's CudaBackend stream, so it is ordered after the kernels
// that produced its input and before those that consume its output, without host
// synchronization. src/core/communicator.cpp has checked the tensors. Built without
// NCCL, the factories raise Unsupported.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_module_parts.h"

#ifdef WICK_HAVE_NCCL
#include <nccl.h>

#define WICK_NCCL_CHECK(call)                                                                               \
  do {                                                                                                      \
    const ncclResult_t res_ = (call);                                                                       \
    if (res_ != ncclSuccess) [[unlikely]]                                                                   \
      ::wick::fail(::wick::ErrorKind::Device, "nccl: ", #call, " failed: ", ncclGetErrorString(res_), " (", \
                   ncclGetLastError(nullptr), ")");                                                         \
  } while (0)

namespace wick::cuda {

namespace {

// NVLink multicast (NVLS) must stay off on the machines wick runs on. NCCL reads its
// environment at the first call, so this runs before any of them.
void disable_nvls() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* v = std::getenv("NCCL_NVLS_ENABLE");
    if (!v || std::strcmp(v, "0") != 0) setenv("NCCL_NVLS_ENABLE", "0", 1);
  });
}

ncclDataType_t nccl_dtype(DType dt, const char* op) {
  switch (dt) {
    case DType::U8: return ncclUint8;
    case DType::U32: return ncclUint32;
    case DType::I64: return ncclInt64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
  }
  fail(ErrorKind::DTypeMismatch, op, ": dtype ", dt, " is not supported by NCCL");
}

ncclRedOp_t nccl_op(ReduceKind kind) { return kind == ReduceKind::Sum ? ncclSum : ncclMax; }

class NcclRank final : public Communicator::Impl {
 public:
  NcclRank(ncclComm_t comm, int ordinal) : comm_(comm), ordinal_(ordinal) {}
  ~NcclRank() override {
    // Destroying a communicator with collectives still queued would free buffers under
    // them: wait for the stream first. Errors are swallowed (destructors must not throw).
    try {
      cuda_backend_impl(ordinal_).synchronize();
    } catch (...) {
    }
    ncclCommDestroy(comm_);
  }

  void all_reduce(void* p, size_t n, DType dtype, ReduceKind kind) override {
    const ncclDataType_t dt = nccl_dtype(dtype, "all_reduce");
    if (n) WICK_NCCL_CHECK(ncclAllReduce(p, p, n, dt, nccl_op(kind), comm_, stream()));
  }
  void all_gather(const void* in, void* out, size_t n, DType dtype) override {
    const ncclDataType_t dt = nccl_dtype(dtype, "all_gather");
    if (n) WICK_NCCL_CHECK(ncclAllGather(in, out, n, dt, comm_, stream()));
  }
  void reduce_scatter(const void* in, void* out, size_t n, DType dtype, ReduceKind kind) override {
    const ncclDataType_t dt = nccl_dtype(dtype, "reduce_scatter");
    if (n) WICK_NCCL_CHECK(ncclReduceScatter(in, out, n, dt, nccl_op(kind), comm_, stream()));
  }
  void broadcast(void* p, size_t n, DType dtype, int root) override {
    const ncclDataType_t dt = nccl_dtype(dtype, "broadcast");
    if (n) WICK_NCCL_CHECK(ncclBroadcast(p, p, n, dt, root, comm_, stream()));
  }

 private:
  // The stream to enqueue on, with the device current.
  cudaStream_t stream() const {
    CudaBackend& be = cuda_backend_impl(ordinal_);
    be.activate();
    return be.stream();
  }
  ncclComm_t comm_;
  int ordinal_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator::Impl>> nccl_communicators_local(const std::vector<int>& ordinals) {
  for (int o : ordinals) cuda_backend_impl(o);  // creates the backend (context, stream) before NCCL uses the device
  disable_nvls();
  const int n = int(ordinals.size());
  std::vector<ncclComm_t> comms(size_t(n), nullptr);
  // ncclCommInitAll groups the per-device initializations itself (one call, all ranks).
  WICK_NCCL_CHECK(ncclCommInitAll(comms.data(), n, ordinals.data()));
  std::vector<std::unique_ptr<Communicator::Impl>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NcclRank>(comms[size_t(r)], ordinals[size_t(r)]));
  return out;
}

NcclUniqueId nccl_unique_id() {
  disable_nvls();
  ncclUniqueId raw;
  WICK_NCCL_CHECK(ncclGetUniqueId(&raw));
  static_assert(sizeof(raw.internal) == NcclUniqueId::kBytes);
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), raw.internal, NcclUniqueId::kBytes);
  return id;
}

std::unique_ptr<Communicator::Impl> nccl_join(const NcclUniqueId& id, int rank, int world_size, int ordinal) {
  cuda_backend_impl(ordinal).activate();  // ncclCommInitRank binds the communicator to the current device
  disable_nvls();
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.bytes.data(), NcclUniqueId::kBytes);
  ncclComm_t comm = nullptr;
  WICK_NCCL_CHECK(ncclCommInitRank(&comm, world_size, raw, rank));
  return std::make_unique<NcclRank>(comm, ordinal);
}

}  // namespace wick::cuda

#else  // no NCCL: the module runs everything else

namespace wick::cuda {

namespace {
[[noreturn]] void no_nccl(const char* op) {
  fail(ErrorKind::Unsupported, op, ": wick's CUDA backend was built without NCCL (libnccl was not found)");
}
}  // namespace

std::vector<std::unique_ptr<Communicator::Impl>> nccl_communicators_local(const std::vector<int>&) {
  no_nccl("Communicator::init_local");
}
NcclUniqueId nccl_unique_id() { no_nccl("Communicator::unique_id"); }
std::unique_ptr<Communicator::Impl> nccl_join(const NcclUniqueId&, int, int, int) { no_nccl("Communicator"); }

}  // namespace wick::cuda

#endif  // WICK_HAVE_NCCL
