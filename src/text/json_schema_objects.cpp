// Objects, arrays and strings of the JSON Schema compiler (json_schema_compiler.h).
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "text/json_schema_compiler.h"
#include "wick/error.h"

namespace wick::text::schema {
namespace {

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + " " + b; }

}  // namespace

std::string Compiler::shorten(const std::string& expr, const std::string& path) {
  // Long enough to be worth a name; short enough that the chains below stay linear in size.
  return expr.size() > 96 ? rules_.add(hint(path) + "-rest", expr) : expr;
}

int64_t Compiler::count(const Json& s, std::string_view key, const std::string& path, int64_t over) {
  const auto v = s.find(key);
  if (v == s.end()) return -1;
  const bool whole =
      v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0) ||
      (v->is_number_float() && v->get<double>() >= 0 && v->get<double>() == std::floor(v->get<double>()));
  WICK_CHECK(whole, InvalidArgument, "json schema: ", where(path + "/" + std::string(key)),
             " is not a non-negative integer");
  const auto n = static_cast<int64_t>(std::min(v->get<double>(), 1e15));
  if (n <= gbnf::kMaxRepeat) return n;
  unsupported(path + "/" + std::string(key),
              std::string(key).append(" over ").append(std::to_string(gbnf::kMaxRepeat)));
  return over;
}

Expr Compiler::compile_object(const Json& s, const std::string& path, int depth) {
  for (const char* k : {"minProperties", "maxProperties"})
    if (s.contains(k)) unsupported(path + "/" + k, k);
  const auto props = s.find("properties");
  WICK_CHECK(props == s.end() || props->is_object(), InvalidArgument, "json schema: ", where(path + "/properties"),
             " is not an object");
  std::unordered_set<std::string_view> required;
  std::vector<std::string_view> required_order;
  if (const auto r = s.find("required"); r != s.end()) {
    WICK_CHECK(r->is_array(), InvalidArgument, "json schema: ", where(path + "/required"), " is not an array");
    for (const Json& k : *r) {
      WICK_CHECK(k.is_string(), InvalidArgument, "json schema: ", where(path + "/required"), " holds ", k.dump());
      const std::string_view name = k.get_ref<const std::string&>();
      if (required.insert(name).second) required_order.push_back(name);
    }
  }
  // Properties not listed: additionalProperties' schema, any value when it is absent and
  // objects are open, none when closed.
  const auto addl = s.find("additionalProperties");
  const Expr extra_value = addl != s.end()           ? compile(*addl, path + "/additionalProperties", depth + 1)
                           : options_.closed_objects ? std::nullopt
                                                     : Expr(json_.value());
  const std::string ws = json_.ws();
  auto member = [&](std::string_view key, const std::string& value) {
    return gbnf::json_key(key) + " " + ws + " " + value;
  };
  struct Member {
    std::string expr;
    bool required;
  };
  std::vector<Member> members;
  std::vector<std::string_view> listed;
  std::unordered_set<std::string_view> in_properties;
  if (props != s.end()) {
    for (const auto& [k, v] : props->items()) {
      listed.push_back(k);
      in_properties.insert(k);
      const Expr e = compile(v, path + "/properties/" + pointer_escape(k), depth + 1);
      const bool req = required.count(k) > 0;
      if (!e && req) return std::nullopt;
      if (e) members.push_back({member(k, *e), req});
    }
  }
  for (std::string_view k : required_order) {  // required but not among the properties
    if (in_properties.count(k)) continue;
    listed.push_back(k);
    const Expr e = addl != s.end() ? extra_value : Expr(json_.value());
    if (!e) return std::nullopt;
    members.push_back({member(k, *e), true});
  }
  const std::string sep = gbnf::literal(",") + " " + ws;
  Expr extra;  // one property not listed, its name none of the listed ones
  if (extra_value)
    extra = (listed.empty() ? json_.string() : json_.key_except(listed)) + " " + gbnf::literal(":") + " " + ws + " " +
            *extra_value;
  // From the last property back: `rest` is what may follow once something was written (each
  // property after a comma), `first` what may follow "{" (the first property present
  // without one). Optional properties may be left out, in every combination.
  std::string rest = extra ? gbnf::repeat(sep + " " + *extra, 0, -1) : "";
  std::string first = extra ? gbnf::alternatives({join(*extra, rest), ""}) : "";
  for (size_t i = members.size(); i-- > 0;) {
    const Member& m = members[i];
    const std::string with = join(m.expr, rest);
    first = shorten(m.required ? with : gbnf::alternatives({with, first}), path);
    rest = shorten(join(m.required ? sep + " " + m.expr : gbnf::repeat(sep + " " + m.expr, 0, 1), rest), path);
  }
  return first.empty() ? gbnf::literal("{}") : gbnf::literal("{") + " " + first + " " + gbnf::literal("}");
}

