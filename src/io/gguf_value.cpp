// gguf::Value: type names, the typed-access error and a short text rendering for tools.
#include <cstdio>
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
  if (type() == ValueType::Array) have += " of " + std::string(value_type_name(std::get<Array>(v_).elem_type));
  fail(ErrorKind::InvalidArgument, "gguf value: requested ", value_type_name(wanted), " but the value is ", have);
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
          const size_t shown = std::min(max_items, v.items.size());
          for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << v.items[i].to_string(max_items);
          if (shown < v.items.size()) os << (shown ? ", " : "") << "... (" << v.items.size() << " items)";
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
