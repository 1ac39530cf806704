// wick::Communicator's front end: argument and shape checks here; the NCCL calls in the
// CUDA module (backend/cuda/nccl_communicator.cpp), which raises Unsupported when it was
// built without NCCL. Without the module every entry point raises Unsupported too.
#include <set>

#include "backend/device_module.h"
#include "wick/distributed.h"

namespace wick {

namespace {

DeviceModule& nccl_module(const char* op) {
  DeviceModule* m = cuda_module();
  WICK_CHECK(m, Unsupported, op, ": NCCL needs the CUDA backend, which is not available (", cuda_module_status(), ")");
  return *m;
}

int check_cuda_device(Device d, const char* op) {
  WICK_CHECK(d.is_cuda(), InvalidArgument, op, ": ", d, " is not a CUDA device");
  const int count = cuda_device_count();
  WICK_CHECK(d.index >= 0 && d.index < count, InvalidArgument, op, ": ", d, " not present (", count, " CUDA devices)");
  return d.index;
}

// The checks every collective shares: a usable communicator and a contiguous tensor on
// its device.
void check_tensor(const Communicator& c, const Communicator::Impl* impl, const Tensor& t, const char* op, bool writes) {
  WICK_CHECK(impl, InvalidArgument, op, ": the communicator was moved from");
  WICK_CHECK(t.defined(), InvalidArgument, op, ": undefined tensor");
  WICK_CHECK(t.device() == c.device(), DeviceMismatch, op, ": tensor ", t.dtype(), " ", t.shape(), " is on ",
             t.device(), ", the communicator (rank ", c.rank(), ") on ", c.device());
  WICK_CHECK(t.is_contiguous(), InvalidArgument, op, ": tensor ", t.dtype(), " ", t.shape(), " on ", t.device(),
             " is not contiguous (layout ", t.layout().to_string(), "); call .contiguous() first");
  WICK_CHECK(!writes || !t.read_only(), ReadOnly, op, ": tensor ", t.dtype(), " ", t.shape(), " on ", t.device(),
             " is read-only");
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Impl> impl, int rank, int world_size, Device device)
    : impl_(std::move(impl)), rank_(rank), world_size_(world_size), device_(device) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

std::vector<Communicator> Communicator::init_local(std::vector<Device> devices) {
  WICK_CHECK(!devices.empty(), InvalidArgument, "Communicator::init_local: no devices given");
  DeviceModule& m = nccl_module("Communicator::init_local");
  std::vector<int> ordinals;
  std::set<int> seen;
  for (const Device& d : devices) {
    const int o = check_cuda_device(d, "Communicator::init_local");
    WICK_CHECK(seen.insert(o).second, InvalidArgument, "Communicator::init_local: ", d, " listed twice");
    ordinals.push_back(o);
  }
  std::vector<std::unique_ptr<Impl>> impls = m.communicators_local(ordinals);
  const int n = int(impls.size());
  std::vector<Communicator> out;
  out.reserve(impls.size());
  for (int r = 0; r < n; ++r) out.push_back(Communicator(std::move(impls[size_t(r)]), r, n, devices[size_t(r)]));
  return out;
}

NcclUniqueId Communicator::unique_id() { return nccl_module("Communicator::unique_id").communicator_unique_id(); }

Communicator::Communicator(const NcclUniqueId& id, int rank, int world_size, Device device)
    : rank_(rank), world_size_(world_size), device_(device) {
  WICK_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, InvalidArgument, "Communicator: rank ", rank,
             " outside world size ", world_size);
  DeviceModule& m = nccl_module("Communicator");
  impl_ = m.communicator_join(id, rank, world_size, check_cuda_device(device, "Communicator"));
}

void Communicator::all_reduce(Tensor& t, ReduceKind kind) {
  check_tensor(*this, impl_.get(), t, "all_reduce", true);
  impl_->all_reduce(t.numel() ? t.mutable_data() : nullptr, size_t(t.numel()), t.dtype(), kind);
}

Tensor Communicator::all_gather(const Tensor& in) {
  check_tensor(*this, impl_.get(), in, "all_gather", false);
  WICK_CHECK(in.rank() >= 1, InvalidArgument, "all_gather: input ", in.dtype(), " ", in.shape(),
             " has rank 0; it is concatenated along dim 0");
  std::vector<int64_t> dims = in.shape().dims();
  dims[0] *= world_size_;
  Tensor out = Tensor::empty(Shape(dims), in.dtype(), device_);
  impl_->all_gather(in.numel() ? in.data() : nullptr, in.numel() ? out.mutable_data() : nullptr, size_t(in.numel()),
                    in.dtype());
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& in, ReduceKind kind) {
  check_tensor(*this, impl_.get(), in, "reduce_scatter", false);
  WICK_CHECK(in.rank() >= 1, InvalidArgument, "reduce_scatter: input ", in.dtype(), " ", in.shape(),
             " has rank 0; it is split along dim 0");
  WICK_CHECK(in.dim(0) % world_size_ == 0, ShapeMismatch, "reduce_scatter: dim 0 of ", in.shape(),
             " is not divisible by the world size ", world_size_);
  std::vector<int64_t> dims = in.shape().dims();
  dims[0] /= world_size_;
  Tensor out = Tensor::empty(Shape(dims), in.dtype(), device_);
  impl_->reduce_scatter(out.numel() ? in.data() : nullptr, out.numel() ? out.mutable_data() : nullptr,
                        size_t(out.numel()), in.dtype(), kind);
  return out;
}

void Communicator::broadcast(Tensor& t, int root) {
  check_tensor(*this, impl_.get(), t, "broadcast", true);
  WICK_CHECK(root >= 0 && root < world_size_, InvalidArgument, "broadcast: root ", root, " outside world size ",
             world_size_);
  impl_->broadcast(t.numel() ? t.mutable_data() : nullptr, size_t(t.numel()), t.dtype(), root);
}

}  // namespace wick
