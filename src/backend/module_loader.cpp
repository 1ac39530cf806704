// Loads the CUDA backend module (libwick_cuda.so) on first use, and is the one place that
// answers for CUDA when it is absent: no devices, and every CUDA entry point raises
// Unsupported with the reason the module is not there.
//
// Where the module is looked for: $WICK_CUDA_MODULE (a path) if set, else beside
// libwick.so (the build tree puts both in one folder, `cmake --install` both in lib/).
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "backend/cuda_events.h"
#include "backend/device_module.h"
#include "wick/build_info.h"

namespace wick {

namespace {

struct Loaded {
  DeviceModule* module = nullptr;
  std::string status;
};

// The folder of the shared object that holds this function (libwick.so, or the program
// when libwick is linked into it).
std::filesystem::path own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

Loaded load() {
  const char* env = std::getenv("WICK_CUDA_MODULE");
  if (!build_info().cuda && !(env && *env)) return {nullptr, "not built: wick was configured without nvcc"};
  const std::filesystem::path path = env && *env ? std::filesystem::path(env) : own_folder() / "libwick_cuda.so";
  // RTLD_LOCAL: the CUDA libraries the module pulls in stay out of the global namespace.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return {nullptr, std::string("cannot load ") + path.string() + ": " + (why ? why : "unknown error")};
  }
  auto entry = reinterpret_cast<DeviceModuleEntry>(dlsym(handle, kCudaModuleEntry));
  if (!entry) return {nullptr, path.string() + " is not a wick CUDA module (no " + kCudaModuleEntry + ")"};
  DeviceModule* m = entry(kDeviceModuleAbi, build_info().version.c_str());
  if (!m) return {nullptr, path.string() + " was built for another version of libwick"};
  // The handle is never closed: backends and their CUDA state live until the process ends.
  return {m, "loaded from " + path.string()};
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

DeviceModule& module_or_fail(const char* what) {
  if (DeviceModule* m = loaded().module) return *m;
  fail(ErrorKind::Unsupported, what, ": the CUDA backend is not available (", loaded().status, ")");
}

}  // namespace

DeviceModule* cuda_module() { return loaded().module; }
std::string cuda_module_status() { return loaded().status; }

int cuda_backend_device_count() {
  DeviceModule* m = cuda_module();
  return m ? m->device_count() : 0;
}

Backend& cuda_backend(int ordinal) {
  // On every CUDA allocation's path: no message is built unless it fails.
  if (DeviceModule* m = cuda_module()) return m->backend(ordinal);
  fail(ErrorKind::Unsupported, "device: cuda:", ordinal, " requested, but the CUDA backend is not available (",
       loaded().status, ")");
}

namespace detail {
void* cuda_event_record(int ordinal) { return module_or_fail("DeviceEvent").event_record(ordinal); }
float cuda_event_elapsed_ms(int ordinal, void* start, void* stop) {
  return module_or_fail("DeviceEvent").event_elapsed_ms(ordinal, start, stop);
}
void cuda_event_destroy(int ordinal, void* event) noexcept {
  if (DeviceModule* m = cuda_module()) m->event_destroy(ordinal, event);
}
}  // namespace detail

}  // namespace wick
