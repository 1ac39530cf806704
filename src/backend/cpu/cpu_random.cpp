// rand/randn: element i of a (contiguous) output is Philox(seed, offset + i).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/philox.h"

namespace wick {

namespace {
template <class Gen>
void fill_random(const Tensor& dst, Gen gen) {
  dispatch_float(dst.dtype(), "rand", [&]<class T>() {
    T* d = cpu::base_ptr<T>(dst) + dst.offset();
    cpu::parallel_for(dst.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = T(gen(uint64_t(i)));
    });
  });
}
}  // namespace

void CpuBackend::rand_uniform(const Tensor& dst, double low, double high, uint64_t seed, uint64_t offset) {
  fill_random(dst, [&](uint64_t i) { return philox_uniform(seed, offset + i, low, high); });
}

void CpuBackend::rand_normal(const Tensor& dst, double mean, double stddev, uint64_t seed, uint64_t offset) {
  fill_random(dst, [&](uint64_t i) { return philox_normal(seed, offset + i, mean, stddev); });
}

}  // namespace wick
