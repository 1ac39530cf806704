// rand/randn through cuRAND's Philox generator, seeded and offset per call so results
// are reproducible for a seed and call sequence. cuRAND draws uniforms in (0, 1]; they
// are mapped to [low, high). f16/bf16 are drawn in f32 and converted.
#include <curand.h>

#include <mutex>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"

namespace wick {

using namespace cuda;

namespace {
// A cuRAND generator is not thread-safe, and seed, offset and generate must stay together:
// calls from several threads are serialized (they are queued on one stream anyway).
std::mutex& rng_mutex() {
  static std::mutex mu;
  return mu;
}

void check_curand(curandStatus_t s, const char* what) {
  if (s != CURAND_STATUS_SUCCESS) fail(ErrorKind::Device, "curand: ", what, " failed (status ", int(s), ")");
}

// (0, 1] -> [low, high), converted to the output type.
template <class Out>
struct MapUniform {
  double low, span;
  template <class In>
  __device__ Out operator()(In u) const {
    return dconvert<Out>(dcompute_t<In>(low + span * (1.0 - double(u))));
  }
};
template <class Out>
struct ConvertTo {
  template <class In>
  __device__ Out operator()(In x) const {
    return dconvert<Out>(x);
  }
};
// The device's cuRAND generator, seeded and offset for one call, held under the lock
// until the call has queued its generation.
struct SeededGenerator {
  std::lock_guard<std::mutex> lock{rng_mutex()};
  curandGenerator_t gen;
  SeededGenerator(CudaBackend& backend, uint64_t seed, uint64_t offset) : gen(backend.curand()) {
    check_curand(curandSetPseudoRandomGeneratorSeed(gen, seed), "seed");
    check_curand(curandSetGeneratorOffset(gen, offset), "offset");
  }
};
}  // namespace

void CudaBackend::rand_uniform(const Tensor& dst, double low, double high, uint64_t seed, uint64_t offset) {
  activate();
  const int64_t n = dst.numel();
  if (n == 0) return;
  const SeededGenerator seeded(*this, seed, offset);
  curandGenerator_t gen = seeded.gen;
  dispatch_float(dst.dtype(), "rand", [&]<class T>() {
    using D = dev_t<T>;
    if constexpr (std::is_same_v<T, double>) {
      check_curand(curandGenerateUniformDouble(gen, dptr<double>(dst) + dst.offset(), size_t(n)), "uniform");
      launch_elementwise<double, double>("rand", stream_, MapUniform<double>{low, high - low}, dst, dst);
    } else {
      // f32 in place; f16/bf16 through an f32 scratch tensor.
      const Tensor tmp = std::is_same_v<T, float> ? dst : Tensor::empty(dst.shape(), DType::F32, device());
      check_curand(curandGenerateUniform(gen, dptr<float>(tmp) + tmp.offset(), size_t(n)), "uniform");
      launch_elementwise<D, float>("rand", stream_, MapUniform<D>{low, high - low}, dst, tmp);
    }
  });
}

void CudaBackend::rand_normal(const Tensor& dst, double mean, double stddev, uint64_t seed, uint64_t offset) {
  activate();
  const int64_t n = dst.numel();
  if (n == 0) return;
  const SeededGenerator seeded(*this, seed, offset);
  curandGenerator_t gen = seeded.gen;
  // cuRAND's normal generators need an even count: draw into a scratch of even length.
  const int64_t even = n + (n & 1);
  dispatch_float(dst.dtype(), "randn", [&]<class T>() {
    using D = dev_t<T>;
    if constexpr (std::is_same_v<T, double>) {
      const Tensor tmp = Tensor::empty(Shape{even}, DType::F64, device());
      check_curand(curandGenerateNormalDouble(gen, dptr<double>(tmp), size_t(even), mean, stddev), "normal");
      launch_elementwise<double, double>("randn", stream_, ConvertTo<double>{}, dst,
                                         tmp.narrow(0, 0, n).reshape(dst.shape()));
    } else {
      const Tensor tmp = Tensor::empty(Shape{even}, DType::F32, device());
      check_curand(curandGenerateNormal(gen, dptr<float>(tmp), size_t(even), float(mean), float(stddev)), "normal");
      launch_elementwise<D, float>("randn", stream_, ConvertTo<D>{}, dst, tmp.narrow(0, 0, n).reshape(dst.shape()));
    }
  });
}

}  // namespace wick
