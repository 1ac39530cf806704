// libFuzzer target: any byte string given to the safetensors reader either parses or
// raises wick::Error; it never crashes, reads out of bounds or throws anything else.
// When it parses, every tensor is read in full (raw bytes and, where wick has the
// dtype, the values converted to double) to prove the validated offsets are in bounds.
#include <cstddef>
#include <cstdint>

#include "wick/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wick;
  try {
    const Buffer bytes = Buffer::wrap_host(const_cast<uint8_t*>(data), size, /*read_only=*/true);
    const safetensors::File f = safetensors::File::parse(bytes);
    volatile uint8_t sink = 0;
    for (const safetensors::TensorInfo& t : f.tensors()) {
      const Buffer raw = f.raw(t.name);
      const auto* p = static_cast<const uint8_t*>(raw.data());
      for (size_t i = 0; i < raw.nbytes(); ++i) sink = sink ^ p[i];
      if (t.wick_dtype) {
        const std::vector<double> values = f.tensor(t.name).to_vector<double>();
        if (!values.empty()) sink = sink ^ uint8_t(values[0] == values[0]);
      }
    }
  } catch (const Error&) {
    // Rejected input: the expected outcome for most of the fuzzer's inputs.
  }
  return 0;
}
