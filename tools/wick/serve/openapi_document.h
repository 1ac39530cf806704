// The OpenAPI 3.1 document of wick serve's own API (docs/openapi.json, compiled in): what
// GET /openapi.json answers, and what tests/serve/test_openapi.py checks the server against.
#pragma once

#include <string_view>

namespace wick::serve {

std::string_view openapi_document();

}  // namespace wick::serve
