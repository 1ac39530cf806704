// GGUF (v2, v3): llama.cpp's single-file model format. The reader maps the file once and
// validates all of it up front (every defect raises ErrorKind::Format with a one-line
// message naming it); tensors are zero-copy views of the mapping whose bytes stay packed.
// The writer produces v3 files with aligned, padded tensor data.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "wick/error.h"
#include "wick/quant.h"
#include "wick/storage.h"

namespace wick::gguf {

// GGUF metadata value type ids.
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string_view value_type_name(ValueType t);

class Value;
class Parser;

// An array value: its element type (arrays may nest) and its elements in file order.
// Stored compactly, so that a metadata array costs about what it takes in the file:
// numbers and bools as their packed little-endian bytes, strings as one block of
// characters plus end offsets, and arrays of arrays as one Array per element.
class Array {
 public:
  Array() = default;
  // From elements that each have type elem_type (else InvalidArgument).
  Array(ValueType elem_type, const std::vector<Value>& items);
  // From numbers, bools, strings or arrays, packed without a Value per element.
  template <class E>
  static Array of(const std::vector<E>& values);

  ValueType elem_type() const { return elem_type_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Element i (i < size()) as a Value; a copy, so it costs what the element does.
  Value operator[](size_t i) const;
  // Element i of a string array, without a copy.
  std::string_view string_at(size_t i) const;
  // The packed bytes of a number or bool array (size() * element size).
  std::string_view packed_bytes() const { return bytes_; }

  // All elements as E (a number, bool, std::string, Array or std::vector of those);
  // InvalidArgument naming both types if the elements are not E.
  template <class E>
  std::vector<E> to_vector() const;

 private:
  friend class Parser;
  [[noreturn]] void type_mismatch(ValueType wanted) const;
  void push(const Value& v);  // appends v, whose type is elem_type_

  ValueType elem_type_ = ValueType::U8;
  size_t size_ = 0;
  std::string bytes_;           // packed numbers / bools, or the strings' characters
  std::vector<uint64_t> ends_;  // strings: end of string i in bytes_
  std::vector<Array> nested_;   // arrays of arrays (an Array each: smaller than a Value)
};

// Bytes of one packed element (0 for strings and arrays).
size_t packed_size(ValueType t);

// One metadata value. get<T>() returns the value if it holds exactly T and throws
// ErrorKind::InvalidArgument naming both types otherwise (a u32 is not read as an i32);
// get<std::vector<T>>() reads an array whose elements are T.
class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, Array,
                               uint64_t, int64_t, double>;
  Value() = default;
  template <class T>
  requires(!std::is_same_v<std::decay_t<T>, Value>) explicit Value(T v) : v_(std::move(v)) {}

  // Variant index and GGUF type id coincide (the alternatives are in id order).
  ValueType type() const { return ValueType(v_.index()); }
  const Storage& storage() const { return v_; }

  template <class T>
  decltype(auto) get() const {
    if constexpr (is_vector<T>::value) {
      const Array* a = std::get_if<Array>(&v_);
      if (!a) type_mismatch(ValueType::Array);
      return a->to_vector<typename T::value_type>();
    } else {
      const T* p = std::get_if<T>(&v_);
      if (!p) type_mismatch(type_of<T>());
      return static_cast<const T&>(*p);
    }
  }
  template <class T>
  bool holds() const {
    return std::holds_alternative<T>(v_);
  }

  // The ValueType of C++ type T (one of Storage's alternatives).
  template <class T>
  static constexpr ValueType type_of() {
    return ValueType(index_in(static_cast<Storage*>(nullptr), std::type_identity<T>{}));
  }

  // A short human-readable rendering ("7", "\"text\"", "[1, 2, ... (1000 items)]").
  std::string to_string(size_t max_items = 8) const;

 private:
  friend class Array;
  template <class T, class... Ts>
  static constexpr size_t index_in(std::variant<Ts...>*, std::type_identity<T>) {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }
  template <class T>
  struct is_vector : std::false_type {};
  template <class E, class A>
  struct is_vector<std::vector<E, A>> : std::true_type {};
  [[noreturn]] void type_mismatch(ValueType wanted) const;
  Storage v_;
};

template <class E>
Array Array::of(const std::vector<E>& values) {
  Array a;
  a.elem_type_ = Value::type_of<E>();
  a.size_ = values.size();
  if constexpr (std::is_same_v<E, std::string>) {
    a.ends_.reserve(values.size());
    for (const std::string& s : values) {
      a.bytes_ += s;
      a.ends_.push_back(a.bytes_.size());
    }
  } else if constexpr (std::is_same_v<E, Array>) {
    a.nested_ = values;
  } else if constexpr (std::is_same_v<E, bool>) {
    for (const bool b : values) a.bytes_.push_back(char(b));
  } else {
    a.bytes_.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(E));
  }
  return a;
}

