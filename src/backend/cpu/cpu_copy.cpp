// copy (strided -> strided, same dtype), cast (dtype conversion) and fill.
#include <cstring>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"

namespace wick {

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  const size_t esize = src.element_size();
  const char* s = static_cast<const char*>(src.storage_data());
  char* d = static_cast<char*>(const_cast<void*>(dst.storage_data()));
  cpu::for_each_run<2>({&dst.layout(), &src.layout()}, [&](auto off, int64_t n, auto st) {
    if (st[0] == 1 && st[1] == 1) {
      std::memcpy(d + off[0] * esize, s + off[1] * esize, size_t(n) * esize);
      return;
    }
    dispatch(src.dtype(), [&]<class T>() {
      T* dp = reinterpret_cast<T*>(d) + off[0];
      const T* sp = reinterpret_cast<const T*>(s) + off[1];
      for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = sp[i * st[1]];
    });
  });
}

void CpuBackend::cast(const Tensor& src, const Tensor& dst) {
  dispatch(src.dtype(), [&]<class From>() {
    dispatch(dst.dtype(), [&]<class To>() {
      const From* s = cpu::base_ptr<const From>(src);
      To* d = cpu::base_ptr<To>(dst);
      cpu::for_each_run<2>({&dst.layout(), &src.layout()}, [&](auto off, int64_t n, auto st) {
        To* dp = d + off[0];
        const From* sp = s + off[1];
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i] = convert<To>(sp[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert<To>(sp[i * st[1]]);
        }
      });
    });
  });
}

void CpuBackend::fill(const Tensor& dst, Scalar value) {
  dispatch(dst.dtype(), [&]<class T>() {
    const T v = value.to<T>();
    T* d = cpu::base_ptr<T>(dst);
    cpu::for_each_run<1>({&dst.layout()}, [&](auto off, int64_t n, auto st) {
      T* p = d + off[0];
      if (st[0] == 1) {
        std::fill(p, p + n, v);
      } else {
        for (int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
      }
    });
  });
}

}  // namespace wick
