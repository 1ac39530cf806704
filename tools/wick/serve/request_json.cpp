#include "request_json.h"

#include <cmath>
#include <sstream>

#include "api_error.h"

namespace wick::serve {

namespace {
// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1,
// column 7: "; the position is useful, the prefix is not. Long ones (last read: '...') are cut.
std::string parse_message(const std::string& what) {
  std::string m = what;
  if (auto p = m.find("] "); p != std::string::npos) m = m.substr(p + 2);
  if (m.size() > 200) m = m.substr(0, 200) + "...";
  return m;
}
}  // namespace

nlohmann::json parse_request_body(std::string_view body) {
  // The callback sees every value with its depth; throwing from it stops the parser before
  // anything deeper is built (nlohmann's parser itself is iterative, so no stack overflow).
  struct TooDeep {};
  auto bound = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (depth >= kMaxJsonDepth &&
        (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start))
      throw TooDeep{};
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.begin(), body.end(), bound);
  } catch (const TooDeep&) {
    throw ApiError(400, "request body nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const nlohmann::json::parse_error& e) {
    const std::string what = e.what();
    if (what.find("UTF-8") != std::string::npos || what.find("surrogate") != std::string::npos)
      throw ApiError(400, "request body is not valid UTF-8 (" + parse_message(what) + ")");
    throw ApiError(400, "request body is not valid JSON: " + parse_message(what));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range: a number beyond double (1e999)
    throw ApiError(400, std::string("request body is not valid JSON: ") + parse_message(e.what()));
  }
  if (!j.is_object()) throw ApiError(400, std::string("request body must be a JSON object, got ") + json_type_name(j));
  return j;
}

const char* json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "number";
    default: return "binary";
  }
}

Fields::Fields(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j.is_object())
    throw ApiError(400,
                   (path_.empty() ? std::string("request") : path_) + ": expected an object, got " + json_type_name(j),
                   path_);
}

std::string Fields::name_of(std::string_view field) const {
  return path_.empty() ? std::string(field) : path_ + "." + std::string(field);
}

void Fields::wrong_type(std::string_view field, const char* expected) const {
  throw ApiError(400, name_of(field) + ": expected " + expected + ", got " + json_type_name(*get(field)),
                 name_of(field));
}

const nlohmann::json* Fields::get(std::string_view name) const {
  const auto it = j_.find(name);
  return it == j_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> Fields::boolean(std::string_view name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean");
  return v->get<bool>();
}

std::optional<int64_t> Fields::integer(std::string_view name, int64_t lo, int64_t hi) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  // Unsigned values above INT64_MAX are out of range, not a type error.
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
    throw ApiError(400, name_of(name) + ": must be at most " + std::to_string(hi), name_of(name));
  if (!v->is_number_integer()) wrong_type(name, "an integer");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) {
    const std::string range =
        hi == INT64_MAX ? ">= " + std::to_string(lo) : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw ApiError(400, name_of(name) + ": must be " + range + ", got " + std::to_string(x), name_of(name));
  }
  return x;
}

std::optional<double> Fields::number(std::string_view name, double lo, double hi) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) {  // NaN cannot come from JSON, but keep the comparison NaN-safe
    std::ostringstream os;
    os << name_of(name) << ": must be in [" << lo << ", " << hi << "], got " << x;
    throw ApiError(400, os.str(), name_of(name));
  }
  return x;
}

std::optional<std::string> Fields::string(std::string_view name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string");
  return v->get<std::string>();
}

}  // namespace wick::serve
