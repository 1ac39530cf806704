// The JSON Schema compiler behind json_schema_to_gbnf, shared by json_schema.cpp (schemas,
// $ref, anyOf, enum, numbers), json_schema_objects.cpp (objects, arrays, strings) and
// json_schema_merge.cpp (allOf and the other merges, oneOf's check).
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "text/gbnf_emit.h"
#include "wick/text/json_schema.h"

namespace wick::text::schema {

using Json = nlohmann::ordered_json;      // keeps `properties` in the schema's order
using Expr = std::optional<std::string>;  // nullopt: no document is valid

inline constexpr int kMaxDepth = 128;

// JSON types as bits; "number" is kInteger | kFraction.
inline constexpr unsigned kNull = 1, kBoolean = 2, kObject = 4, kArray = 8, kString = 16, kInteger = 32, kFraction = 64,
                          kNumber = kInteger | kFraction, kAnyType = 127;

bool is_annotation(std::string_view keyword);
std::string pointer_escape(std::string_view key);  // a JSON pointer's token: ~ as ~0, / as ~1
bool is_keyword(std::string_view keyword);         // the ones the compiler reads
// The keywords an enum/const value is checked against (Compiler::enum_value_fits).
bool is_enum_checked(std::string_view keyword);
unsigned value_bits(const Json& v);    // the type of a value (1.0 is an integer)
size_t count_nodes(const Json& root);  // InvalidArgument when nested deeper than JSON allows here

class Compiler {
 public:
  Compiler(const Json& root, const JsonSchemaOptions& options, size_t nodes);
  std::string run();  // the grammar

 private:
  struct RefState {
    bool busy = false, done = false;
    std::string name;  // reserved when referred to from inside itself
    Expr expr;
  };

  // An expression for the documents valid under s (named as a rule unless `name` is false).
  Expr compile(const Json& s, const std::string& path, int depth, bool name = true);
  Expr compile_schema(const Json& s, const std::string& path, int depth);
  Expr compile_ref(const Json& ref, const std::string& path, int depth);
  Expr compile_alternatives(const Json& s, const std::string& path, int depth);
  Expr compile_enum(const Json& s, const std::string& path, unsigned types);
  Expr compile_object(const Json& s, const std::string& path, int depth);
  Expr compile_array(const Json& s, const std::string& path, int depth);
  Expr compile_string(const Json& s, const std::string& path);
  Expr compile_number(const Json& s, const std::string& path, bool integer);

  std::string value_text(const Json& v, int depth);  // one enum/const value
  bool enum_value_fits(const Json& s, const Json& v);
  unsigned type_bits(const Json& type, const std::string& path);
  // A sequence that is too long to repeat inside the next one becomes a rule.
  std::string shorten(const std::string& expr, const std::string& path);
  // minItems and the like: -1 when absent; `over` (after unsupported()) past gbnf::kMaxRepeat.
  int64_t count(const Json& s, std::string_view key, const std::string& path, int64_t over);

  // json_schema_merge.cpp: s with $ref and allOf merged in, nullable, const, draft 4's
  // exclusive flags and draft 7's tuple `items` written the 2020 way.
  Json normalize(const Json& s, const std::string& path, int depth);
  Json merge(const Json& a, const Json& b, const std::string& path);
  void check_exclusive(const Json& alts, const std::string& path);
  unsigned accepted_types(const Json& s, int depth);
  const Json& keep(Json s) { return arena_.emplace_back(std::move(s)); }

  const Json& resolve(const std::string& ref, const std::string& path);
  const Json* member(const Json& object, const std::string& key);
  void unsupported(const std::string& path, std::string_view what);
  static std::string where(const std::string& path) { return path.empty() ? "(root)" : path; }
  static std::string hint(const std::string& path);

  const Json& root_;
  JsonSchemaOptions options_;
  gbnf::RuleSet rules_;
  gbnf::JsonRules json_;
  int64_t budget_;  // compile() calls left
  std::unordered_map<const Json*, RefState> refs_;
  std::unordered_map<std::string, std::string> ref_of_rule_;
  std::unordered_map<const Json*, std::unordered_map<std::string_view, const Json*>> members_;
  std::deque<Json> arena_;  // merged schemas, kept while compiling
};

}  // namespace wick::text::schema
