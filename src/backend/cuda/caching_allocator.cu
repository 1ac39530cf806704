#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_check.h"
#include "wick/error.h"

namespace wick::cuda {

CachingAllocator::Block* CachingAllocator::find_free(FreeList& pool, size_t size) {
  Block key{nullptr, size, false};
  auto it = pool.lower_bound(&key);
  if (it == pool.end()) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t segment_size, bool small, size_t requested) {
  if (stats_.limit_bytes && stats_.reserved_bytes + segment_size > stats_.limit_bytes) {
    release_cached_segments();
    ++stats_.oom_retries;
    if (stats_.reserved_bytes + segment_size > stats_.limit_bytes) out_of_memory(requested, "over the memory limit");
  }
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, segment_size);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cached_segments();  // give the cache back to the driver and retry once
    ++stats_.oom_retries;
    err = cudaMalloc(&p, segment_size);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    out_of_memory(requested, cudaGetErrorString(err));
  }
  ++stats_.driver_allocations;
  stats_.reserved_bytes += segment_size;
  return new Block{static_cast<char*>(p), segment_size, small};
}

void CachingAllocator::release_cached_segments() {
  // A free block that spans a whole segment (no neighbours) can go back to the driver.
  // Private pools keep theirs: their graphs may replay.
  for (FreeList* pool : {&general_.small, &general_.large}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (!b->prev && !b->next) {
        cudaFree(b->ptr);
        ++stats_.driver_frees;
        stats_.reserved_bytes -= b->size;
        delete b;
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

void CachingAllocator::out_of_memory(size_t requested, const char* why) {
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  (void)cudaGetLastError();
  fail(ErrorKind::OutOfMemory, "allocate: cannot allocate ", requested, " bytes on cuda:", ordinal_, " (", why, "; ",
       free_bytes, " bytes free on the device of ", total_bytes, ", ", stats_.reserved_bytes,
       " bytes reserved by wick, ", stats_.allocated_bytes, " in use",
       stats_.limit_bytes ? ", limit " + std::to_string(stats_.limit_bytes) : std::string(), ")");
}

void* CachingAllocator::allocate(size_t nbytes) {
  std::lock_guard lock(mu_);
  ++stats_.allocations;
  // No device has this much memory; rejecting it here also keeps the roundings below
  // (round_size, the large-segment rounding) from wrapping around to a small size.
  if (nbytes > std::numeric_limits<size_t>::max() / 4) out_of_memory(nbytes, "larger than any device");
  const size_t size = round_size(nbytes);
  if (kind_ == AllocatorKind::AsyncPool) {
    void* p = nullptr;
    cudaError_t err = cudaMallocFromPoolAsync(&p, size, pool_, stream_);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      cudaStreamSynchronize(stream_);
      cudaMemPoolTrimTo(pool_, 0);
      ++stats_.oom_retries;
      err = cudaMallocFromPoolAsync(&p, size, pool_, stream_);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        out_of_memory(nbytes, cudaGetErrorString(err));
      }
    }
    async_live_[p] = size;
    stats_.allocated_bytes += size;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return p;
  }
  const bool small = size <= kSmallSize;
  FreeList& pool = pool_of(capture_pool_).list(small);
  Block* b = find_free(pool, size);
  if (!b && capture_pool_) {
    // A capture may adopt a free general block: everything that used it earlier is
    // ahead of the graph on the stream; it returns to the general pool with the graph.
    b = find_free(general_.list(small), size);
    if (b) b->pool = capture_pool_;
  }
  if (b) {
    ++stats_.cache_hits;
  } else {
    const size_t segment = small ? kSmallSegment : (size + kLargeRound - 1) / kLargeRound * kLargeRound;
    b = new_segment(segment, small, nbytes);
    b->pool = capture_pool_;
  }
  // Split off the remainder when it is worth keeping: any remainder in the small pool,
  // at least 1 MiB in the large pool (smaller tails stay attached as slack).
  const size_t rest = b->size - size;
  if ((small && rest >= kMinBlock) || (!small && rest > kSmallSize)) {
    Block* tail = new Block{b->ptr + size, rest, small, false, b->pool, b, b->next};
    if (b->next) b->next->prev = tail;
    b->next = tail;
    b->size = size;
    pool.insert(tail);
  }
  b->in_use = true;
  live_[b->ptr] = b;
  stats_.allocated_bytes += b->size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return b->ptr;
}

void CachingAllocator::absorb_next(Block* b) {
  Block* n = b->next;
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  delete n;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(mu_);
  if (auto a = async_live_.find(ptr); a != async_live_.end()) {
    stats_.allocated_bytes -= a->second;
    async_live_.erase(a);
    cudaFreeAsync(ptr, stream_);  // ordered after all work queued so far
    return;
  }
  auto it = live_.find(ptr);
  if (it == live_.end()) return;  // not ours (cannot happen through Allocation)
  Block* b = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= b->size;
  b->in_use = false;
  // Freed inside a capture: the recorded kernels may still touch the block on every
  // replay, so it joins the graph's pool instead of the general one.
  if (capture_pool_ && b->pool == 0) b->pool = capture_pool_;
  // A block whose graph is gone is general again.
  if (b->pool && !private_.count(b->pool)) b->pool = 0;
  insert_free(b);
}

CachingAllocator::Pool& CachingAllocator::pool_of(int id) { return id ? private_.at(id) : general_; }

void CachingAllocator::insert_free(Block* b) {
  FreeList& pool = pool_of(b->pool).list(b->small);
  // Merge with free neighbours of the same segment and pool (a general block that a
  // capture adopted sits between general neighbours and must stay apart from them).
  auto mergeable = [&](const Block* n) { return n && !n->in_use && n->pool == b->pool; };
  if (mergeable(b->prev)) {
    pool.erase(b->prev);
    b = b->prev;
    absorb_next(b);
  }
  if (mergeable(b->next)) {
    pool.erase(b->next);
    absorb_next(b);
  }
  pool.insert(b);
}

int CachingAllocator::begin_private_pool() {
  std::lock_guard lock(mu_);
  WICK_CHECK(kind_ == AllocatorKind::Caching, Unsupported,
             "cuda graph: capture needs the caching allocator (set_allocator(AllocatorKind::Caching))");
  WICK_CHECK(capture_pool_ == 0, InvalidArgument, "cuda graph: a capture is already open on cuda:", ordinal_);
  const int id = next_pool_id_++;
  private_[id];
  capture_pool_ = id;
  return id;
}

void CachingAllocator::end_private_pool() {
  std::lock_guard lock(mu_);
  capture_pool_ = 0;
}

void CachingAllocator::release_private_pool(int id) {
  std::lock_guard lock(mu_);
  auto it = private_.find(id);
  if (it == private_.end()) return;
  std::vector<Block*> blocks(it->second.small.begin(), it->second.small.end());
  blocks.insert(blocks.end(), it->second.large.begin(), it->second.large.end());
  private_.erase(it);
  if (capture_pool_ == id) capture_pool_ = 0;
  for (Block* b : blocks) {
    b->pool = 0;
    insert_free(b);
  }
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mu_);
  release_cached_segments();
  if (pool_) cudaMemPoolTrimTo(pool_, 0);
}

void CachingAllocator::set_limit(size_t bytes) {
  std::lock_guard lock(mu_);
  stats_.limit_bytes = bytes;
}

void CachingAllocator::set_kind(AllocatorKind kind) {
  std::lock_guard lock(mu_);
  if (kind == AllocatorKind::AsyncPool && !pool_) {
    WICK_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, ordinal_));
    uint64_t threshold = std::numeric_limits<uint64_t>::max();  // keep freed memory cached
    WICK_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  kind_ = kind;
}

}  // namespace wick::cuda
