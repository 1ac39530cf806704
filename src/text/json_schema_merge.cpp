// The JSON Schema compiler's merges (json_schema_compiler.h): allOf, and a $ref or anyOf with
// constraints beside it, become one plain schema; oneOf's alternatives are checked to exclude
// each other in strict mode; the keyword lists and the size check of the input.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "text/json_schema_compiler.h"
#include "wick/error.h"

namespace wick::text::schema {

bool is_annotation(std::string_view keyword) {
  static const std::unordered_set<std::string_view> kAnnotations = {"title",    "description", "default",  "examples",
                                                                    "$schema",  "$id",         "$comment", "deprecated",
                                                                    "readOnly", "writeOnly"};
  return kAnnotations.count(keyword) > 0;
}

bool is_keyword(std::string_view keyword) {
  static const std::unordered_set<std::string_view> kKeywords = {
      // Any type.
      "type", "enum", "const", "nullable", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
      // Objects.
      "properties", "required", "additionalProperties", "minProperties", "maxProperties",
      // Arrays.
      "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
      // Strings and numbers.
      "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
      "multipleOf"};
  return kKeywords.count(keyword) > 0;
}

bool is_enum_checked(std::string_view keyword) {
  static const std::unordered_set<std::string_view> kChecked = {
      // What the values are.
      "enum", "const", "type", "nullable", "$defs", "definitions",
      // What each value is tested against.
      "minLength", "maxLength", "minItems", "maxItems", "required", "minProperties", "maxProperties", "minimum",
      "maximum", "exclusiveMinimum", "exclusiveMaximum"};
  return kChecked.count(keyword) > 0;
}

unsigned value_bits(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return kNull;
    case Json::value_t::boolean: return kBoolean;
    case Json::value_t::object: return kObject;
    case Json::value_t::array: return kArray;
    case Json::value_t::string: return kString;
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) ? kInteger : kFraction;
    }
    default: return kInteger;
  }
}

size_t count_nodes(const Json& root) {
  // Without recursion: the limit is what it checks. Deeper than any schema the compiler
  // takes (kMaxDepth levels of schema, each a few of JSON).
  constexpr size_t kMaxJsonDepth = 4 * kMaxDepth;
  size_t nodes = 0;
  std::vector<std::pair<const Json*, size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    ++nodes;
    WICK_CHECK(depth < kMaxJsonDepth, InvalidArgument, "json schema: nested deeper than ", kMaxJsonDepth,
               " JSON levels");
    if (node->is_structured())
      for (const Json& child : *node) stack.push_back({&child, depth + 1});
  }
  return nodes;
}

Json Compiler::normalize(const Json& s, const std::string& path, int depth) {
  WICK_CHECK(depth <= kMaxDepth, InvalidArgument, "json schema: nested deeper than ", kMaxDepth, " at ", where(path),
             " (its $ref and allOf expanded)");
  if (s.is_boolean()) return s;
  WICK_CHECK(s.is_object(), InvalidArgument, "json schema: ", where(path), " is not a schema but ", s.type_name());
  Json out = Json::object();
  for (const auto& [k, v] : s.items())
    if (k != "$ref" && k != "allOf") out[k] = v;
  for (const auto& [flag, bound] : {std::pair{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}}) {
    if (!out.contains(flag) || !out[flag].is_boolean()) continue;
    if (out[flag].get<bool>() && out.contains(bound)) {
      out[flag] = out[bound];
      out.erase(bound);
    } else {
      out.erase(flag);
    }
  }
  if (out.contains("const")) {
    const Json c = out["const"];
    Json values = Json::array();
    if (out.contains("enum") && out["enum"].is_array()) {
      for (const Json& v : out["enum"])
        if (v == c) values.push_back(v);
    } else {
      values.push_back(c);
    }
    out["enum"] = std::move(values);
    out.erase("const");
  }
  if (out.contains("type") && !out["type"].is_array()) out["type"] = Json::array({out["type"]});
  if (out.value("nullable", false)) {
    if (out.contains("type")) out["type"].push_back("null");
    if (out.contains("enum") && out["enum"].is_array()) out["enum"].push_back(nullptr);
  }
  out.erase("nullable");
  if (out.contains("items") && out["items"].is_array()) {
    out["prefixItems"] = out["items"];
    if (out.contains("additionalItems"))
      out["items"] = out["additionalItems"];
    else
      out.erase("items");
  }
  out.erase("additionalItems");  // without a tuple `items` it means nothing

  if (const auto ref = s.find("$ref"); ref != s.end()) {
    WICK_CHECK(ref->is_string(), InvalidArgument, "json schema: ", where(path), ": $ref is not a string");
    const std::string& text = ref->get_ref<const std::string&>();
    out = merge(out, normalize(resolve(text, path), text.substr(1), depth + 1), path);
  }
  if (const auto all = s.find("allOf"); all != s.end()) {
    WICK_CHECK(all->is_array() && !all->empty(), InvalidArgument, "json schema: ", where(path + "/allOf"),
               " is not a non-empty array");
    for (size_t i = 0; i < all->size(); ++i) {
      const std::string at = path + "/allOf/" + std::to_string(i);
      out = merge(out, normalize((*all)[i], at, depth + 1), at);
    }
  }
  return out;
}

