#include "wick/error.h"

namespace wick {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::ShapeMismatch: return "shape mismatch";
    case ErrorKind::DTypeMismatch: return "dtype mismatch";
    case ErrorKind::DeviceMismatch: return "device mismatch";
    case ErrorKind::IndexOutOfRange: return "index out of range";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::ReadOnly: return "read-only";
    case ErrorKind::OutOfMemory: return "out of memory";
    case ErrorKind::Io: return "i/o error";
    case ErrorKind::Format: return "format error";
    case ErrorKind::Device: return "device error";
    case ErrorKind::Internal: return "internal error";
  }
  return "error";
}

}  // namespace wick
