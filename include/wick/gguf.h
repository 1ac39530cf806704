// GGUF (v2, v3): llama.cpp's single-file model format. The reader maps the file once and
// validates all of it up front (every defect raises ErrorKind::Format with a one-line
// message naming it); tensors are zero-copy views of the mapping whose bytes stay packed.
// The writer produces v3 files with aligned, padded tensor data.
#pragma once

#include <cstdint>
#include <filesystem>
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
// An array value: its element type (arrays may nest) and elements in file order.
struct Array {
  ValueType elem_type = ValueType::U8;
  std::vector<Value> items;
};

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
      using E = typename T::value_type;
      const Array* a = std::get_if<Array>(&v_);
      if (!a) type_mismatch(ValueType::Array);
      T out;
      out.reserve(a->items.size());
      for (const Value& item : a->items) out.push_back(item.get<E>());
      return out;
    } else {
      const T* p = std::get_if<T>(&v_);
      if (!p) type_mismatch(Value(T{}).type());
      return static_cast<const T&>(*p);
    }
  }
  template <class T>
  bool holds() const {
    return std::holds_alternative<T>(v_);
  }

  // A short human-readable rendering ("7", "\"text\"", "[1, 2, ... (1000 items)]").
  std::string to_string(size_t max_items = 8) const;

 private:
  template <class T>
  struct is_vector : std::false_type {};
  template <class E, class A>
  struct is_vector<std::vector<E, A>> : std::true_type {};
  [[noreturn]] void type_mismatch(ValueType wanted) const;
  Storage v_;
};

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

// Builds a GGUF v3 file: metadata in insertion order, then tensors, each stored at the
// running offset padded to the alignment (general.alignment if set as a u32, else 32).
class Writer {
 public:
  void set(std::string key, Value value);
  // Packed tensor bytes (any type, e.g. from quantize()).
  void add_tensor(const QuantTensor& t);
  // A float tensor (f32/f16/bf16 stored as its own type; f64 is stored as f32).
  void add_tensor(const std::string& name, const Tensor& t);

  std::string serialize() const;
  void write(const std::filesystem::path& path) const;

 private:
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<QuantTensor> tensors_;
};

}  // namespace wick::gguf
