// libwick_cuda.so's entry point: the DeviceModule (backend/device_module.h) that libwick
// loads at run time, assembled from the CUDA backend and its event, graph and NCCL parts.
#include <cstring>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_module_parts.h"
#include "wick/build_info.h"

namespace wick::cuda {

namespace {

class CudaModule final : public DeviceModule {
 public:
  int device_count() override { return cuda::device_count(); }
  Backend& backend(int ordinal) override { return cuda_backend_impl(ordinal); }
  // The CUDA backend runs every op of the table on every dtype the table defines it on
  // (CudaBackend does not override Backend::supports).
  bool supports(OpId op, DType dtype) const override { return (op_dtypes(op) & dtype_bit(dtype)) != 0; }

  void* event_record(int ordinal) override { return cuda::event_record(ordinal); }
  float event_elapsed_ms(int ordinal, void* start, void* stop) override {
    return cuda::event_elapsed_ms(ordinal, start, stop);
  }
  void event_destroy(int ordinal, void* event) noexcept override { cuda::event_destroy(ordinal, event); }

  std::shared_ptr<CudaGraph::Impl> capture_graph(int ordinal, const std::function<void()>& record) override {
    return cuda::capture_graph(ordinal, record);
  }

  std::vector<std::unique_ptr<Communicator::Impl>> communicators_local(const std::vector<int>& ordinals) override {
    return nccl_communicators_local(ordinals);
  }
  NcclUniqueId communicator_unique_id() override { return nccl_unique_id(); }
  std::unique_ptr<Communicator::Impl> communicator_join(const NcclUniqueId& id, int rank, int world_size,
                                                        int ordinal) override {
    return nccl_join(id, rank, world_size, ordinal);
  }
};

}  // namespace

}  // namespace wick::cuda

extern "C" __attribute__((visibility("default"))) wick::DeviceModule* wick_cuda_module_entry(int abi,
                                                                                             const char* version) {
  if (abi != wick::kDeviceModuleAbi || !version || std::strcmp(version, WICK_MODULE_VERSION) != 0) return nullptr;
  static wick::cuda::CudaModule module;
  return &module;
}
