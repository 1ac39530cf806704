// Errors of the OpenAI-compatible API: an HTTP status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}}. Request parsing throws ApiError; the
// handlers turn it (and wick::Error from the library) into the JSON response.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "wick/error.h"

namespace wick::serve {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(std::move(message)), status(status), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string param;  // the request field at fault, "" when none
  std::string code;   // OpenAI's machine-readable code ("model_not_found"), "" when none
};

// OpenAI's error "type" for an HTTP status (400 invalid_request_error, 401
// authentication_error, 404 not_found_error, 429 rate_limit_error, 5xx server_error, ...).
const char* error_type(int status);

// The response body of an error.
nlohmann::json error_body(int status, const std::string& message, const std::string& param = {},
                          const std::string& code = {});
inline nlohmann::json error_body(const ApiError& e) { return error_body(e.status, e.what(), e.param, e.code); }

// The status a library error stands for when it escapes a request: bad request values are
// the client's (400), out-of-memory is 503 (the server may succeed later), the rest are 500.
int status_of(const Error& e);

// JSON text that never throws on invalid UTF-8 (model output may hold partial characters):
// such bytes are written as U+FFFD.
std::string dump(const nlohmann::json& j);

}  // namespace wick::serve
