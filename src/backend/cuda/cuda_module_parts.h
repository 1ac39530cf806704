// The pieces of the CUDA module that cuda_module.cpp assembles into its DeviceModule:
// events (cuda_event.cpp), graph recordings (cuda_graph.cpp), NCCL ranks
// (nccl_communicator.cpp). Names differ from libwick's front ends on purpose: the
// module's own calls must never bind to libwick's symbols of the same name.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend/device_module.h"

namespace wick::cuda {

int device_count();

void* event_record(int ordinal);
float event_elapsed_ms(int ordinal, void* start, void* stop);
void event_destroy(int ordinal, void* event) noexcept;

std::shared_ptr<CudaGraph::Impl> capture_graph(int ordinal, const std::function<void()>& record);

std::vector<std::unique_ptr<Communicator::Impl>> nccl_communicators_local(const std::vector<int>& ordinals);
NcclUniqueId nccl_unique_id();
std::unique_ptr<Communicator::Impl> nccl_join(const NcclUniqueId& id, int rank, int world_size, int ordinal);

}  // namespace wick::cuda
