// The number of layers a checkpoint holds, checked against config.json before any weight is
// read: a config that names fewer layers than the weights would otherwise drop the rest
// silently (GPT-2's n_layer, BERT's num_hidden_layers).
#pragma once

#include <charconv>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "wick/error.h"
#include "wick/io.h"

namespace wick::models {

struct CheckpointLayers {
  int64_t count = 0;        // 1 + the largest layer number, 0 when there is none
  std::string_view prefix;  // the prefix the numbered names carry ("transformer.h.")
};

// The layers of tensors named <prefix><N>.<rest>, for any of the prefixes.
inline CheckpointLayers checkpoint_layers(const safetensors::File& f,
                                          std::initializer_list<std::string_view> prefixes) {
  CheckpointLayers found{0, *prefixes.begin()};
  for (const safetensors::TensorInfo& t : f.tensors()) {
    const std::string_view name = t.name;
    for (const std::string_view prefix : prefixes) {
      if (!name.starts_with(prefix)) continue;
      const char* digits = name.data() + prefix.size();
      const char* end = name.data() + name.size();
      int64_t n = 0;
      const auto [stop, ec] = std::from_chars(digits, end, n);
      if (stop == digits || stop == end || *stop != '.' || n < 0) continue;
      // A number past int64 is a layer no config can name: count it as the largest.
      const int64_t count =
          ec == std::errc() && n < std::numeric_limits<int64_t>::max() ? n + 1 : std::numeric_limits<int64_t>::max();
      if (count > found.count) found = {count, prefix};
    }
  }
  return found;
}

// Throws Format unless the checkpoint holds exactly `configured` layers, naming both counts:
// "gpt2: config.json says n_layer 1, but the checkpoint holds 2 layers (h.0.* to h.1.*)".
inline void check_layer_count(const safetensors::File& f, std::string_view op, std::string_view key, int64_t configured,
                              std::initializer_list<std::string_view> prefixes) {
  const CheckpointLayers found = checkpoint_layers(f, prefixes);
  if (found.count == configured) return;
  if (found.count == 0)
    fail(ErrorKind::Format, op, ": config.json says ", key, " ", configured,
         ", but the checkpoint holds no layer weights (no tensor named ", found.prefix, "0.*)");
  fail(ErrorKind::Format, op, ": config.json says ", key, " ", configured, ", but the checkpoint holds ", found.count,
       " layers (", found.prefix, "0.* to ", found.prefix, found.count - 1, ".*)");
}

}  // namespace wick::models
