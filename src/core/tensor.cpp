// Tensor: construction, data access, conversion and copies.
#include "wick/tensor.h"

#include <cstring>

#include "core/checks.h"

namespace wick {

using detail::backend_of;

Tensor::Tensor(Buffer storage, Layout layout) : storage_(std::move(storage)), layout_(std::move(layout)) {
  WICK_CHECK(storage_.defined(), InvalidArgument, "tensor: undefined storage");
  WICK_CHECK(layout_.storage_extent() <= storage_.numel(), IndexOutOfRange, "tensor: layout ", layout_.to_string(),
             " reaches element ", layout_.storage_extent(), " but the storage holds ", storage_.numel());
}

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  Buffer b = Buffer::allocate(device, dtype, Shape{shape.numel()});
  return Tensor(std::move(b), Layout(std::move(shape)));
}

Tensor Tensor::from_data(const void* data, DType dtype, size_t count, Shape shape, Device device) {
  WICK_CHECK(int64_t(count) == shape.numel(), ShapeMismatch, "from_data: ", count, " values for shape ", shape, " (",
             shape.numel(), " elements)");
  WICK_CHECK(data != nullptr || count == 0, InvalidArgument, "from_data: null data pointer");
  Tensor t = empty(std::move(shape), dtype, device);
  backend_for(device).copy_from_host(t.storage_.mutable_data(), data, count * dtype_size(dtype));
  return t;
}

Tensor Tensor::from_blob(void* data, DType dtype, Shape shape, bool read_only) {
  const size_t nbytes = size_t(checked_mul(shape.numel(), int64_t(dtype_size(dtype)), "from_blob"));
  Buffer b = Buffer::wrap_host(data, nbytes, read_only).view(dtype, Shape{shape.numel()});
  WICK_CHECK(reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) == 0, InvalidArgument, "from_blob: pointer ", data,
             " is not aligned for ", dtype);
  return Tensor(std::move(b), Layout(std::move(shape)));
}

Tensor Tensor::from_buffer(const Buffer& buffer) {
  WICK_CHECK(buffer.defined(), InvalidArgument, "from_buffer: undefined buffer");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(buffer.data());
  WICK_CHECK(addr % dtype_size(buffer.dtype()) == 0, InvalidArgument, "from_buffer: data at byte offset ",
             buffer.byte_offset(), " is not aligned for ", buffer.dtype());
  return Tensor(buffer.reshape(Shape{buffer.numel()}), Layout(buffer.shape()));
}

const void* Tensor::data() const {
  return static_cast<const char*>(storage_.data()) + size_t(layout_.offset()) * element_size();
}
void* Tensor::mutable_data() const {
  return static_cast<char*>(storage_.mutable_data()) + size_t(layout_.offset()) * element_size();
}

bool Tensor::shares_storage(const Tensor& other) const {
  return defined() && other.defined() && storage_.allocation() == other.storage_.allocation();
}

void Tensor::check_item() const {
  detail::check_defined("item", *this);
  WICK_CHECK(numel() == 1, InvalidArgument, "item: expected a tensor with one element, got shape ", shape());
}

void Tensor::copy_to_host(void* dst, DType dtype) const {
  detail::check_defined("to_vector", *this);
  const Tensor src = to(dtype).contiguous();
  backend_of(src).copy_to_host(dst, src.data(), src.nbytes());
}

Tensor Tensor::to(Device device) const {
  detail::check_defined("to", *this);
  if (device == this->device()) return *this;
  const Tensor src = contiguous();
  Tensor out = empty(shape(), dtype(), device);
  if (src.device().is_cpu()) {
    backend_for(device).copy_from_host(out.storage_.mutable_data(), src.data(), src.nbytes());
  } else if (device.is_cpu()) {
    backend_of(src).copy_to_host(out.storage_.mutable_data(), src.data(), src.nbytes());
  } else {  // between two accelerators: through the host
    return src.to(Device::cpu()).to(device);
  }
  return out;
}

Tensor Tensor::to(DType dtype) const {
  detail::check_defined("to", *this);
  if (dtype == this->dtype()) return *this;
  Tensor out = empty(shape(), dtype, device());
  backend_of(*this).cast(*this, out);
  return out;
}

Tensor Tensor::contiguous() const {
  detail::check_defined("contiguous", *this);
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  detail::check_defined("clone", *this);
  Tensor out = empty(shape(), dtype(), device());
  backend_of(*this).copy(*this, out);
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  detail::common_device("copy_", {this, &src});
  detail::check_writable("copy_", *this);
  Tensor s = src.broadcast_as(shape());
  if (s.dtype() != dtype()) s = s.to(dtype());  // a fresh tensor: no aliasing left
  switch (detail::memory_overlap(*this, s)) {
    case detail::Overlap::Same: return *this;             // onto itself: nothing changes
    case detail::Overlap::Partial: s = s.clone(); break;  // read everything before writing
    case detail::Overlap::None: break;
  }
  backend_of(*this).copy(s, *this);
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  detail::check_defined("fill_", *this);
  detail::check_writable("fill_", *this);
  backend_of(*this).fill(*this, value);
  return *this;
}

void synchronize(Device device) { backend_for(device).synchronize(); }

}  // namespace wick
