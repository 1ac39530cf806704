// Hand-run benchmark of the safetensors header cost (not built by CMake, not a test): opening
// (parsing + validating) a header of N one-element f32 tensors, and writing one (serialize,
// which builds the same header as save, without the disk).
//   ninja -C build wick && g++ -std=c++20 -O2 -Iinclude bench/safetensors_header.cpp -Lbuild/src -lwick \
//       -Wl,-rpath,$PWD/build/src -o /tmp/st_bench && /tmp/st_bench 100000 1000000
// (libwick.so links no CUDA library: the CUDA backend is the module beside it). "Before"
// figures: link the old src/io/safetensors_*.cpp objects ahead of -lwick. Sizes are the arguments (default 10^5 and 10^6).
// Best of 3 runs (one when a run takes over 2 s); the header of 10^6 tensors is 86 MB.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "wick/wick.h"
using namespace wick;

static double best_s(const std::function<void()>& f, int reps = 3) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (best > 2) break;
  }
  return best;
}

// A whole file (length, header, data) of n tensors "layer.<i>.weight" of 4 bytes each.
static Buffer file_of(size_t n) {
  std::string header = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i) header += ',';
    header += "\"layer." + std::to_string(i) + ".weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  }
  header += '}';
  const uint64_t len = header.size();
  Buffer b = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(8 + len + 4 * n)});
  auto* p = static_cast<char*>(b.mutable_data());
  std::memcpy(p, &len, 8);
  std::memcpy(p + 8, header.data(), len);
  std::memset(p + 8 + len, 0, 4 * n);
  return b;
}

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(size_t(std::strtoull(argv[i], nullptr, 10)));
  if (sizes.empty()) sizes = {100'000, 1'000'000};
  for (const size_t n : sizes) {
    const Buffer bytes = file_of(n);
    size_t seen = 0;
    const double open = best_s([&] { seen = safetensors::File::parse(bytes).tensors().size(); });
    std::vector<std::pair<std::string, Tensor>> tensors;
    const float one = 1.0f;
    for (size_t i = 0; i < n; ++i)
      tensors.emplace_back("layer." + std::to_string(i) + ".weight", Tensor::from_data(&one, DType::F32, 1, Shape{1}));
    size_t written = 0;
    const double save = best_s([&] { written = safetensors::serialize(tensors).size(); });
    std::printf("%8zu tensors: open %.3f s (%zu tensors, %.1f MB header), save %.3f s (%.1f MB)\n", n, open, seen,
                double(bytes.nbytes()) / 1e6, save, double(written) / 1e6);
    std::fflush(stdout);
  }
}
