// Buffer::allocate asks the device's backend for memory. It lives in the front end, not
// in src/storage, because storage is below the backends (Allocation and Buffer are what
// a backend hands out); a call from storage up to the backend registry would be a cycle.
#include "backend/backend.h"
#include "wick/storage.h"

namespace wick {

Buffer Buffer::allocate(Device device, DType dtype, Shape shape) {
  const int64_t n = shape.numel();
  const size_t nbytes = size_t(checked_mul(n, int64_t(dtype_size(dtype)), "allocate"));
  auto alloc = backend_for(device).allocate(nbytes);
  return Buffer(std::move(alloc), 0, nbytes, dtype, std::move(shape));
}

}  // namespace wick