template <class E>
std::vector<E> Array::to_vector() const {
  std::vector<E> out;
  if constexpr (Value::is_vector<E>::value) {  // an array of arrays
    if (elem_type_ != ValueType::Array) type_mismatch(ValueType::Array);
    out.reserve(size_);
    for (const Array& v : nested_) out.push_back(v.to_vector<typename E::value_type>());
  } else {
    constexpr ValueType want = Value::type_of<E>();
    if (elem_type_ != want) type_mismatch(want);
    out.reserve(size_);
    if constexpr (std::is_same_v<E, std::string>) {
      for (size_t i = 0; i < size_; ++i) out.emplace_back(string_at(i));
    } else if constexpr (std::is_same_v<E, Array>) {
      out = nested_;
    } else if constexpr (std::is_same_v<E, bool>) {
      for (const char c : bytes_) out.push_back(c != 0);
    } else {
      out.resize(size_);
      if (size_) std::memcpy(out.data(), bytes_.data(), size_ * sizeof(E));  // little-endian host
    }
  }
  return out;
}

inline constexpr uint32_t kDefaultAlignment = 32;

// A parsed and validated GGUF file.
class File {
 public:
  // Maps path read-only and validates it.
  static File open(const std::filesystem::path& path);
  // Validates bytes already in CPU memory; the File keeps the buffer alive.
  static File parse(Buffer bytes);

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // start of the data section
  size_t file_size() const { return bytes_.nbytes(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return key_index_.count(key) != 0; }
  const Value& get(const std::string& key) const;  // throws InvalidArgument if absent

  // Tensors in file order; each bytes buffer views the mapping.
  const std::vector<QuantTensor>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensor_index_.count(name) != 0; }
  const QuantTensor& tensor(const std::string& name) const;  // throws InvalidArgument if absent
  // Offset of a tensor's data relative to the data section, as stored in the file.
  uint64_t tensor_offset(const std::string& name) const;

 private:
  friend class Parser;
  Buffer bytes_;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t> key_index_;
  std::vector<QuantTensor> tensors_;
  std::vector<uint64_t> offsets_;
  std::map<std::string, size_t> tensor_index_;
};

// Whether dequantize() reads this type: the float and block-quantized types, not the
// plain integer types or f64.
bool dequantizable(GgmlType type);
// A tensor of a plain (unblocked) type as a CPU tensor with its exact values: f32, f16,
// bf16, f64 and i64 as themselves, i8 / i16 / i32 widened to i64 (wick has no narrower
// signed type). Unsupported for block-quantized types: dequantize() those.
Tensor plain_tensor(const QuantTensor& t);

// Builds a GGUF v3 file: metadata in insertion order, then tensors, each stored at the
// running offset padded to the alignment (general.alignment if set as a u32, else 32).
class Writer {
 public:
  void set(std::string key, Value value);
  // Packed tensor bytes (any type, e.g. from quantize()).
  void add_tensor(const QuantTensor& t);
  // A float tensor (f32/f16/bf16 stored as its own type; f64 is stored as f32) or an i64
  // tensor (stored as i64). Any rank from 0 to 4.
  void add_tensor(const std::string& name, const Tensor& t);
  // A tensor whose bytes are made when the file is written, one tensor at a time, so a
  // converter holds one converted tensor instead of all of them. make() must return packed
  // bytes of exactly this type and shape (else ShapeMismatch naming the tensor).
  void add_tensor(std::string name, GgmlType type, Shape shape, std::function<QuantTensor()> make);

  std::string serialize() const;
  // Writes through a temporary file next to path, renamed over it once complete: a
  // failed write leaves no partial file (and an existing one untouched).
  void write(const std::filesystem::path& path) const;

 private:
  std::string header(size_t& alignment) const;  // up to the aligned start of the data
  QuantTensor bytes_of(size_t i) const;         // tensor i, made now if it is made late
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<QuantTensor> tensors_;                  // lazy ones: name, type, shape only
  std::vector<std::function<QuantTensor()>> makers_;  // per tensor; empty for stored bytes
};

}  // namespace wick::gguf
