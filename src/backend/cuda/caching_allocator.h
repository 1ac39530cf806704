// The CUDA caching allocator (after PyTorch's CUDACachingAllocator, simplified to one
// stream per device). Requests are rounded to size classes; freed blocks go back to a
// best-fit free list and are reused without synchronizing, which is safe because every
// kernel of a device runs on its one stream, in order. Large free blocks are split and
// neighbours merged. Reserved memory can be capped; on out-of-memory the cache is
// released and the request retried once before an error names requested, free and
// reserved bytes.
//
// CUDA-graph capture: while a capture is open, requests are served from a private pool
// that belongs to the graph (segments cudaMalloc'ed for it, plus blocks of the general
// pool that are freed during the capture, since the recorded kernels may still read
// them on every replay). The pool's blocks are reused within the capture, in stream
// order, and go back to the general pool only when the graph is released.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <set>
#include <unordered_map>

#include "wick/memory.h"

namespace wick::cuda {

class CachingAllocator {
 public:
  CachingAllocator(int ordinal, cudaStream_t stream) : ordinal_(ordinal), stream_(stream) {}
  ~CachingAllocator() = default;  // memory is reclaimed at process exit

  void* allocate(size_t nbytes);
  void free(void* ptr);

  MemoryStats stats() const;
  void reset_peak();
  void empty_cache();
  void set_limit(size_t bytes);
  void set_kind(AllocatorKind kind);

  // Opens a private pool for a graph capture and routes requests to it; returns its id.
  int begin_private_pool();
  // Stops routing requests to the private pool (it stays reserved for its graph).
  void end_private_pool();
  // The graph is gone: the pool's free blocks return to the general pool, its live
  // blocks when they are freed.
  void release_private_pool(int id);

  // Rounding rules (public for tests and benchmarks).
  static constexpr size_t kMinBlock = 512;          // every size is a multiple
  static constexpr size_t kSmallSize = 1 << 20;     // <= 1 MiB: small pool
  static constexpr size_t kSmallSegment = 2 << 20;  // small blocks come from 2 MiB segments
  static constexpr size_t kLargeRound = 2 << 20;    // large segments: multiples of 2 MiB
  static size_t round_size(size_t n) { return n < kMinBlock ? kMinBlock : (n + kMinBlock - 1) / kMinBlock * kMinBlock; }

 private:
  struct Block {
    char* ptr;
    size_t size;
    bool small;
    bool in_use = false;
    int pool = 0;           // 0: general; else the private pool of a graph
    Block* prev = nullptr;  // neighbours inside one driver segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using FreeList = std::set<Block*, BySize>;

  struct Pool {
    FreeList small, large;
    FreeList& list(bool small_block) { return small_block ? small : large; }
  };
  Pool& pool_of(int id);
  // Returns a free block to its pool's list, merged with free neighbours of that pool.
  void insert_free(Block* b);
  Block* find_free(FreeList& pool, size_t size);
  Block* new_segment(size_t segment_size, bool small, size_t requested);
  void release_cached_segments();
  // Merges b's next neighbour (already out of the free lists) into b.
  static void absorb_next(Block* b);
  [[noreturn]] void out_of_memory(size_t requested, const char* why);

  int ordinal_;
  cudaStream_t stream_;  // the device's one stream: all use of a block is ordered on it
  mutable std::mutex mu_;
  Pool general_;
  std::unordered_map<int, Pool> private_;  // live private pools by id
  int capture_pool_ = 0;                   // requests go here while a capture is open
  int next_pool_id_ = 1;
  std::unordered_map<void*, Block*> live_;
  MemoryStats stats_;
  AllocatorKind kind_ = AllocatorKind::Caching;
  cudaMemPool_t pool_ = nullptr;                  // for AllocatorKind::AsyncPool
  std::unordered_map<void*, size_t> async_live_;  // async-pool blocks and their sizes
};

}  // namespace wick::cuda
