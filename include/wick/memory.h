// Device memory statistics and controls (the CUDA caching allocator; on the CPU the
// statistics are zero and the controls do nothing).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/device.h"

namespace wick {

struct MemoryStats {
  size_t allocated_bytes = 0;       // in live tensors
  size_t reserved_bytes = 0;        // held from the driver (allocated + cached)
  size_t peak_allocated_bytes = 0;  // since the start or the last reset_peak_memory()
  size_t limit_bytes = 0;           // the cap on reserved bytes (0 = none)
  uint64_t driver_allocations = 0;  // cudaMalloc calls
  uint64_t driver_frees = 0;        // cudaFree calls
  uint64_t allocations = 0;         // requests served
  uint64_t cache_hits = 0;          // requests served from the cache
  uint64_t oom_retries = 0;         // out-of-memory events that freed the cache and retried
};

enum class AllocatorKind : uint8_t {
  Caching,    // wick's size-class caching allocator (default)
  AsyncPool,  // the driver's stream-ordered pool (cudaMallocAsync)
};

MemoryStats memory_stats(Device device);
void reset_peak_memory(Device device);
// Returns cached, unused blocks to the driver.
void empty_cache(Device device);
// Caps the bytes the allocator may reserve (0 removes the cap). Allocations past the
// cap first free the cache, then raise ErrorKind::OutOfMemory.
void set_memory_limit(Device device, size_t bytes);
// Chooses the allocator for later allocations on device (existing blocks stay valid).
void set_allocator(Device device, AllocatorKind kind);

// Lets f32 matmuls and convolutions on CUDA use TF32 tensor cores (faster, ~1e-3 relative
// error). Off by default: f32 matmuls and convolutions are exact f32.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Sets allow_tf32() for the lifetime of a scope and restores the value it had before on
// exit, also when an exception or an early return leaves the scope: a benchmark or test
// that flips the flag by hand (set, run, set back) leaks the setting into everything
// after it as soon as the run in between throws. Scopes nest (each restores what it
// found). The flag is process-wide, not per thread: scopes on several threads at once
// overwrite each other's setting.
class AllowTf32Scope {
 public:
  explicit AllowTf32Scope(bool allow) : previous_(allow_tf32()) { set_allow_tf32(allow); }
  ~AllowTf32Scope() { set_allow_tf32(previous_); }
  AllowTf32Scope(const AllowTf32Scope&) = delete;
  AllowTf32Scope& operator=(const AllowTf32Scope&) = delete;

 private:
  bool previous_;
};

}  // namespace wick
