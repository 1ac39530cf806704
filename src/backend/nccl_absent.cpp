// wick::Communicator when NCCL is not compiled in (no CUDA backend, or CUDA without
// libnccl): the API exists so callers compile, and every entry point throws Unsupported.
// In builds with NCCL, src/CMakeLists.txt drops this file for cuda/nccl_communicator.cpp.
#include "wick/distributed.h"

namespace wick {

namespace {
[[noreturn]] void no_nccl(const char* op) {
  fail(ErrorKind::Unsupported, op, ": wick was built without NCCL (needs the CUDA backend and libnccl)");
}
}  // namespace

struct Communicator::Impl {};

Communicator::Communicator(std::unique_ptr<Impl> impl, int rank, int world_size, Device device)
    : impl_(std::move(impl)), rank_(rank), world_size_(world_size), device_(device) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

std::vector<Communicator> Communicator::init_local(std::vector<Device>) { no_nccl("Communicator::init_local"); }
NcclUniqueId Communicator::unique_id() { no_nccl("Communicator::unique_id"); }
Communicator::Communicator(const NcclUniqueId&, int, int, Device) { no_nccl("Communicator"); }
void Communicator::all_reduce(Tensor&, ReduceKind) { no_nccl("all_reduce"); }
Tensor Communicator::all_gather(const Tensor&) { no_nccl("all_gather"); }
Tensor Communicator::reduce_scatter(const Tensor&, ReduceKind) { no_nccl("reduce_scatter"); }
void Communicator::broadcast(Tensor&, int) { no_nccl("broadcast"); }

}  // namespace wick
