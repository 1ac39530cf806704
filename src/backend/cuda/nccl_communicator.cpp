// wick::Communicator over NCCL. Every collective runs on the device's CudaBackend
// stream, so it is ordered after the kernels that produced its input and before those
// that consume its output, without host synchronization.
// Compiled only in CUDA builds; without NCCL the stubs of backend/nccl_absent.cpp apply.
#ifdef WICK_HAVE_NCCL

#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "wick/distributed.h"

#define WICK_NCCL_CHECK(call)                                                                               \
  do {                                                                                                      \
    const ncclResult_t res_ = (call);                                                                       \
    if (res_ != ncclSuccess) [[unlikely]]                                                                   \
      ::wick::fail(::wick::ErrorKind::Device, "nccl: ", #call, " failed: ", ncclGetErrorString(res_), " (", \
                   ncclGetLastError(nullptr), ")");                                                         \
  } while (0)

namespace wick {

struct Communicator::Impl {
  ncclComm_t comm = nullptr;
  ~Impl() {
    if (!comm) return;
    // Destroying a communicator with collectives still queued would free buffers under
    // them: wait for the stream first. Errors are swallowed (destructors must not throw).
    try {
      cuda_backend_impl(device_ordinal).synchronize();
    } catch (...) {
    }
    ncclCommDestroy(comm);
  }
  int device_ordinal = 0;
};

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

int check_cuda_device(Device d, const char* op) {
  WICK_CHECK(d.is_cuda(), InvalidArgument, op, ": ", d, " is not a CUDA device");
  const int count = cuda_device_count();
  WICK_CHECK(d.index >= 0 && d.index < count, InvalidArgument, op, ": ", d, " not present (", count, " CUDA devices)");
  return d.index;
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl, int rank, int world_size, Device device)
    : impl_(std::move(impl)), rank_(rank), world_size_(world_size), device_(device) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

std::vector<Communicator> Communicator::init_local(std::vector<Device> devices) {
  WICK_CHECK(!devices.empty(), InvalidArgument, "Communicator::init_local: no devices given");
  std::vector<int> ordinals;
  std::set<int> seen;
  for (const Device& d : devices) {
    const int o = check_cuda_device(d, "Communicator::init_local");
    WICK_CHECK(seen.insert(o).second, InvalidArgument, "Communicator::init_local: ", d, " listed twice");
    ordinals.push_back(o);
    cuda_backend_impl(o);  // creates the backend (context, stream) before NCCL uses the device
  }
  disable_nvls();
  const int n = int(ordinals.size());
  std::vector<ncclComm_t> comms(size_t(n), nullptr);
  // ncclCommInitAll groups the per-device initializations itself (one call, all ranks).
  WICK_NCCL_CHECK(ncclCommInitAll(comms.data(), n, ordinals.data()));
  std::vector<Communicator> out;
  out.reserve(size_t(n));
  for (int r = 0; r < n; ++r) {
    auto impl = std::make_unique<Impl>();
    impl->comm = comms[size_t(r)];
    impl->device_ordinal = ordinals[size_t(r)];
    out.push_back(Communicator(std::move(impl), r, n, devices[size_t(r)]));
  }
  return out;
}

NcclUniqueId Communicator::unique_id() {
  disable_nvls();
  ncclUniqueId raw;
  WICK_NCCL_CHECK(ncclGetUniqueId(&raw));
  static_assert(sizeof(raw.internal) == NcclUniqueId::kBytes);
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), raw.internal, NcclUniqueId::kBytes);
  return id;
}

Communicator::Communicator(const NcclUniqueId& id, int rank, int world_size, Device device)
    : impl_(std::make_unique<Impl>()), rank_(rank), world_size_(world_size), device_(device) {
  WICK_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, InvalidArgument, "Communicator: rank ", rank,
             " outside world size ", world_size);
  const int o = check_cuda_device(device, "Communicator");
  CudaBackend& be = cuda_backend_impl(o);
  be.activate();  // ncclCommInitRank binds the communicator to the current device
  disable_nvls();
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.bytes.data(), NcclUniqueId::kBytes);
  ncclComm_t comm = nullptr;
  WICK_NCCL_CHECK(ncclCommInitRank(&comm, world_size, raw, rank));
  impl_->comm = comm;
  impl_->device_ordinal = o;
}

