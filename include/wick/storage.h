// Allocation and Buffer: refcounted device memory and the typed handles that view it,
// after mlx-native's MlxBuffer.
//
// An Allocation owns (or borrows) one block of device memory. A Buffer is a handle on a
// byte range of an Allocation with a dtype and a shape; handles share the allocation,
// nested slices compose their offsets, and every offset and length is checked. File-backed
// allocations (memory mappings) are read-only: mutable access raises ErrorKind::ReadOnly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/shape.h"

namespace wick {

class Allocation {
 public:
  // owner keeps the memory alive; its deleter frees it (or returns it to a pool, or
  // unmaps a file). A null owner means the memory is borrowed from the caller.
  Allocation(Device device, void* ptr, size_t nbytes, bool read_only, std::shared_ptr<void> owner, std::string origin)
      : device_(device),
        ptr_(ptr),
        nbytes_(nbytes),
        read_only_(read_only),
        owner_(std::move(owner)),
        origin_(std::move(origin)) {}
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  Device device() const { return device_; }
  void* ptr() const { return ptr_; }
  size_t nbytes() const { return nbytes_; }
  bool read_only() const { return read_only_; }
  // Where the memory came from ("cpu heap", "mmap of FILE", ...), for error messages.
  const std::string& origin() const { return origin_; }

 private:
  Device device_;
  void* ptr_;
  size_t nbytes_;
  bool read_only_;
  std::shared_ptr<void> owner_;
  std::string origin_;
};

class Buffer {
 public:
  Buffer() = default;

  // A new uninitialized allocation of nbytes on device (through its backend's allocator).
  static Buffer allocate(Device device, DType dtype, Shape shape);
  // Wraps host memory without copying. With a null owner the caller keeps ptr alive for
  // as long as any view exists.
  static Buffer wrap_host(void* ptr, size_t nbytes, bool read_only, std::shared_ptr<void> owner = nullptr);
  // Maps a whole file read-only; the mapping lives as long as any view of it. The
  // buffer's dtype is u8 and its shape [file size].
  static Buffer map_file(const std::filesystem::path& path);

  bool defined() const { return alloc_ != nullptr; }
  Device device() const;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t byte_offset() const { return byte_offset_; }
  size_t nbytes() const { return byte_length_; }
  int64_t numel() const { return shape_.numel(); }
  bool read_only() const;
  const std::shared_ptr<Allocation>& allocation() const { return alloc_; }

  // A u8 view of byte_length bytes starting byte_offset bytes into this buffer.
  Buffer slice(size_t byte_offset, size_t byte_length) const;
  // This buffer's bytes seen as dtype with shape; the byte length must equal
  // shape.numel() * dtype_size(dtype). Works for packed data too (view as u8).
  Buffer view(DType dtype, Shape shape) const;
  // A typed view of part of this buffer: slice then view.
  Buffer view(size_t byte_offset, DType dtype, Shape shape) const;
  // Same bytes and dtype, another shape with the same element count.
  Buffer reshape(Shape shape) const;

  // Raw pointers to the first byte of the view. mutable_data() refuses read-only memory.
  const void* data() const;
  void* mutable_data() const;

  // Typed CPU access: the buffer must be on the CPU, T's size must match the dtype, the
  // byte length a multiple of sizeof(T), the pointer non-null (unless empty) and aligned.
  template <class T>
  std::span<const T> cpu_span() const {
    check_typed_access(sizeof(T), alignof(T), dtype_v<T>, false);
    return {static_cast<const T*>(data()), byte_length_ / sizeof(T)};
  }
  template <class T>
  std::span<T> cpu_mutable_span() const {
    check_typed_access(sizeof(T), alignof(T), dtype_v<T>, true);
    return {static_cast<T*>(mutable_data()), byte_length_ / sizeof(T)};
  }

 private:
  Buffer(std::shared_ptr<Allocation> alloc, size_t byte_offset, size_t byte_length, DType dtype, Shape shape)
      : alloc_(std::move(alloc)),
        byte_offset_(byte_offset),
        byte_length_(byte_length),
        dtype_(dtype),
        shape_(std::move(shape)) {}
  friend class Tensor;
  void check_typed_access(size_t size, size_t align, DType dtype, bool mutate) const;

  std::shared_ptr<Allocation> alloc_;
  size_t byte_offset_ = 0;  // from the start of the allocation
  size_t byte_length_ = 0;
  DType dtype_ = DType::U8;
  Shape shape_;
};

}  // namespace wick
