// JSON Schema as GBNF. Each schema compiles to an expression (a rule, deduplicated by body) for
// the compact documents valid under it, or to nothing when no document is (false, an empty
// enum, a required property that cannot be written). A $ref target becomes one rule, made
// once, so recursive schemas refer to their rule by name. allOf, and a $ref or an anyOf with
// constraints beside it, are merged into plain schemas first (json_schema_merge.cpp).
#include "wick/text/json_schema.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "text/gbnf_emit.h"
#include "text/grammar_impl.h"
#include "text/json_schema_compiler.h"
#include "wick/error.h"

namespace wick::text {
namespace schema {
namespace {

const std::unordered_set<std::string_view> kObjectKeywords = {"properties", "required", "additionalProperties",
                                                              "minProperties", "maxProperties"};
const std::unordered_set<std::string_view> kArrayKeywords = {"items",    "prefixItems", "additionalItems",
                                                             "minItems", "maxItems",    "uniqueItems"};
const std::unordered_set<std::string_view> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::unordered_set<std::string_view> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                                              "exclusiveMaximum", "multipleOf"};

// Whether s has keywords other than these and annotations.
bool only(const Json& s, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : s.items())
    if (!is_annotation(k) && std::find(allowed.begin(), allowed.end(), k) == allowed.end()) return false;
  return true;
}

// The first integer at or above (up) / below a bound, within +-10^17 (past what the
// grammar writes either way).
int64_t to_integer(const Json& v, bool up, bool exclusive) {
  constexpr int64_t kFar = 100'000'000'000'000'000;
  if (v.is_number_integer() || v.is_number_unsigned()) {
    const int64_t i = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), kFar))
                                             : std::clamp<int64_t>(v.get<int64_t>(), -kFar, kFar);
    return exclusive ? (up ? i + 1 : i - 1) : i;
  }
  const double d = std::clamp(v.get<double>(), -1e17, 1e17);
  if (exclusive) return static_cast<int64_t>(up ? std::floor(d) + 1 : std::ceil(d) - 1);
  return static_cast<int64_t>(up ? std::ceil(d) : std::floor(d));
}

}  // namespace