Json Compiler::merge(const Json& a, const Json& b, const std::string& path) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  auto both = [](const Json& x, const Json& y) -> Json {
    if (x == Json(true) || x == y) return y;
    if (y == Json(true)) return x;
    if (x == Json(false) || y == Json(false)) return false;
    return Json{{"allOf", Json::array({x, y})}};
  };
  Json out = a;
  // A property one side does not list is held to that side's additionalProperties.
  if (a.contains("properties") || b.contains("properties")) {
    const Json none = Json::object();
    const Json& pa = a.contains("properties") ? a["properties"] : none;
    const Json& pb = b.contains("properties") ? b["properties"] : none;
    WICK_CHECK(pa.is_object() && pb.is_object(), InvalidArgument, "json schema: ", where(path),
               ": properties is not an object");
    std::unordered_map<std::string_view, const Json*> in_a, in_b;
    for (const auto& [k, v] : pa.items()) in_a.emplace(k, &v);
    for (const auto& [k, v] : pb.items()) in_b.emplace(k, &v);
    auto part = [](const Json& side, const std::unordered_map<std::string_view, const Json*>& listed,
                   std::string_view k) -> const Json* {
      if (auto it = listed.find(k); it != listed.end()) return it->second;
      const auto addl = side.find("additionalProperties");
      return addl == side.end() ? nullptr : &*addl;
    };
    Json props = Json::object();
    auto add = [&](const std::string& k) {
      const Json *x = part(a, in_a, k), *y = part(b, in_b, k);
      props[k] = x && y ? both(*x, *y) : *(x ? x : y);
    };
    for (const auto& [k, v] : pa.items()) add(k);
    for (const auto& [k, v] : pb.items())
      if (!in_a.count(k)) add(k);
    out["properties"] = std::move(props);
  }
  // Element j of a tuple is held to the other side's element j, or to its `items` past its
  // own tuple.
  if (a.contains("prefixItems") || b.contains("prefixItems")) {
    const Json none = Json::array();
    const Json& ta = a.contains("prefixItems") ? a["prefixItems"] : none;
    const Json& tb = b.contains("prefixItems") ? b["prefixItems"] : none;
    WICK_CHECK(ta.is_array() && tb.is_array(), InvalidArgument, "json schema: ", where(path),
               ": prefixItems is not an array");
    auto element = [](const Json& side, const Json& tuple, size_t j) {
      return j < tuple.size() ? tuple[j] : side.value("items", Json(true));
    };
    Json tuple = Json::array();
    for (size_t j = 0; j < std::max(ta.size(), tb.size()); ++j)
      tuple.push_back(both(element(a, ta, j), element(b, tb, j)));
    out["prefixItems"] = std::move(tuple);
  }
  static const std::unordered_set<std::string_view> kLowest = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                                               "minProperties"};
  static const std::unordered_set<std::string_view> kHighest = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                                                "maxProperties"};
  for (const auto& [k, vb] : b.items()) {
    if (k == "properties" || k == "prefixItems") continue;
    const auto ia = out.find(k);
    if (ia == out.end()) {
      out[k] = vb;
      continue;
    }
    Json& va = *ia;
    if (is_annotation(k) || k == "$defs" || k == "definitions") continue;
    if (k == "type") {
      const unsigned bits = type_bits(va, path) & type_bits(vb, path);
      if (!bits) return false;
      Json names = Json::array();
      for (const auto& [bit, name] : {std::pair{kNull, "null"},
                                      {kBoolean, "boolean"},
                                      {kObject, "object"},
                                      {kArray, "array"},
                                      {kString, "string"}})
        if (bits & bit) names.push_back(name);
      if ((bits & kNumber) == kNumber)
        names.push_back("number");
      else if (bits & kInteger)
        names.push_back("integer");
      va = std::move(names);
    } else if (k == "required") {
      for (const Json& r : vb)
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
    } else if (k == "additionalProperties" || k == "items") {
      va = both(va, vb);
    } else if (k == "enum") {
      Json kept = Json::array();
      for (const Json& v : va)
        if (std::find(vb.begin(), vb.end(), v) != vb.end()) kept.push_back(v);
      if (kept.empty()) return false;
      va = std::move(kept);
    } else if (kLowest.count(k) && va.is_number() && vb.is_number()) {
      if (va < vb) va = vb;
    } else if (kHighest.count(k) && va.is_number() && vb.is_number()) {
      if (vb < va) va = vb;
    } else if (k == "uniqueItems") {
      va = va == Json(true) || vb == Json(true);
    } else if (va != vb) {
      fail(ErrorKind::Unsupported, "json schema: ", where(path), ": allOf (or $ref with siblings) with two different '",
           k, "' cannot be merged into one schema");
    }
  }
  return out;
}

