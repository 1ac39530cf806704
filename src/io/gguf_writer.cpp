// GGUF v3 writer: header, metadata, tensor infos, then each tensor's bytes at the
// running offset padded to the alignment (also after the last tensor, as ggml does).
#include <bit>
#include <cstring>
#include <set>

#include "io/write_file.h"
#include "wick/gguf.h"

namespace wick::gguf {

namespace {
class Out {
 public:
  template <class T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s.append(b, sizeof(T));
  }
  void put_string(std::string_view v) {
    put<uint64_t>(v.size());
    s += v;
  }
  void put_value(const Value& v) {
    std::visit(
        [&]<class T>(const T& x) {
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(x);
          } else if constexpr (std::is_same_v<T, Array>) {
            // Array's constructor checked the element types.
            put<uint32_t>(uint32_t(x.elem_type()));
            put<uint64_t>(x.size());
            if (x.elem_type() == ValueType::String) {
              for (size_t i = 0; i < x.size(); ++i) put_string(x.string_at(i));
            } else if (x.elem_type() == ValueType::Array) {
              for (size_t i = 0; i < x.size(); ++i) put_value(x[i]);
            } else {
              s += x.packed_bytes();
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            put<uint8_t>(x ? 1 : 0);
          } else {
            put<T>(x);
          }
        },
        v.storage());
  }
  void pad_to(size_t alignment) { s.resize((s.size() + alignment - 1) / alignment * alignment, '\0'); }
  std::string s;
};

size_t padded(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

void Writer::set(std::string key, Value value) {
  for (auto& [k, v] : metadata_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::add_tensor(const QuantTensor& t) {
  for (const auto& o : tensors_)
    WICK_CHECK(o.name != t.name, InvalidArgument, "gguf writer: duplicate tensor name '", t.name, "'");
  WICK_CHECK(t.shape.rank() <= 4, InvalidArgument, "gguf writer: tensor '", t.name, "' has rank ", t.shape.rank(),
             " (GGUF stores 0 to 4 dimensions)");
  const size_t need =
      size_t(checked_mul(int64_t(ggml_row_bytes(t.type, t.row_elems(), "gguf writer")), t.rows(), "gguf writer"));
  WICK_CHECK(t.bytes.nbytes() == need, ShapeMismatch, "gguf writer: tensor '", t.name, "' of ", ggml_type_name(t.type),
             " ", t.shape, " needs ", need, " bytes but holds ", t.bytes.nbytes());
  tensors_.push_back(t);
  makers_.emplace_back();
}

void Writer::add_tensor(std::string name, GgmlType type, Shape shape, std::function<QuantTensor()> make) {
  for (const auto& o : tensors_)
    WICK_CHECK(o.name != name, InvalidArgument, "gguf writer: duplicate tensor name '", name, "'");
  WICK_CHECK(shape.rank() <= 4, InvalidArgument, "gguf writer: tensor '", name, "' has rank ", shape.rank(),
             " (GGUF stores 0 to 4 dimensions)");
  QuantTensor t{std::move(name), type, std::move(shape), {}};
  (void)checked_mul(int64_t(ggml_row_bytes(t.type, t.row_elems(), "gguf writer")), t.rows(), "gguf writer");
  tensors_.push_back(std::move(t));
  makers_.push_back(std::move(make));
}

QuantTensor Writer::bytes_of(size_t i) const {
  if (!makers_[i]) return tensors_[i];
  const QuantTensor& want = tensors_[i];
  QuantTensor t = makers_[i]();
  const size_t need = ggml_row_bytes(want.type, want.row_elems(), "gguf writer") * size_t(want.rows());
  WICK_CHECK(t.type == want.type && t.shape == want.shape && t.bytes.nbytes() == need, ShapeMismatch,
             "gguf writer: tensor '", want.name, "' was declared ", ggml_type_name(want.type), " ", want.shape,
             " but made as ", ggml_type_name(t.type), " ", t.shape, " of ", t.bytes.nbytes(), " bytes");
  return t;
}

namespace {
size_t stored_bytes(const QuantTensor& t) {
  return ggml_row_bytes(t.type, t.row_elems(), "gguf writer") * size_t(t.rows());
}
}  // namespace

void Writer::add_tensor(const std::string& name, const Tensor& t) {
  if (t.dtype() == DType::I64) {  // stored as its bytes: GGUF's i64 is little-endian int64
    const Tensor c = t.to(Device::cpu()).contiguous();
    QuantTensor q{name, GgmlType::I64, c.shape(),
                  Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(c.nbytes())})};
    if (c.nbytes()) std::memcpy(q.bytes.mutable_data(), c.data(), c.nbytes());
    return add_tensor(q);
  }
  WICK_CHECK(is_float(t.dtype()), DTypeMismatch, "gguf writer: tensor '", name,
             "' must be floating point or i64 (GGUF has no ", t.dtype(), " tensor type), got ", t.dtype());
  GgmlType type = GgmlType::F32;
  if (t.dtype() == DType::F16) type = GgmlType::F16;
  if (t.dtype() == DType::BF16) type = GgmlType::BF16;
  add_tensor(quantize(t, type, name));
}

std::string Writer::header(size_t& alignment) const {
  alignment = kDefaultAlignment;
  for (const auto& [k, v] : metadata_)
    if (k == "general.alignment") {
      WICK_CHECK(v.type() == ValueType::U32 && std::has_single_bit(v.get<uint32_t>()), InvalidArgument,
                 "gguf writer: general.alignment must be a u32 power of two");
      alignment = v.get<uint32_t>();
    }
  Out o;
  o.s = "GGUF";
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(metadata_.size());
  for (const auto& [k, v] : metadata_) {
    o.put_string(k);
    o.put<uint32_t>(uint32_t(v.type()));
    o.put_value(v);
  }
  size_t offset = 0;
  for (const QuantTensor& t : tensors_) {
    o.put_string(t.name);
    o.put<uint32_t>(uint32_t(t.shape.rank()));
    for (size_t d = t.shape.rank(); d-- > 0;) o.put<uint64_t>(uint64_t(t.shape[d]));  // ne: innermost first
    o.put<uint32_t>(uint32_t(t.type));
    o.put<uint64_t>(offset);
    offset += padded(stored_bytes(t), alignment);
  }
  o.pad_to(alignment);
  return std::move(o.s);
}

std::string Writer::serialize() const {
  size_t alignment = 0;
  std::string s = header(alignment);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const QuantTensor t = bytes_of(i);
    if (t.bytes.nbytes()) s.append(static_cast<const char*>(t.bytes.data()), t.bytes.nbytes());
    s.resize(padded(s.size(), alignment), '\0');
  }
  return s;
}

// The header, then each tensor's bytes as it is made: a tensor made late is dropped once
// written. A failure (in make() too) removes the temporary file.
void Writer::write(const std::filesystem::path& path) const {
  size_t alignment = 0;
  const std::string head = header(alignment);
  io::write_file_atomically(path, "gguf writer", [&](std::ostream& os) {
    os.write(head.data(), std::streamsize(head.size()));
    const std::string zeros(alignment, '\0');
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const QuantTensor t = bytes_of(i);
      const size_t n = t.bytes.nbytes();
      if (n) os.write(static_cast<const char*>(t.bytes.data()), std::streamsize(n));
      os.write(zeros.data(), std::streamsize(padded(n, alignment) - n));
    }
  });
}

}  // namespace wick::gguf
