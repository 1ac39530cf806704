// Where the host cost of a tiny CUDA op goes: a raw launch of an empty kernel, wick's
// fill_ (one launch, no allocation), Tensor::empty (allocation only) and add (front end,
// allocation and launch), each 20,000 times from C++. Not part of the build (needs nvcc and
// a built libwick); on the GPU machine, after scripts/device/unpack.sh:
//
//   nvcc -O2 -std=c++20 -arch=sm_90 -Iinclude bench/host_cost.cu -Lbuild/src -lwick -o /tmp/host_cost
//   LD_LIBRARY_PATH=build/src /tmp/host_cost
//
// "enqueue" is the host time of the loop, "with drain" adds waiting for the device.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

#include "wick/wick.h"

using namespace wick;

__global__ void empty_kernel(float* p) {
  if (p && threadIdx.x == 1000) p[0] = 1;
}

template <class F>
void time_it(const char* name, int n, Device d, F f) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 2000; ++i) f();
  synchronize(d);
  const auto t0 = clock::now();
  for (int i = 0; i < n; ++i) f();
  const auto t1 = clock::now();
  synchronize(d);
  const auto t2 = clock::now();
  std::printf("%-28s enqueue %.3f us/op, with drain %.3f us/op\n", name,
              std::chrono::duration<double, std::micro>(t1 - t0).count() / n,
              std::chrono::duration<double, std::micro>(t2 - t0).count() / n);
}

int main() {
  const Device d = Device::parse("cuda:0");
  Tensor a = randn(Shape{16}, DType::F32, d), b = randn(Shape{16}, DType::F32, d);
  cudaStream_t s;
  cudaStreamCreate(&s);
  const int n = 20000;
  time_it("raw launch (own stream)", n, d, [&] { empty_kernel<<<1, 256, 0, s>>>(nullptr); });
  cudaStreamSynchronize(s);
  time_it("Tensor::empty 16 f32", n, d, [&] { (void)Tensor::empty(Shape{16}, DType::F32, d); });
  time_it("a.fill_(1)", n, d, [&] { a.fill_(Scalar(1.0)); });
  time_it("add(a, b)", n, d, [&] { (void)add(a, b); });
  cudaStreamDestroy(s);
}
