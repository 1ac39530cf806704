// libFuzzer target: any byte string given to the safetensors reader either parses or
// raises wick::Error; it never crashes, reads out of bounds or throws anything else.
// When it parses, every tensor is read in full (raw bytes and, where wick has the
// dtype, the values converted to double) to prove the validated offsets are in bounds,
// and the tensors wick computes on are written back and must parse to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "wick/io.h"

namespace {

// The writer's output for a valid file must parse back to the same tensors and metadata
// (names from the header may be any JSON string); any failure here is a bug.
void check_round_trip(const wick::safetensors::File& f,
                      const std::vector<std::pair<std::string, wick::Tensor>>& computable) {
  using namespace wick;
  try {
    const std::string again = safetensors::serialize(computable, f.metadata());
    const safetensors::File g =
        safetensors::File::parse(Buffer::wrap_host(const_cast<char*>(again.data()), again.size(), true));
    if (g.tensors().size() != computable.size() || g.metadata() != f.metadata()) __builtin_trap();
    for (const auto& [name, t] : computable) {
      const Buffer a = f.raw(name), b = g.raw(name);
      if (a.nbytes() != b.nbytes() || (a.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) != 0))
        __builtin_trap();
    }
  } catch (const Error&) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wick;
  try {
    const Buffer bytes = Buffer::wrap_host(const_cast<uint8_t*>(data), size, /*read_only=*/true);
    const safetensors::File f = safetensors::File::parse(bytes);
    volatile uint8_t sink = 0;
    std::vector<std::pair<std::string, Tensor>> computable;
    for (const safetensors::TensorInfo& t : f.tensors()) {
      const Buffer raw = f.raw(t.name);
      const auto* p = static_cast<const uint8_t*>(raw.data());
      for (size_t i = 0; i < raw.nbytes(); ++i) sink = sink ^ p[i];
      if (t.wick_dtype) {
        const std::vector<double> values = f.tensor(t.name).to_vector<double>();
        if (!values.empty()) sink = sink ^ uint8_t(values[0] == values[0]);
        computable.emplace_back(t.name, f.tensor(t.name));
      }
    }
    check_round_trip(f, computable);
  } catch (const Error&) {
    // Rejected input: the expected outcome for most of the fuzzer's inputs.
  }
  return 0;
}