Expr Compiler::compile_array(const Json& s, const std::string& path, int depth) {
  // Draft 7's tuples: `items` an array, `additionalItems` the rest.
  const auto items = s.find("items");
  const bool draft7 = items != s.end() && items->is_array();
  const auto prefix = draft7 ? items : s.find("prefixItems");
  const auto rest_schema = draft7 ? s.find("additionalItems") : items;
  const std::string prefix_path = path + (draft7 ? "/items" : "/prefixItems");
  WICK_CHECK(prefix == s.end() || prefix->is_array(), InvalidArgument, "json schema: ", where(prefix_path),
             " is not an array");
  if (s.value("uniqueItems", false)) unsupported(path + "/uniqueItems", "uniqueItems");
  const int64_t min = std::max<int64_t>(0, count(s, "minItems", path, 0)), max = count(s, "maxItems", path, -1);

  std::vector<std::string> tuple;
  bool tuple_cut = false;  // an element that cannot be written ends the arrays there
  if (prefix != s.end())
    for (size_t j = 0; j < prefix->size() && !tuple_cut; ++j) {
      const Expr e = compile((*prefix)[j], prefix_path + "/" + std::to_string(j), depth + 1);
      if (e)
        tuple.push_back(*e);
      else
        tuple_cut = true;
    }
  const std::string rest_path = path + (draft7 ? "/additionalItems" : "/items");
  const Expr item = tuple_cut
                        ? std::nullopt
                        : (rest_schema != s.end() ? compile(*rest_schema, rest_path, depth + 1) : Expr(json_.value()));
  const auto k = static_cast<int64_t>(tuple.size());
  int64_t most = item ? max : (max < 0 ? k : std::min(max, k));  // -1: no limit
  if (most >= 0 && min > most) return std::nullopt;
  const int64_t kept = most < 0 ? k : std::min(k, most);

  const std::string sep = gbnf::literal(",") + " " + json_.ws();
  std::string tail;  // what follows element j (0-based), built from the end
  if (item && (most < 0 || most > kept)) {
    const int64_t lo = std::max<int64_t>(0, min - kept), hi = most < 0 ? -1 : most - kept;
    if (kept > 0) {
      tail = gbnf::repeat(sep + " " + *item, lo, hi);
    } else {
      const std::string seq =
          join(*item, gbnf::repeat(sep + " " + *item, std::max<int64_t>(0, lo - 1), hi < 0 ? -1 : hi - 1));
      tail = lo >= 1 ? seq : gbnf::alternatives({seq, ""});
    }
  }
  for (int64_t j = kept; j-- > 0;) {
    const std::string element = join((j > 0 ? sep + " " : "") + tuple[j], tail);
    tail = shorten(j < min ? element : gbnf::alternatives({element, ""}), path);
  }
  return tail.empty() ? gbnf::literal("[]") : gbnf::literal("[") + " " + tail + " " + gbnf::literal("]");
}

Expr Compiler::compile_string(const Json& s, const std::string& path) {
  const bool lengths = s.contains("minLength") || s.contains("maxLength");
  if (const auto f = s.find("format"); f != s.end()) {
    WICK_CHECK(f->is_string(), InvalidArgument, "json schema: ", where(path + "/format"), " is not a string");
    if (const auto e = json_.format(f->get_ref<const std::string&>())) {
      if (lengths || s.contains("pattern")) unsupported(path + "/format", "format beside pattern or lengths");
      return e;
    }
    unsupported(path + "/format", "format '" + f->get<std::string>() + "'");
  }
  if (const auto p = s.find("pattern"); p != s.end()) {
    WICK_CHECK(p->is_string(), InvalidArgument, "json schema: ", where(path + "/pattern"), " is not a string");
    if (lengths) unsupported(path + "/pattern", "pattern beside minLength/maxLength");
    try {
      const std::string body = gbnf::regex_expr(p->get_ref<const std::string&>(), rules_, true);
      return join(join(gbnf::literal("\""), body), gbnf::literal("\""));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Unsupported) fail(e.kind(), "json schema: ", where(path + "/pattern"), ": ", e.what());
      unsupported(path + "/pattern", e.what());  // not strict: the pattern is left out
    }
  }
  const int64_t min = std::max<int64_t>(0, count(s, "minLength", path, 0)), max = count(s, "maxLength", path, -1);
  if (max >= 0 && min > max) return std::nullopt;
  return json_.string_chars(min, max);
}

}  // namespace wick::text::schema
