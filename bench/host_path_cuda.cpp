// Hand-run host-cost probe of the CUDA path through the public API (not built by CMake,
// not a test): what one call costs on the host, in one process, for the calls every eager
// op makes (the device count, a CUDA allocation, a 16-element add). Used to tell a
// library regression from the bench harness's noise when libwick moved its CUDA backend
// into the run-time module (docs/perf.md, issue 19). On the GPU machine:
//   g++ -std=c++20 -O2 -Iinclude bench/host_path_cuda.cpp -Lbuild/src -lwick -Wl,-rpath,$PWD/build/src \
//       -o /tmp/host_path && /tmp/host_path
// Swap libwick.so with LD_LIBRARY_PATH to compare two builds with one binary (the calls
// used here have the same ABI in both).
#include <wick/wick.h>

#include <chrono>
#include <cstdio>
using clk = std::chrono::steady_clock;
template <class F>
double per_call_ns(int n, F f) {
  for (int i = 0; i < n / 10; ++i) f();
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n;
}
int main() {
  using namespace wick;
  const Device d = Device::cuda(0);
  Tensor warm = zeros(Shape{16}, DType::F32, d);
  for (int rep = 0; rep < 3; ++rep) {
    std::printf("cuda_device_count   %8.1f ns\n", per_call_ns(1000000, [] { (void)cuda_device_count(); }));
    std::printf("empty 4KB u8        %8.1f ns\n",
                per_call_ns(200000, [&] { (void)Tensor::empty(Shape{4096}, DType::U8, d); }));
    std::printf("empty 4KB cpu       %8.1f ns\n",
                per_call_ns(200000, [] { (void)Tensor::empty(Shape{4096}, DType::U8, Device::cpu()); }));
    Tensor a = zeros(Shape{16}, DType::F32, d);
    std::printf("add 16              %8.1f ns\n", per_call_ns(100000, [&] { Tensor c = a + a; }));
    synchronize(d);
  }
}
