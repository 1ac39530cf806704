#include "wick/memory.h"

#include <atomic>

#include "backend/backend.h"

namespace wick {

MemoryStats memory_stats(Device device) { return backend_for(device).memory_stats(); }
void reset_peak_memory(Device device) { backend_for(device).reset_peak_memory(); }
void empty_cache(Device device) { backend_for(device).empty_cache(); }
void set_memory_limit(Device device, size_t bytes) { backend_for(device).set_memory_limit(bytes); }
void set_allocator(Device device, AllocatorKind kind) { backend_for(device).set_allocator(kind); }

namespace {
std::atomic<bool> g_allow_tf32{false};
}
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

}  // namespace wick
