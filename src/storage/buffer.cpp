#include <cerrno>
#include <cstring>

#include "storage/file_mapping.h"
#include "wick/storage.h"

namespace wick {

namespace {
size_t checked_add(size_t a, size_t b, const char* op) {
  size_t r;
  WICK_CHECK(!__builtin_add_overflow(a, b, &r), InvalidArgument, op, ": byte offset ", a, " + ", b, " overflows");
  return r;
}
}  // namespace

Buffer Buffer::wrap_host(void* ptr, size_t nbytes, bool read_only, std::shared_ptr<void> owner) {
  WICK_CHECK(ptr != nullptr || nbytes == 0, InvalidArgument, "wrap_host: null pointer for ", nbytes, " bytes");
  auto alloc = std::make_shared<Allocation>(Device::cpu(), ptr, nbytes, read_only, std::move(owner),
                                            read_only ? "borrowed read-only host memory" : "borrowed host memory");
  return Buffer(std::move(alloc), 0, nbytes, DType::U8, Shape{int64_t(nbytes)});
}

Buffer Buffer::map_file(const std::filesystem::path& path) {
  auto mapping = std::make_shared<FileMapping>(path);
  void* ptr = const_cast<void*>(static_cast<const void*>(mapping->data()));
  const size_t n = mapping->size();
  auto alloc = std::make_shared<Allocation>(Device::cpu(), ptr, n, true, mapping, "memory mapping of " + path.string());
  return Buffer(std::move(alloc), 0, n, DType::U8, Shape{int64_t(n)});
}

Device Buffer::device() const { return alloc_ ? alloc_->device() : Device::cpu(); }
bool Buffer::read_only() const { return alloc_ && alloc_->read_only(); }

Buffer Buffer::slice(size_t offset, size_t length) const {
  WICK_CHECK(defined(), InvalidArgument, "slice: undefined buffer");
  const size_t end = checked_add(offset, length, "slice");
  WICK_CHECK(end <= byte_length_, IndexOutOfRange, "slice: byte range [", offset, ", ", end,
             ") out of bounds for a buffer of ", byte_length_, " bytes");
  return Buffer(alloc_, byte_offset_ + offset, length, DType::U8, Shape{int64_t(length)});
}

Buffer Buffer::view(DType dtype, Shape shape) const {
  WICK_CHECK(defined(), InvalidArgument, "view: undefined buffer");
  const int64_t n = shape.numel();
  const size_t need = size_t(checked_mul(n, int64_t(dtype_size(dtype)), "view"));
  WICK_CHECK(need == byte_length_, ShapeMismatch, "view: ", dtype, " ", shape, " needs ", need,
             " bytes but the buffer holds ", byte_length_);
  return Buffer(alloc_, byte_offset_, byte_length_, dtype, std::move(shape));
}

Buffer Buffer::view(size_t offset, DType dtype, Shape shape) const {
  const size_t need = size_t(checked_mul(shape.numel(), int64_t(dtype_size(dtype)), "view"));
  return slice(offset, need).view(dtype, std::move(shape));
}

Buffer Buffer::reshape(Shape shape) const {
  WICK_CHECK(shape.numel() == numel(), ShapeMismatch, "reshape: cannot view ", shape_, " (", numel(), " elements) as ",
             shape, " (", shape.numel(), " elements)");
  return Buffer(alloc_, byte_offset_, byte_length_, dtype_, std::move(shape));
}

const void* Buffer::data() const {
  if (!alloc_ || !alloc_->ptr()) return nullptr;
  return static_cast<const char*>(alloc_->ptr()) + byte_offset_;
}

void* Buffer::mutable_data() const {
  WICK_CHECK(defined(), InvalidArgument, "mutable_data: undefined buffer");
  WICK_CHECK(!alloc_->read_only(), ReadOnly, "write: refusing to modify read-only memory (", alloc_->origin(),
             "); make a copy with clone() first");
  return const_cast<void*>(data());
}

void Buffer::check_typed_access(size_t size, size_t align, DType dtype, bool mutate) const {
  WICK_CHECK(defined(), InvalidArgument, "cpu_span: undefined buffer");
  WICK_CHECK(device().is_cpu(), DeviceMismatch, "cpu_span: buffer is on ", device(), ", not cpu");
  WICK_CHECK(size == dtype_size(dtype_) && dtype == dtype_, DTypeMismatch, "cpu_span: buffer holds ", dtype_,
             ", requested ", dtype);
  WICK_CHECK(byte_length_ % size == 0, InvalidArgument, "cpu_span: ", byte_length_,
             " bytes is not a multiple of the element size ", size);
  const void* p = data();
  WICK_CHECK(p != nullptr || byte_length_ == 0, InvalidArgument, "cpu_span: null data pointer");
  WICK_CHECK(reinterpret_cast<uintptr_t>(p) % align == 0, InvalidArgument, "cpu_span: data at byte offset ",
             byte_offset_, " is not aligned to ", align, " bytes for ", dtype_);
  if (mutate) (void)mutable_data();
}

}  // namespace wick
