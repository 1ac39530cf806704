// The JSON of a request body, parsed with bounds, and typed access to its fields that
// names the field in every error (400 "max_tokens: expected an integer, got string").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace wick::serve {

// Objects/arrays one request may nest. OpenAI requests nest a few levels (messages ->
// content parts); the bound keeps a hostile "[[[[..." from costing more than its bytes.
inline constexpr int kMaxJsonDepth = 32;

// Parses a request body: ApiError 400 for malformed JSON (nlohmann's message, cut short),
// invalid UTF-8 in a string, nesting beyond kMaxJsonDepth, or a body that is not an object.
nlohmann::json parse_request_body(std::string_view body);

// The fields of one JSON object. Absent and null fields read as nullopt (clients send null
// for "not given"); a present field of the wrong type or outside its range is an ApiError
// 400 naming it (with the object's path: "stream_options.include_usage").
class Fields {
 public:
  // ApiError 400 naming `path` when j is not an object.
  Fields(const nlohmann::json& j, std::string path = {});

  const nlohmann::json* get(std::string_view name) const;  // nullptr when absent or null
  std::optional<bool> boolean(std::string_view name) const;
  std::optional<int64_t> integer(std::string_view name, int64_t lo, int64_t hi) const;
  std::optional<double> number(std::string_view name, double lo, double hi) const;
  std::optional<std::string> string(std::string_view name) const;

  std::string name_of(std::string_view field) const;  // "path.field" (or "field")
  [[noreturn]] void wrong_type(std::string_view field, const char* expected) const;

 private:
  const nlohmann::json& j_;
  std::string path_;
};

// The JSON type of j as a user reads it ("string", "integer", "array", ...).
const char* json_type_name(const nlohmann::json& j);

}  // namespace wick::serve
