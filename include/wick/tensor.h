// Tensor: a dtype, a Layout and shared storage on a device. Copying a Tensor is
// shallow (like torch::Tensor); views share storage and only build a new Layout.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/layout.h"
#include "wick/scalar.h"
#include "wick/storage.h"

namespace wick {

class Tensor {
 public:
  Tensor() = default;  // undefined; most operations on it throw
  // A tensor over storage with layout; the layout must stay inside the storage.
  Tensor(Buffer storage, Layout layout);

  // ---- creation (copies the data) -------------------------------------------------
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape, Device device = Device::cpu()) {
    return from_data(values.data(), dtype_v<T>, values.size(), std::move(shape), device);
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{int64_t(values.size())});
  }
  template <class T>
  static Tensor from_list(std::initializer_list<T> values, Shape shape, Device device = Device::cpu()) {
    return from_data(values.begin(), dtype_v<T>, values.size(), std::move(shape), device);
  }
  // Copies count elements of dtype from host memory at data.
  static Tensor from_data(const void* data, DType dtype, size_t count, Shape shape, Device device = Device::cpu());
  // Borrows host memory without copying: the caller keeps data alive (and unchanged,
  // if read_only) while any view exists.
  static Tensor from_blob(void* data, DType dtype, Shape shape, bool read_only = false);
  // A tensor over a typed Buffer (its dtype and shape), sharing its memory.
  static Tensor from_buffer(const Buffer& buffer);
  static Tensor empty(Shape shape, DType dtype = DType::F32, Device device = Device::cpu());

  // ---- properties --------------------------------------------------------------------
  bool defined() const { return storage_.defined(); }
  DType dtype() const { return storage_.dtype(); }
  Device device() const { return storage_.device(); }
  const Layout& layout() const { return layout_; }
  const Shape& shape() const { return layout_.shape(); }
  const std::vector<int64_t>& strides() const { return layout_.strides(); }
  int64_t offset() const { return layout_.offset(); }
  size_t rank() const { return layout_.rank(); }
  int64_t dim(int64_t d) const { return layout_.dim(d); }
  // 0 for an undefined tensor (whose shape() is the empty list []): it holds no element.
  int64_t numel() const { return defined() ? layout_.numel() : 0; }
  size_t element_size() const { return dtype_size(dtype()); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  bool is_contiguous() const { return layout_.is_contiguous(); }
  bool read_only() const { return storage_.read_only(); }
  const Buffer& storage() const { return storage_; }
  // Address of element 0 of the storage (layout offsets count from here).
  const void* storage_data() const { return storage_.data(); }
  void* storage_mutable_data() const { return storage_.mutable_data(); }
  // Address of the tensor's first element (storage plus layout offset).
  const void* data() const;
  void* mutable_data() const;
  // True if both tensors view the same allocation.
  bool shares_storage(const Tensor& other) const;

  // ---- reading values back (waits for the device) -------------------------------------
  // All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(out.data(), dtype_v<T>);
    return out;
  }
  // The value of a one-element tensor, converted to T.
  template <class T>
  T item() const {
    T v{};
    check_item();
    copy_to_host(&v, dtype_v<T>);
    return v;
  }
  // Converts to dtype and writes numel() elements, row-major, to host memory.
  void copy_to_host(void* dst, DType dtype) const;

  // ---- conversion and copies ------------------------------------------------------------
  Tensor to(Device device) const;  // shares storage when already there
  Tensor to(DType dtype) const;    // shares storage when already that dtype
  Tensor contiguous() const;       // shares storage when already contiguous
  Tensor clone() const;            // always a new contiguous copy
  // Copies src (broadcast to this shape, converted to this dtype) into this tensor's
  // memory in place. Refuses read-only storage and, like fill_, a destination that maps
  // several indices to one element (an expand()ed view). A src that overlaps this tensor
  // in another layout (a.copy_(a.t())) is read through a temporary, so the result is
  // what a.copy_(a.t().clone()) gives (docs/ops.md, "Aliasing rules for in-place ops").
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(Scalar value);
  Tensor& zero_() { return fill_(Scalar(0)); }

  // ---- views ------------------------------------------------------------------------------
  // A view when the strides allow, a copy otherwise; one entry may be -1.
  Tensor reshape(std::vector<int64_t> shape) const;
  Tensor reshape(const Shape& shape) const { return reshape(shape.dims()); }
  Tensor reshape(std::initializer_list<int64_t> shape) const { return reshape(std::vector<int64_t>(shape)); }
  Tensor view(std::vector<int64_t> shape) const;  // a view or an error
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // transpose of the last two dims (rank >= 2)
  Tensor permute(std::vector<int64_t> order) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // Python-style slice along dim: negative start/end count from the end, clamped; step>0.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops dim
  Tensor broadcast_as(Shape shape) const;
  Tensor expand(Shape shape) const { return broadcast_as(std::move(shape)); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // ---- printing -----------------------------------------------------------------------------
  std::string to_string() const;  // PyTorch style: values (elided when large), dtype, device

 private:
  void check_item() const;
  Buffer storage_;
  Layout layout_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- creation functions ---------------------------------------------------------------------
Tensor zeros(Shape shape, DType dtype = DType::F32, Device device = Device::cpu());
Tensor ones(Shape shape, DType dtype = DType::F32, Device device = Device::cpu());
Tensor full(Shape shape, Scalar value, DType dtype = DType::F32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
Tensor empty_like(const Tensor& t);
// start, start + step, ... while < end (> end for a negative step).
Tensor arange(Scalar start, Scalar end, Scalar step = Scalar(1), DType dtype = DType::F32,
              Device device = Device::cpu());
Tensor arange(int64_t end, DType dtype = DType::I64, Device device = Device::cpu());
Tensor linspace(double start, double end, int64_t steps, DType dtype = DType::F32, Device device = Device::cpu());
Tensor eye(int64_t n, DType dtype = DType::F32, Device device = Device::cpu());
Tensor eye(int64_t n, int64_t m, DType dtype = DType::F32, Device device = Device::cpu());

// Random numbers: reproducible for a given seed, device and call sequence. Each call
// advances the global generator. Float dtypes only.
void manual_seed(uint64_t seed);
Tensor rand(Shape shape, DType dtype = DType::F32, Device device = Device::cpu(), double low = 0.0, double high = 1.0);
Tensor randn(Shape shape, DType dtype = DType::F32, Device device = Device::cpu(), double mean = 0.0,
             double stddev = 1.0);

// ---- joining -------------------------------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// Waits for all queued work on device to finish.
void synchronize(Device device);

}  // namespace wick
