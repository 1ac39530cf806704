// wick::Error: the one exception type. Every message starts with the op that failed
// and names the offending shapes, dtypes, devices or index values.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wick {

enum class ErrorKind {
  InvalidArgument,  // a value the op cannot accept (bad dim, negative size, ...)
  ShapeMismatch,    // shapes that cannot be combined
  DTypeMismatch,    // dtypes that cannot be combined or are not supported by the op
  DeviceMismatch,   // tensors on different devices in one op
  IndexOutOfRange,  // an index outside its bound
  Unsupported,      // an op/dtype/device combination that is not implemented
  ReadOnly,         // mutation of read-only (file-backed) memory
  OutOfMemory,      // an allocation that failed
  Io,               // the operating system refused a file operation
  Format,           // a malformed file or header
  Device,           // a device/driver failure (CUDA error, missing device)
  Internal,         // a bug in wick
};

std::string_view error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
// Concatenates anything with an operator<< into a string.
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Throws wick::Error(kind, "<parts...>").
template <class... Args>
[[noreturn]] void fail(ErrorKind kind, const Args&... parts) {
  throw Error(kind, detail::cat(parts...));
}

}  // namespace wick

// Throws wick::Error(kind, parts...) unless cond holds. The message parts are only
// formatted on failure, so checks on hot paths cost a branch.
#define WICK_CHECK(cond, kind, ...)                       \
  do {                                                    \
    if (!(cond)) [[unlikely]]                             \
      ::wick::fail(::wick::ErrorKind::kind, __VA_ARGS__); \
  } while (0)
