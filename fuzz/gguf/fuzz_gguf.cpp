// libFuzzer target for the GGUF reader: any input must either parse or raise
// wick::Error(Format); a parsed file must dequantize every tensor and survive a
// write/re-read round trip with the same metadata and tensor bytes. Anything else
// (another exception, a sanitizer report, a huge allocation) is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "wick/gguf.h"

using namespace wick;

namespace {
Buffer copy_to_buffer(const uint8_t* data, size_t size) {
  Buffer b = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(size)});
  if (size) std::memcpy(b.mutable_data(), data, size);
  return b;
}

void check(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "fuzz_gguf: invariant failed: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gguf::File f;
  try {
    f = gguf::File::parse(copy_to_buffer(data, size));
  } catch (const Error& e) {
    check(e.kind() == ErrorKind::Format, e.what());
    return 0;
  }
  for (const auto& [key, value] : f.metadata()) (void)value.to_string();
  for (const QuantTensor& t : f.tensors()) {
    // Bytes were validated to lie inside the input.
    (void)(gguf::dequantizable(t.type) ? dequantize(t) : gguf::plain_tensor(t));
  }
  // Re-writing pads to the alignment: skip absurd (but valid) alignments that would only
  // measure the allocator.
  if (f.alignment() > 4096) return 0;
  gguf::Writer w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const QuantTensor& t : f.tensors()) w.add_tensor(t);
  const std::string out = w.serialize();
  const gguf::File g = gguf::File::parse(copy_to_buffer(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  check(g.metadata().size() == f.metadata().size(), "round trip keeps the metadata count");
  check(g.tensors().size() == f.tensors().size(), "round trip keeps the tensor count");
  for (size_t i = 0; i < g.tensors().size(); ++i) {
    const QuantTensor &a = f.tensors()[i], &b = g.tensors()[i];
    check(a.name == b.name && a.type == b.type && a.shape == b.shape, "round trip keeps tensor infos");
    check(a.bytes.nbytes() == b.bytes.nbytes() &&
              (a.bytes.nbytes() == 0 || std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.nbytes()) == 0),
          "round trip keeps tensor bytes");
  }
  return 0;
}