unsigned Compiler::accepted_types(const Json& s, int depth) {
  if (s.is_boolean()) return s.get<bool>() ? kAnyType : 0;
  if (!s.is_object() || depth > 16) return kAnyType;
  unsigned out = kAnyType;
  if (const auto r = s.find("$ref"); r != s.end() && r->is_string())
    out &= accepted_types(resolve(r->get<std::string>(), ""), depth + 1);
  if (const auto t = s.find("type"); t != s.end()) out &= type_bits(*t, "") | (s.value("nullable", false) ? kNull : 0);
  if (const auto c = s.find("const"); c != s.end()) out &= value_bits(*c);
  if (const auto e = s.find("enum"); e != s.end() && e->is_array()) {
    unsigned bits = 0;
    for (const Json& v : *e) bits |= value_bits(v);
    out &= bits;
  }
  for (const char* k : {"anyOf", "oneOf"})
    if (const auto alts = s.find(k); alts != s.end() && alts->is_array()) {
      unsigned bits = 0;
      for (const Json& alt : *alts) bits |= accepted_types(alt, depth + 1);
      out &= bits;
    }
  if (const auto all = s.find("allOf"); all != s.end() && all->is_array())
    for (const Json& m : *all) out &= accepted_types(m, depth + 1);
  return out;
}

void Compiler::check_exclusive(const Json& alts, const std::string& path) {
  // Alternatives of types no value shares, or constants no two of which are equal: then at
  // most one alternative holds for any document and oneOf is anyOf.
  std::vector<unsigned> bits;
  for (const Json& alt : alts) bits.push_back(accepted_types(alt, 0));
  bool disjoint = true;
  for (size_t i = 0; i < bits.size(); ++i)
    for (size_t j = i + 1; j < bits.size(); ++j) disjoint = disjoint && !(bits[i] & bits[j]);
  if (disjoint) return;
  std::vector<std::vector<const Json*>> values;
  size_t total = 0;
  for (const Json& a : alts) {
    const Json* alt = &a;
    for (int hops = 0; alt->is_object() && alt->contains("$ref") && hops < 16; ++hops)
      alt = &resolve((*alt)["$ref"].get<std::string>(), path);
    auto& vs = values.emplace_back();
    if (alt->is_object() && alt->contains("const"))
      vs.push_back(&(*alt)["const"]);
    else if (alt->is_object() && alt->contains("enum") && (*alt)["enum"].is_array())
      for (const Json& v : (*alt)["enum"]) vs.push_back(&v);
    else
      return unsupported(path, "oneOf whose alternatives may overlap");
    total += vs.size();
  }
  if (total > 10000) return unsupported(path, "oneOf over more than 10000 constants");
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = i + 1; j < values.size(); ++j)
      for (const Json* x : values[i])
        for (const Json* y : values[j])
          if (*x == *y) return unsupported(path, "oneOf whose alternatives share a value");
}

}  // namespace wick::text::schema
