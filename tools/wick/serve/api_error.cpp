#include "api_error.h"

namespace wick::serve {

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 408: return "timeout_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json error_body(int status, const std::string& message, const std::string& param, const std::string& code) {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error",
           {{"message", message}, {"type", error_type(status)}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

int status_of(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::InvalidArgument:
    case ErrorKind::IndexOutOfRange:
    case ErrorKind::Format: return 400;
    case ErrorKind::OutOfMemory: return 503;
    default: return 500;
  }
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace wick::serve
