// gguf::Value: type names, the typed-access error and a short text rendering for tools.
#include <cstdio>
#include <cstring>
#include <sstream>

#include "wick/gguf.h"

namespace wick::gguf {

std::string_view value_type_name(ValueType t) {
  static constexpr std::string_view kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = uint32_t(t);
  return i < std::size(kNames) ? kNames[i] : std::string_view("invalid");
}

void Value::type_mismatch(ValueType wanted) const {
  std::string have(value_type_name(type()));
  if (type() == ValueType::Array) have += " of " + std::string(value_type_name(std::get<Array>(v_).elem_type()));
  fail(ErrorKind::InvalidArgument, "gguf value: requested ", value_type_name(wanted), " but the value is ", have);
}

size_t packed_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    case ValueType::String:
    case ValueType::Array: return 0;
  }
  return 0;
}

Array::Array(ValueType elem_type, const std::vector<Value>& items) : elem_type_(elem_type) {
  for (const Value& v : items) {
    WICK_CHECK(v.type() == elem_type, InvalidArgument, "gguf array: an array of ", value_type_name(elem_type),
               " cannot hold a ", value_type_name(v.type()));
    push(v);
  }
}

void Array::push(const Value& v) {
  std::visit(
      [&]<class T>(const T& x) {
        if constexpr (std::is_same_v<T, std::string>) {
          bytes_ += x;
          ends_.push_back(bytes_.size());
        } else if constexpr (std::is_same_v<T, Array>) {
          nested_.push_back(x);
        } else {
          const T value = x;  // bool is one byte, 0 or 1, as in the file
          bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
        }
      },
      v.storage());
  ++size_;
}

std::string_view Array::string_at(size_t i) const {
  WICK_CHECK(elem_type_ == ValueType::String, InvalidArgument, "gguf array: requested a string element of an array of ",
             value_type_name(elem_type_));
  WICK_CHECK(i < size_, InvalidArgument, "gguf array: index ", i, " is out of range for ", size_, " elements");
  const size_t begin = i ? size_t(ends_[i - 1]) : 0;
  return std::string_view(bytes_).substr(begin, size_t(ends_[i]) - begin);
}

Value Array::operator[](size_t i) const {
  WICK_CHECK(i < size_, InvalidArgument, "gguf array: index ", i, " is out of range for ", size_, " elements");
  if (elem_type_ == ValueType::String) return Value(std::string(string_at(i)));
  if (elem_type_ == ValueType::Array) return Value(nested_[i]);
  Value out;
  // Decode element i into the variant alternative of elem_type_.
  const char* p = bytes_.data() + i * packed_size(elem_type_);
  auto load = [&]<class T>(T) {
    T x;
    std::memcpy(&x, p, sizeof x);
    out = Value(x);
  };
  switch (elem_type_) {
    case ValueType::U8: load(uint8_t{}); break;
    case ValueType::I8: load(int8_t{}); break;
    case ValueType::U16: load(uint16_t{}); break;
    case ValueType::I16: load(int16_t{}); break;
    case ValueType::U32: load(uint32_t{}); break;
    case ValueType::I32: load(int32_t{}); break;
    case ValueType::F32: load(float{}); break;
    case ValueType::Bool: out = Value(*p != 0); break;
    case ValueType::U64: load(uint64_t{}); break;
    case ValueType::I64: load(int64_t{}); break;
    case ValueType::F64: load(double{}); break;
    case ValueType::String:
    case ValueType::Array: break;  // handled above
  }
  return out;
}

void Array::type_mismatch(ValueType wanted) const {
  fail(ErrorKind::InvalidArgument, "gguf value: requested ", value_type_name(wanted), " but the value is array of ",
       value_type_name(elem_type_));
}

namespace {
void quote(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      os << '\\' << char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      os << buf;
    } else {
      os << char(c);  // UTF-8 passes through
    }
  }
  os << '"';
}
}  // namespace

std::string Value::to_string(size_t max_items) const {
  std::ostringstream os;
  os.precision(17);
  std::visit(
      [&]<class T>(const T& v) {
        if constexpr (std::is_same_v<T, std::string>) {
          quote(os, v);
        } else if constexpr (std::is_same_v<T, Array>) {
          os << '[';
          const size_t shown = std::min(max_items, v.size());
          for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << v[i].to_string(max_items);
          if (shown < v.size()) os << (shown ? ", " : "") << "... (" << v.size() << " items)";
          os << ']';
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (sizeof(T) == 1) {
          os << int(v);  // not as a character
        } else {
          os << v;
        }
      },
      v_);
  return os.str();
}

}  // namespace wick::gguf
