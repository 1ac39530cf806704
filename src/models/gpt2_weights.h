// Reading GPT-2 tensors from a checkpoint: shared by the
// tensor-parallel shards (gpt2_tp_shard.cpp), which slice the checked tensor before
// converting it so that only a shard is copied and uploaded.
#pragma once

#include <string>

#include "layer_count.h"
#include "wick/error.h"
#include "wick/io.h"
#include "wick/models/gpt2.h"
#include "wick/tensor.h"

namespace wick::models::gpt2_weights {

// GPT2LMHeadModel names "transformer.h.0..."; GPT2Model (and some exports) omit the prefix.
inline std::string resolve(const safetensors::File& f, const std::string& name) {
  if (f.contains(name)) return name;
  const std::string prefixed = "transformer." + name;
  WICK_CHECK(f.contains(prefixed), Format, "gpt2: checkpoint has no tensor '", name, "' (nor '", prefixed, "')");
  return prefixed;
}

// Before any weight is read: the checkpoint holds exactly the config's n_layer layers.
inline void check_layer_count(const safetensors::File& f, const Gpt2Config& c) {
  models::check_layer_count(f, "gpt2", "n_layer", c.n_layer, {"h.", "transformer.h."});
}

// The tensor as stored (a CPU view of the memory-mapped file), after checking its shape.
inline Tensor checked(const safetensors::File& f, const std::string& name, const Shape& shape) {
  Tensor t = f.tensor(resolve(f, name));
  WICK_CHECK(t.shape() == shape, ShapeMismatch, "gpt2: tensor '", name, "' has shape ", t.shape(), ", config implies ",
             shape);
  return t;
}

inline Tensor take(const safetensors::File& f, const std::string& name, const Shape& shape, Device device,
                   DType dtype) {
  return checked(f, name, shape).to(dtype).to(device);
}

}  // namespace wick::models::gpt2_weights
