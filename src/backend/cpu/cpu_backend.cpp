// CPU memory: 64-byte aligned heap blocks (one cache line, any SIMD width); large blocks
// are 2 MiB aligned and marked for transparent huge pages.
#include "backend/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include "backend/cpu/thread_pool.h"

namespace wick {

std::string CpuBackend::name() const { return "CPU (" + std::to_string(cpu::num_threads()) + " threads)"; }

DeviceInfo CpuBackend::info() const {
  DeviceInfo d = Backend::info();
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      d.name = line.substr(line.find(':') + 2) + " (" + std::to_string(cpu::num_threads()) + " threads)";
      break;
    }
  }
  d.total_memory = size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  d.free_memory = size_t(sysconf(_SC_AVPHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  return d;
}

namespace {
// Freed large blocks, kept for reuse by an allocation of the same rounded size. A fresh
// large block costs a page fault per page on first touch (and zeroing by the kernel);
// reusing one costs nothing, which is what repeated ops of one shape (benchmarks, model
// layers, decode steps) want. Bounded: at most kCacheBytes are kept.
class LargeBlockCache {
 public:
  static constexpr size_t kCacheBytes = size_t(1) << 30;
  void* take(size_t rounded) {
    std::lock_guard lock(mu_);
    auto it = blocks_.find(rounded);
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    blocks_.erase(it);
    cached_ -= rounded;
    return p;
  }
  void give(void* p, size_t rounded) {
    {
      std::lock_guard lock(mu_);
      if (cached_ + rounded <= kCacheBytes) {
        blocks_.emplace(rounded, p);
        cached_ += rounded;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, void*> blocks_;
  size_t cached_ = 0;
};

// Never destroyed: tensors may be freed during static destruction.
LargeBlockCache& large_block_cache() {
  static auto* cache = new LargeBlockCache;
  return *cache;
}
}  // namespace

std::shared_ptr<Allocation> CpuBackend::allocate(size_t nbytes) {
  // A fresh large block costs one page fault per 4 KiB page on first touch, which made a
  // 2^24-element f32 add 4x slower than numpy (which asks for huge pages too); with
  // MADV_HUGEPAGE the kernel faults 2 MiB at a time where THP is set to madvise, and
  // freed large blocks are cached for reuse.
  constexpr size_t kHugePage = size_t(2) << 20;
  const bool huge = nbytes >= 2 * kHugePage;
  const size_t align = huge ? kHugePage : 64;
  WICK_CHECK(nbytes <= (size_t(1) << 62), OutOfMemory, "allocate: cannot allocate ", nbytes, " bytes on cpu");
  const size_t rounded = (nbytes + align - 1) / align * align;
  void* p = huge ? large_block_cache().take(rounded) : nullptr;
  if (!p && rounded) {
    p = std::aligned_alloc(align, rounded);
#ifdef MADV_HUGEPAGE
    if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  }
  WICK_CHECK(p != nullptr || rounded == 0, OutOfMemory, "allocate: cannot allocate ", nbytes, " bytes on cpu");
  std::shared_ptr<void> owner(p, [huge, rounded](void* q) {
    if (huge)
      large_block_cache().give(q, rounded);
    else
      std::free(q);
  });
  return std::make_shared<Allocation>(Device::cpu(), p, nbytes, false, std::move(owner), "cpu heap");
}

void CpuBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}
void CpuBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace wick
