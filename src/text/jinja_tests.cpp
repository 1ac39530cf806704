// Tests (`x is [not] name args`) as jinja2 defines them. One table, name -> function.
#include <unordered_map>

#include "text/jinja_eval.h"

namespace wick::text::jinja {
namespace {

using TestFn = bool (*)(const Value&, CallArgs&, Renderer&);

const Value& one_arg(const CallArgs& a, const char* test) {
  if (a.positional.size() != 1) fail(ErrorKind::InvalidArgument, "the test '", test, "' takes one argument");
  return a.positional[0];
}
bool t_defined(const Value& v, CallArgs&, Renderer&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, CallArgs&, Renderer&) { return v.is_undefined(); }
bool t_none(const Value& v, CallArgs&, Renderer&) { return v.is_none(); }
bool t_string(const Value& v, CallArgs&, Renderer&) { return v.is_string(); }
bool t_number(const Value& v, CallArgs&, Renderer&) { return v.is_number(); }
bool t_integer(const Value& v, CallArgs&, Renderer&) { return v.is_int(); }
bool t_float(const Value& v, CallArgs&, Renderer&) { return v.is_float(); }
bool t_mapping(const Value& v, CallArgs&, Renderer&) { return v.is_dict(); }
// jinja2's Undefined defines __iter__, __len__ and __getitem__, so it passes these two.
bool t_iterable(const Value& v, CallArgs&, Renderer&) {
  return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
}
bool t_sequence(const Value& v, CallArgs&, Renderer&) {
  return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
}
bool t_boolean(const Value& v, CallArgs&, Renderer&) { return v.is_bool(); }
bool t_true(const Value& v, CallArgs&, Renderer&) { return v.is_bool() && std::get<bool>(v.v); }
bool t_false(const Value& v, CallArgs&, Renderer&) { return v.is_bool() && !std::get<bool>(v.v); }
bool t_callable(const Value& v, CallArgs&, Renderer&) { return v.is_callable() || v.is_undefined(); }
bool t_eq(const Value& v, CallArgs& a, Renderer&) { return equals(v, one_arg(a, "eq")); }
bool t_ne(const Value& v, CallArgs& a, Renderer&) { return !equals(v, one_arg(a, "ne")); }
bool t_lt(const Value& v, CallArgs& a, Renderer&) { return compare_op("<", v, one_arg(a, "lt")); }
bool t_le(const Value& v, CallArgs& a, Renderer&) { return compare_op("<=", v, one_arg(a, "le")); }
bool t_gt(const Value& v, CallArgs& a, Renderer&) { return compare_op(">", v, one_arg(a, "gt")); }
bool t_ge(const Value& v, CallArgs& a, Renderer&) { return compare_op(">=", v, one_arg(a, "ge")); }
bool t_in(const Value& v, CallArgs& a, Renderer&) { return compare_op("in", v, one_arg(a, "in")); }
bool t_sameas(const Value& v, CallArgs& a, Renderer&) {
  // Python's `is`: singletons and containers by identity, small ints are cached objects.
  const Value& o = one_arg(a, "sameas");
  if (v.v.index() != o.v.index()) return false;
  if (v.is_none() || v.is_undefined()) return v.is_none();
  if (v.is_bool()) return std::get<bool>(v.v) == std::get<bool>(o.v);
  if (v.is_int()) return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
  if (v.is_list()) return &v.items() == &o.items();
  if (v.is_dict()) return &v.dict() == &o.dict();
  return false;
}
int64_t int_of(const Value& v, const char* test) {
  if (!v.is_int() && !v.is_bool())
    fail(ErrorKind::InvalidArgument, "the test '", test, "' needs an integer, not ", type_name(v));
  return v.as_int();
}
bool t_odd(const Value& v, CallArgs&, Renderer&) { return int_of(v, "odd") % 2 != 0; }
bool t_even(const Value& v, CallArgs&, Renderer&) { return int_of(v, "even") % 2 == 0; }
bool t_divisibleby(const Value& v, CallArgs& a, Renderer& r) {
  Value m = binary_op("%", v, one_arg(a, "divisibleby"), r);
  return m.as_double() == 0;
}
bool t_lower(const Value& v, CallArgs&, Renderer&) {
  std::string s = to_str(v);
  bool cased = false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
    cased = cased || (c >= 'a' && c <= 'z');
  }
  return cased;
}
bool t_upper(const Value& v, CallArgs&, Renderer&) {
  std::string s = to_str(v);
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
    cased = cased || (c >= 'A' && c <= 'Z');
  }
  return cased;
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> table = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"string", t_string},
      {"number", t_number},
      {"integer", t_integer},
      {"float", t_float},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"boolean", t_boolean},
      {"true", t_true},
      {"false", t_false},
      {"callable", t_callable},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"==", t_eq},
      {"ne", t_ne},
      {"!=", t_ne},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<", t_lt},
      {"le", t_le},
      {"<=", t_le},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">", t_gt},
      {"ge", t_ge},
      {">=", t_ge},
      {"in", t_in},
      {"sameas", t_sameas},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"lower", t_lower},
      {"upper", t_upper},
  };
  return table;
}

}  // namespace

bool Renderer::test(const std::string& name, const Value& v, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) fail(ErrorKind::Unsupported, "no test named '", name, "'");
  return it->second(v, args, *this);
}

}  // namespace wick::text::jinja