std::string pointer_escape(std::string_view key) {
  std::string out;
  for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

Compiler::Compiler(const Json& root, const JsonSchemaOptions& options, size_t nodes)
    : root_(root), options_(options), json_(rules_), budget_(8 * static_cast<int64_t>(nodes) + 100000) {}

std::string Compiler::run() {
  refs_[&root_].name = "root";
  ref_of_rule_["root"] = "#";
  const Expr e = compile(root_, "", 0, false);
  WICK_CHECK(e, InvalidArgument, "json schema: no document is valid under it",
             root_.is_boolean() ? " (the schema is false)" : "");
  rules_.define("root", *e);
  // The grammar compiler's own checks, on the text it will be given, named as $refs.
  std::string text = rules_.str();
  if (const auto bad = gbnf_problem(text)) {
    const std::string rule = bad->rule.substr(0, bad->rule.find('/'));  // a group: its rule
    const auto ref = ref_of_rule_.find(rule);
    const std::string named = ref == ref_of_rule_.end() ? "#" : ref->second;
    if (bad->kind == GbnfProblem::NoSentence)
      fail(ErrorKind::InvalidArgument, "json schema: recursion with no base case through $ref '", named,
           "' (no finite document ends it)");
    fail(ErrorKind::InvalidArgument, "json schema: $ref '", named,
         "' refers to itself before any character of the document (recursion with no base case)");
  }
  return text;
}

void Compiler::unsupported(const std::string& path, std::string_view what) {
  WICK_CHECK(!options_.strict, Unsupported, "json schema: ", where(path), ": ", what,
             " cannot be enforced by a grammar (strict mode)");
}

std::string Compiler::hint(const std::string& path) {
  std::vector<std::string_view> parts;
  for (size_t i = 0; i < path.size();) {
    const size_t end = std::min(path.find('/', i + 1), path.size());
    const std::string_view seg = std::string_view(path).substr(i + 1, end - i - 1);
    if (seg != "properties" && seg != "$defs" && seg != "definitions") parts.push_back(seg);
    i = end;
  }
  const bool definition = path.starts_with("/$defs/") || path.starts_with("/definitions/");
  std::string out = parts.size() > 3 || definition ? "" : "root";
  for (size_t i = parts.size() > 3 ? parts.size() - 3 : 0; i < parts.size(); ++i) out.append("-").append(parts[i]);
  return out;
}

Expr Compiler::compile(const Json& s, const std::string& path, int depth, bool name) {
  WICK_CHECK(depth <= kMaxDepth, InvalidArgument, "json schema: nested deeper than ", kMaxDepth, " at ", where(path));
  WICK_CHECK(--budget_ > 0, InvalidArgument, "json schema: too large once its references and merges are expanded");
  if (s.is_boolean()) return s.get<bool>() ? Expr(json_.value()) : std::nullopt;
  WICK_CHECK(s.is_object(), InvalidArgument, "json schema: ", where(path), " is not a schema but ", s.type_name());
  for (const auto& [k, v] : s.items())
    if (!is_keyword(k) && !is_annotation(k))
      unsupported(path + "/" + pointer_escape(k), std::string("keyword '").append(k).append("'"));
  const Expr e = compile_schema(s, path, depth);
  return e && name ? Expr(rules_.add(hint(path), *e)) : e;
}

Expr Compiler::compile_schema(const Json& s, const std::string& path, int depth) {
  if ((s.contains("$ref") && !only(s, {"$ref", "$defs", "definitions"})) || s.contains("allOf"))
    return compile(keep(normalize(s, path, depth)), path, depth + 1, false);
  if (s.contains("$ref")) return compile_ref(s["$ref"], path, depth);
  if (s.contains("anyOf") || s.contains("oneOf")) return compile_alternatives(s, path, depth);

  const auto t = s.find("type");
  unsigned types = t != s.end() ? type_bits(*t, path) : kAnyType;
  if (s.value("nullable", false)) types |= kNull;
  if (s.contains("enum") || s.contains("const")) return compile_enum(s, path, types);
  if (t == s.end()) {
    // Keywords of a type narrow "any value" to the types they are of: a subset of what the
    // schema allows (it takes the other types whole), so the documents stay valid.
    types = s.value("nullable", false) ? kNull : 0;
    for (const auto& [k, v] : s.items()) {
      if (kObjectKeywords.count(k)) types |= kObject;
      if (kArrayKeywords.count(k)) types |= kArray;
      if (kStringKeywords.count(k)) types |= kString;
      if (kNumberKeywords.count(k)) types |= kInteger;  // whose bounds are exact, unlike a number's
    }
    if ((types & ~kNull) == 0) return json_.value();  // nothing narrows it
  }

  std::vector<std::string> alts;
  auto add = [&](const Expr& e) {
    if (e) alts.push_back(*e);
  };
  if (types & kObject) add(compile_object(s, path, depth));
  if (types & kArray) add(compile_array(s, path, depth));
  if (types & kString) add(compile_string(s, path));
  if (types & (kInteger | kFraction)) add(compile_number(s, path, !(types & kFraction)));
  if (types & kBoolean) alts.push_back(json_.boolean());
  if (types & kNull) alts.push_back(gbnf::literal("null"));
  if (alts.empty()) return std::nullopt;
  return gbnf::alternatives(alts);
}

Expr Compiler::compile_ref(const Json& ref, const std::string& path, int depth) {
  WICK_CHECK(ref.is_string(), InvalidArgument, "json schema: ", where(path), ": $ref is not a string");
  const std::string& text = ref.get_ref<const std::string&>();
  const Json& target = resolve(text, path);
  RefState& state = refs_[&target];
  if (state.done) return state.expr;
  if (state.busy) {  // a reference from inside its own schema: by name, defined below
    if (state.name.empty()) {
      state.name = rules_.reserve(hint(text.substr(1)));
      ref_of_rule_[state.name] = text;
    }
    return state.name;
  }
  state.busy = true;
  Expr e = compile(target, text.substr(1), depth + 1, false);
  RefState& after = refs_[&target];  // the map may have grown meanwhile
  if (!after.name.empty()) {
    WICK_CHECK(e, InvalidArgument, "json schema: $ref '", text, "' allows no document (recursion with no base case)");
    rules_.define(after.name, *e);
    e = after.name;
  } else if (e) {
    e = rules_.add(hint(text.substr(1)), *e);
  }
  after.done = true;
  after.expr = e;
  return e;
}

const Json& Compiler::resolve(const std::string& ref, const std::string& path) {
  auto fail_resolve = [&](std::string_view why) {
    fail(ErrorKind::InvalidArgument, "json schema: $ref '", ref, "' at ", where(path), " does not resolve: ", why);
  };
  if (ref.empty() || ref[0] != '#') fail_resolve("only references into this schema ('#...') are supported");
  if (ref.size() == 1) return root_;
  if (ref[1] != '/') fail_resolve("anchors are not supported, only JSON pointers ('#/$defs/Name')");
  const Json* node = &root_;
  for (size_t i = 1; i < ref.size();) {
    const size_t end = std::min(ref.find('/', i + 1), ref.size());
    std::string token;
    for (size_t k = i + 1; k < end; ++k) {  // %XX (a URI fragment), then ~1 and ~0
      if (ref[k] == '%' && k + 2 < end && std::isxdigit(static_cast<unsigned char>(ref[k + 1])) &&
          std::isxdigit(static_cast<unsigned char>(ref[k + 2]))) {
        token += static_cast<char>(std::stoi(ref.substr(k + 1, 2), nullptr, 16));
        k += 2;
      } else {
        token += ref[k];
      }
    }
    std::string key;
    for (size_t k = 0; k < token.size(); ++k) {
      if (token[k] == '~' && k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
        key += token[++k] == '0' ? '~' : '/';
      } else {
        key += token[k];
      }
    }
    i = end;
    if (node->is_object()) {
      node = member(*node, key);
      if (!node) fail_resolve("no member '" + key + "'");
    } else if (node->is_array() && !key.empty() && key.size() < 10 &&
               key.find_first_not_of("0123456789") == std::string::npos && (key == "0" || key[0] != '0') &&
               std::stoul(key) < node->size()) {
      node = &(*node)[std::stoul(key)];
    } else {
      fail_resolve("no element '" + key + "'");
    }
  }
  return *node;
}

const Json* Compiler::member(const Json& object, const std::string& key) {
  if (object.size() <= 16) {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  auto [cached, fresh] = members_.try_emplace(&object);
  if (fresh)
    for (const auto& [k, v] : object.items()) cached->second.emplace(k, &v);
  auto it = cached->second.find(key);
  return it == cached->second.end() ? nullptr : it->second;
}

unsigned Compiler::type_bits(const Json& type, const std::string& path) {
  auto bits = [&](const Json& name) -> unsigned {
    const std::string_view n = name.is_string() ? std::string_view(name.get_ref<const std::string&>()) : "";
    if (n == "null") return kNull;
    if (n == "boolean") return kBoolean;
    if (n == "object") return kObject;
    if (n == "array") return kArray;
    if (n == "string") return kString;
    if (n == "integer") return kInteger;
    if (n == "number") return kInteger | kFraction;
    fail(ErrorKind::InvalidArgument, "json schema: ", where(path + "/type"), ": unknown type ", name.dump());
  };
  if (!type.is_array()) return bits(type);
  unsigned out = 0;
  for (const Json& t : type) out |= bits(t);
  return out;
}

Expr Compiler::compile_alternatives(const Json& s, const std::string& path, int depth) {
  const bool any = s.contains("anyOf");
  if (any && s.contains("oneOf")) unsupported(path + "/oneOf", "oneOf beside anyOf");
  const std::string key = any ? "anyOf" : "oneOf";
  const Json& alts = s[key];
  WICK_CHECK(alts.is_array() && !alts.empty(), InvalidArgument, "json schema: ", where(path + "/" + key),
             " is not a non-empty array");
  if (!any && options_.strict) check_exclusive(alts, path + "/oneOf");
  // Constraints beside the alternatives apply to each of them.
  const bool alone = only(s, {"anyOf", "oneOf", "$defs", "definitions"});
  Json rest = alone ? Json() : normalize(s, path, depth);
  if (rest.is_object()) rest.erase("anyOf"), rest.erase("oneOf");
  std::vector<std::string> out;
  for (size_t i = 0; i < alts.size(); ++i) {
    const std::string at = path + "/" + key + "/" + std::to_string(i);
    const Expr e = alone ? compile(alts[i], at, depth + 1)
                         : compile(keep(merge(rest, normalize(alts[i], at, depth + 1), at)), at, depth + 1);
    if (e) out.push_back(*e);
  }
  if (out.empty()) return std::nullopt;
  return gbnf::alternatives(out);
}

Expr Compiler::compile_enum(const Json& s, const std::string& path, unsigned types) {
  // The values that also meet the constraints beside them; those checked here are the ones
  // a value can be tested against directly.
  for (const auto& [k, v] : s.items())
    if (!is_annotation(k) && !is_enum_checked(k))
      unsupported(path + "/" + pointer_escape(k), std::string("'").append(k).append("' beside enum/const"));
  std::vector<const Json*> values;
  if (const auto e = s.find("enum"); e != s.end()) {
    WICK_CHECK(e->is_array(), InvalidArgument, "json schema: ", where(path + "/enum"), " is not an array");
    for (const Json& v : *e) values.push_back(&v);
  }
  if (const auto c = s.find("const"); c != s.end()) {
    if (!s.contains("enum")) values.push_back(&*c);
    std::erase_if(values, [&](const Json* v) { return *v != *c; });
  }
  std::vector<std::string> alts;
  for (const Json* v : values)
    if ((value_bits(*v) & types) && enum_value_fits(s, *v)) alts.push_back(value_text(*v, 0));
  if ((types & kNull) && s.value("nullable", false)) alts.push_back(gbnf::literal("null"));
  if (alts.empty()) return std::nullopt;
  return gbnf::alternatives(alts);
}

std::string Compiler::value_text(const Json& v, int depth) {
  WICK_CHECK(depth <= kMaxDepth, InvalidArgument, "json schema: an enum/const value nested deeper than ", kMaxDepth);
  if (!v.is_structured()) return gbnf::literal(v.dump());
  const std::string sep = gbnf::literal(",") + " " + json_.ws() + " ";
  std::string out = gbnf::literal(v.is_object() ? "{" : "[");
  size_t i = 0;
  for (const auto& [k, x] : v.items()) {
    out += " " + (i++ ? sep : std::string());
    if (v.is_object()) out += gbnf::json_key(k) + " " + json_.ws() + " ";
    out += value_text(x, depth + 1);
  }
  return out + " " + gbnf::literal(v.is_object() ? "}" : "]");
}

bool Compiler::enum_value_fits(const Json& s, const Json& v) {
  auto count = [&](std::string_view k, size_t n, bool at_least) {
    const auto b = s.find(k);
    return b == s.end() || !b->is_number() || (at_least ? n >= b->get<double>() : n <= b->get<double>());
  };
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    const size_t chars = std::count_if(t.begin(), t.end(), [](char c) { return (c & 0xC0) != 0x80; });
    return count("minLength", chars, true) && count("maxLength", chars, false);
  }
  if (v.is_array()) return count("minItems", v.size(), true) && count("maxItems", v.size(), false);
  if (v.is_object()) {
    if (const auto r = s.find("required"); r != s.end() && r->is_array())
      for (const Json& k : *r)
        if (!k.is_string() || !v.contains(k.get_ref<const std::string&>())) return false;
    return count("minProperties", v.size(), true) && count("maxProperties", v.size(), false);
  }
  if (!v.is_number()) return true;
  const double x = v.get<double>();
  auto bound = [&](std::string_view k, std::string_view draft4_flag, bool lower) {
    const auto b = s.find(k);
    if (b == s.end() || !b->is_number()) return true;
    const double limit = b->get<double>();
    const auto flag = draft4_flag.empty() ? s.end() : s.find(draft4_flag);
    const bool exclusive = draft4_flag.empty() || (flag != s.end() && *flag == Json(true));
    return lower ? (exclusive ? x > limit : x >= limit) : (exclusive ? x < limit : x <= limit);
  };
  return bound("minimum", "exclusiveMinimum", true) && bound("exclusiveMinimum", "", true) &&
         bound("maximum", "exclusiveMaximum", false) && bound("exclusiveMaximum", "", false);
}

Expr Compiler::compile_number(const Json& s, const std::string& path, bool integer) {
  auto number_at = [&](std::string_view k) -> const Json* {
    const auto b = s.find(k);
    if (b == s.end() || b->is_boolean()) return nullptr;  // draft 4's exclusive flags: read below
    WICK_CHECK(b->is_number(), InvalidArgument, "json schema: ", where(path + "/" + std::string(k)),
               " is not a number");
    return &*b;
  };
  if (s.contains("multipleOf")) unsupported(path + "/multipleOf", "multipleOf");
  const Json *min = number_at("minimum"), *max = number_at("maximum");
  const Json *xmin = number_at("exclusiveMinimum"), *xmax = number_at("exclusiveMaximum");
  const bool draft4_xmin = s.value("exclusiveMinimum", Json(false)) == Json(true);
  const bool draft4_xmax = s.value("exclusiveMaximum", Json(false)) == Json(true);
  if (integer) {
    int64_t lo = -gbnf::kMaxInteger, hi = gbnf::kMaxInteger;
    if (min) lo = std::max(lo, to_integer(*min, true, draft4_xmin));
    if (xmin) lo = std::max(lo, to_integer(*xmin, true, true));
    if (max) hi = std::min(hi, to_integer(*max, false, draft4_xmax));
    if (xmax) hi = std::min(hi, to_integer(*xmax, false, true));
    if (lo > hi) return std::nullopt;
    if (lo == -gbnf::kMaxInteger && hi == gbnf::kMaxInteger) return json_.integer();
    return gbnf::integer_range(lo, hi);
  }
  // Beyond integers only "at least 0" and "above 0" are written exactly: the lower bound
  // that holds (the highest, exclusive on a tie) must be 0.
  if (max || xmax) unsupported(path + (max ? "/maximum" : "/exclusiveMaximum"), "an upper bound on a number");
  std::optional<std::pair<double, bool>> low;  // value, exclusive
  for (const auto& [b, exclusive] : {std::pair{min, draft4_xmin}, {xmin, true}}) {
    if (!b) continue;
    const double v = b->get<double>();
    if (!low || v > low->first || (v == low->first && exclusive)) low = {v, exclusive};
  }
  if (low && low->first != 0) {
    unsupported(path + (min ? "/minimum" : "/exclusiveMinimum"), "a lower bound on a number other than 0");
    return json_.number(false, false);
  }
  return json_.number(low.has_value(), low && low->second);
}

}  // namespace schema

std::string json_schema_to_gbnf(std::string_view text, const JsonSchemaOptions& options) {
  schema::Json root;
  try {
    root = schema::Json::parse(text);
  } catch (const schema::Json::exception& e) {
    fail(ErrorKind::InvalidArgument, "json schema: not JSON: ", e.what());
  }
  try {
    return schema::Compiler(root, options, schema::count_nodes(root)).run();
  } catch (const schema::Json::exception& e) {  // a keyword's value of the wrong JSON type
    fail(ErrorKind::InvalidArgument, "json schema: a keyword holds a value of the wrong type: ", e.what());
  }
}

}  // namespace wick::text
