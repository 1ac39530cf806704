// CUDA graphs: record a sequence of wick ops once, then replay all of it with one launch.
//
// A step of a model runs hundreds of small kernels; launching each from the host costs a
// few microseconds, which dominates when the kernels themselves are short (decoding one
// token at a time). CudaGraph::capture runs a function with the device's stream in capture
// mode: the ops it calls are recorded, not executed. replay() then queues the whole
// recording at once.
//
//   Tensor x = Tensor::zeros({8, 768}, DType::F32, cuda);       // input: made before
//   Tensor y;
//   auto g = CudaGraph::capture(cuda, [&] { y = gelu(x) + x; });  // y: the graph's output
//   x.copy_(new_values);  g.replay();  y.to(Device::cpu());       // y holds the result
//
// Rules (the recording replays fixed kernels on fixed addresses):
//   - Inputs are tensors created before the capture and updated in place (copy_, fill_)
//     between replays. Tensors created inside the capture are outputs or scratch: their
//     memory belongs to the graph, and every replay rewrites them.
//   - Shapes, dtypes and the sequence of ops are frozen; values are not. Ops whose launch
//     depends on values (none in wick today except reading results) cannot be recorded.
//   - Nothing inside the capture may wait for the device: reading values (item,
//     to_vector, to(cpu)), host-to-device copies and synchronize() raise InvalidArgument,
//     and the capture is abandoned.
//   - Only the captured device's stream is recorded; no other thread may use that device
//     while the capture is open.
//   - Every tensor the recorded ops read must outlive the graph's last replay (tensors
//     created inside the capture are kept alive by the graph's memory pool anyway).
// In a build without CUDA, capture raises Unsupported.
#pragma once

#include <functional>
#include <memory>

#include "wick/device.h"

namespace wick {

class CudaGraph {
 public:
  CudaGraph() = default;  // empty: replay() raises InvalidArgument

  // Records the ops `record` queues on device (a CUDA device) into a graph. Throws what
  // `record` throws (the capture is closed and nothing is kept), Device on a CUDA error.
  static CudaGraph capture(Device device, const std::function<void()>& record);

  // Queues the recorded work on the device's stream; returns without waiting.
  void replay() const;

  bool defined() const { return impl_ != nullptr; }
  Device device() const;
  // Kernels, copies and memsets in the recording (a measure of what one replay saves).
  size_t node_count() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace wick