namespace {

// The checks every collective shares: a usable communicator and a contiguous CUDA
// tensor on its device. Returns the backend to enqueue on, with its device current.
CudaBackend& prepare(const Communicator& c, const Communicator::Impl* impl, const Tensor& t, const char* op,
                     bool writes) {
  WICK_CHECK(impl && impl->comm, InvalidArgument, op, ": the communicator was moved from");
  WICK_CHECK(t.defined(), InvalidArgument, op, ": undefined tensor");
  WICK_CHECK(t.device() == c.device(), DeviceMismatch, op, ": tensor ", t.dtype(), " ", t.shape(), " is on ",
             t.device(), ", the communicator (rank ", c.rank(), ") on ", c.device());
  WICK_CHECK(t.is_contiguous(), InvalidArgument, op, ": tensor ", t.dtype(), " ", t.shape(), " on ", t.device(),
             " is not contiguous (layout ", t.layout().to_string(), "); call .contiguous() first");
  WICK_CHECK(!writes || !t.read_only(), ReadOnly, op, ": tensor ", t.dtype(), " ", t.shape(), " on ", t.device(),
             " is read-only");
  CudaBackend& be = cuda_backend_impl(impl->device_ordinal);
  be.activate();
  return be;
}

ncclComm_t comm_of(const Communicator::Impl* impl) { return impl->comm; }

}  // namespace

void Communicator::all_reduce(Tensor& t, ReduceKind kind) {
  CudaBackend& be = prepare(*this, impl_.get(), t, "all_reduce", true);
  const ncclDataType_t dt = nccl_dtype(t.dtype(), "all_reduce");
  if (t.numel() == 0) return;
  void* p = t.mutable_data();
  WICK_NCCL_CHECK(ncclAllReduce(p, p, size_t(t.numel()), dt, nccl_op(kind), comm_of(impl_.get()), be.stream()));
}

Tensor Communicator::all_gather(const Tensor& in) {
  CudaBackend& be = prepare(*this, impl_.get(), in, "all_gather", false);
  const ncclDataType_t dt = nccl_dtype(in.dtype(), "all_gather");
  WICK_CHECK(in.rank() >= 1, InvalidArgument, "all_gather: input ", in.dtype(), " ", in.shape(),
             " has rank 0; it is concatenated along dim 0");
  std::vector<int64_t> dims = in.shape().dims();
  dims[0] *= world_size_;
  Tensor out = Tensor::empty(Shape(dims), in.dtype(), device_);
  if (in.numel() == 0) return out;
  WICK_NCCL_CHECK(
      ncclAllGather(in.data(), out.mutable_data(), size_t(in.numel()), dt, comm_of(impl_.get()), be.stream()));
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& in, ReduceKind kind) {
  CudaBackend& be = prepare(*this, impl_.get(), in, "reduce_scatter", false);
  const ncclDataType_t dt = nccl_dtype(in.dtype(), "reduce_scatter");
  WICK_CHECK(in.rank() >= 1, InvalidArgument, "reduce_scatter: input ", in.dtype(), " ", in.shape(),
             " has rank 0; it is split along dim 0");
  WICK_CHECK(in.dim(0) % world_size_ == 0, ShapeMismatch, "reduce_scatter: dim 0 of ", in.shape(),
             " is not divisible by the world size ", world_size_);
  std::vector<int64_t> dims = in.shape().dims();
  dims[0] /= world_size_;
  Tensor out = Tensor::empty(Shape(dims), in.dtype(), device_);
  if (out.numel() == 0) return out;
  WICK_NCCL_CHECK(ncclReduceScatter(in.data(), out.mutable_data(), size_t(out.numel()), dt, nccl_op(kind),
                                    comm_of(impl_.get()), be.stream()));
  return out;
}

void Communicator::broadcast(Tensor& t, int root) {
  CudaBackend& be = prepare(*this, impl_.get(), t, "broadcast", true);
  const ncclDataType_t dt = nccl_dtype(t.dtype(), "broadcast");
  WICK_CHECK(root >= 0 && root < world_size_, InvalidArgument, "broadcast: root ", root, " outside world size ",
             world_size_);
  if (t.numel() == 0) return;
  void* p = t.mutable_data();
  WICK_NCCL_CHECK(ncclBroadcast(p, p, size_t(t.numel()), dt, root, comm_of(impl_.get()), be.stream()));
}

}  // namespace wick

#endif  // WICK_HAVE_NCCL
