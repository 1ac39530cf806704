// Filters (`x | name(args)`) and tests (`x is name args`) as jinja2 defines them, with
// transformers' tojson (json.dumps, ensure_ascii=False). One table each, name -> function.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "text/jinja_eval.h"
#include "text/unicode.h"

namespace wick::text::jinja {
namespace {

using FilterFn = Value (*)(const Value&, CallArgs&, Renderer&);
using TestFn = bool (*)(const Value&, CallArgs&, Renderer&);

const Value* arg(const CallArgs& a, size_t i, std::string_view name) { return a.get(i, name); }
bool flag_arg(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  return v && truthy(*v);
}
Value str_call(const Value& v, const std::string& method, CallArgs& a, Renderer& r) {
  Value m = method_of(Value(to_str(v)), method);
  return r.call(m, a);
}
// `attribute="a.b"` lookups of map/selectattr/sort/...: dotted, integer parts index.
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    cur = digits ? get_item(cur, Value(int64_t(std::stoll(part)))) : get_item(cur, Value(part));
    b = e + 1;
  }
  return cur;
}
// The test name and its arguments from args[first...] (select, reject, selectattr, rejectattr).
bool run_test(const Value& item, CallArgs& a, size_t first, Renderer& r) {
  if (a.positional.size() <= first) return truthy(item);
  if (!a.positional[first].is_string()) fail(ErrorKind::InvalidArgument, "the test name must be a string");
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + long(first) + 1, a.positional.end());
  return r.test(a.positional[first].str(), item, rest);
}
Value select(const Value& v, CallArgs& a, Renderer& r, bool attr, bool keep) {
  List out;
  std::string path;
  if (attr) {
    if (a.positional.empty() || !a.positional[0].is_string())
      fail(ErrorKind::InvalidArgument, "selectattr/rejectattr need an attribute name");
    path = a.positional[0].str();
  }
  for (const Value& item : iterate(v)) {
    r.step();
    if (run_test(attr ? attr_path(item, path) : item, a, attr ? 1 : 0, r) == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
// The sort key: the attribute when given, lower-cased when strings compare case-insensitively.
Value sort_key(const Value& v, const Value* attribute, bool case_sensitive) {
  Value k = attribute && !attribute->is_none() ? attr_path(v, to_str(*attribute)) : v;
  if (!case_sensitive && k.is_string()) return Value(lower_str(k.str()));
  return k;
}

Value f_trim(const Value& v, CallArgs& a, Renderer& r) {
  a.check("trim", 1, "chars");
  CallArgs m;
  if (const Value* c = arg(a, 0, "chars")) m.positional.push_back(*c);
  return str_call(v, "strip", m, r);
}
Value f_length(const Value& v, CallArgs&, Renderer&) { return Value(int64_t(length_of(v))); }
Value f_upper(const Value& v, CallArgs&, Renderer& r) {
  CallArgs m;
  return str_call(v, "upper", m, r);
}
Value f_lower(const Value& v, CallArgs&, Renderer& r) {
  CallArgs m;
  return str_call(v, "lower", m, r);
}
Value f_capitalize(const Value& v, CallArgs&, Renderer& r) {
  CallArgs m;
  return str_call(v, "capitalize", m, r);
}
Value f_title(const Value& v, CallArgs&, Renderer&) {
  // jinja2's do_title: capitalize each piece after runs of '-', whitespace, '(', '{', '[', '<'.
  std::u32string s = to_u32(to_str(v)), out;
  bool start = true;
  for (char32_t c : s) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || c == '\t' || c == '\n' ||
               c == '\r' || c == '\v' || c == '\f' || unicode::is_white_space(c);
    if (sep) {
      out += c;
      start = true;
    } else if (start) {
      out += (c >= 'a' && c <= 'z') ? c - 32 : c;
      start = false;
    } else {
      unicode::append_lower(out, c);
    }
  }
  return Value(from_u32(out));
}
Value f_replace(const Value& v, CallArgs& a, Renderer& r) { return str_call(v, "replace", a, r); }
Value f_join(const Value& v, CallArgs& a, Renderer& r) {
  a.check("join", 2, "d,attribute");
  const Value* sep = arg(a, 0, "d");
  const Value* attribute = arg(a, 1, "attribute");
  std::string s = sep ? to_str(*sep) : "", out;
  List items = iterate(v);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += s;
    out += to_str(attribute ? attr_path(items[i], to_str(*attribute)) : items[i]);
    r.charge_string(out.size());
  }
  return Value(std::move(out));
}
Value f_first(const Value& v, CallArgs&, Renderer&) {
  List items = iterate(v);
  return items.empty() ? Value::undefined("no first item, sequence was empty") : items.front();
}
Value f_last(const Value& v, CallArgs&, Renderer&) {
  List items = iterate(v);
  return items.empty() ? Value::undefined("no last item, sequence was empty") : items.back();
}
Value f_default(const Value& v, CallArgs& a, Renderer&) {
  a.check("default", 2, "default_value,boolean");
  const Value* d = arg(a, 0, "default_value");
  if (v.is_undefined() || (flag_arg(a, 1, "boolean") && !truthy(v))) return d ? *d : Value("");
  return v;
}
Value f_tojson(const Value& v, CallArgs& a, Renderer& r) {
  a.check("tojson", 4, "ensure_ascii,indent,separators,sort_keys");
  // transformers' signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  const Value* ensure_ascii = a.get(size_t(-1), "ensure_ascii");
  const Value* indent = a.get(size_t(-1), "indent");
  const Value* seps = a.get(size_t(-1), "separators");
  const Value* sort_keys = a.get(size_t(-1), "sort_keys");
  // Positional use (`tojson(4)`) is jinja2's signature: the first positional is indent.
  if (!a.positional.empty()) indent = &a.positional[0];
  int width = -1;
  if (indent && !indent->is_none()) {
    if (!indent->is_int()) fail(ErrorKind::Unsupported, "tojson(indent=...) supports integer indents only");
    width = int(std::clamp<int64_t>(indent->as_int(), 0, 64));
  }
  std::string item_sep = width >= 0 ? "," : ", ", key_sep = ": ";
  if (seps && !seps->is_none()) {
    if (!seps->is_list() || seps->items().size() != 2 || !seps->items()[0].is_string() || !seps->items()[1].is_string())
      fail(ErrorKind::InvalidArgument, "tojson separators must be a pair of strings");
    item_sep = seps->items()[0].str();
    key_sep = seps->items()[1].str();
  }
  std::string out =
      to_json(v, width, ensure_ascii && truthy(*ensure_ascii), sort_keys && truthy(*sort_keys), item_sep, key_sep);
  r.charge_string(out.size());
  return Value(std::move(out));
}
Value f_items(const Value& v, CallArgs& a, Renderer& r) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) fail(ErrorKind::InvalidArgument, "can only get item pairs from a mapping, not ", type_name(v));
  return r.call(method_of(v, "items"), a);
}
Value f_list(const Value& v, CallArgs&, Renderer& r) {
  List items = iterate(v);
  r.charge_items(items.size());
  return Value::list(std::move(items));
}
Value f_string(const Value& v, CallArgs&, Renderer&) { return Value(to_str(v)); }
Value f_int(const Value& v, CallArgs& a, Renderer&) {
  a.check("int", 2, "default,base");
  const Value* d = arg(a, 0, "default");
  Value dflt = d ? *d : Value(0);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    double x = v.as_double();
    return std::isfinite(x) && std::fabs(x) < 9.2e18 ? Value(int64_t(x)) : dflt;
  }
  if (v.is_string()) {
    std::string s = v.str();
    size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
    if (b == std::string::npos) return dflt;
    s = s.substr(b, e - b + 1);
    try {
      size_t used = 0;
      long long i = std::stoll(s, &used, 10);
      if (used == s.size()) return Value(int64_t(i));
      double x = std::stod(s, &used);
      if (used == s.size() && std::isfinite(x) && std::fabs(x) < 9.2e18) return Value(int64_t(x));
    } catch (const std::exception&) {
    }
  }
  return dflt;
}
Value f_float(const Value& v, CallArgs& a, Renderer&) {
  a.check("float", 1, "default");
  const Value* d = arg(a, 0, "default");
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    try {
      size_t used = 0;
      double x = std::stod(v.str(), &used);
      if (used == v.str().size()) return Value(x);
    } catch (const std::exception&) {
    }
  }
  return d ? *d : Value(0.0);
}
Value f_abs(const Value& v, CallArgs&, Renderer&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) fail(ErrorKind::InvalidArgument, "integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  fail(ErrorKind::InvalidArgument, "bad operand type for abs(): '", type_name(v), "'");
}
Value f_round(const Value& v, CallArgs& a, Renderer&) {
  a.check("round", 2, "precision,method");
  if (!v.is_number()) fail(ErrorKind::InvalidArgument, "round needs a number, not ", type_name(v));
  const Value* p = arg(a, 0, "precision");
  const Value* m = arg(a, 1, "method");
  std::string method = m ? to_str(*m) : "common";
  double scale = std::pow(10.0, double(p ? p->as_int() : 0));
  double x = v.as_double() * scale;
  if (method == "common")
    x = std::nearbyint(x);  // Python's round(), as jinja2's "common" uses: ties to even
  else if (method == "floor")
    x = std::floor(x);
  else if (method == "ceil")
    x = std::ceil(x);
  else
    fail(ErrorKind::InvalidArgument, "round method must be 'common', 'ceil' or 'floor'");
  return Value(x / scale);
}
Value f_safe(const Value& v, CallArgs&, Renderer&) { return v; }
Value f_indent(const Value& v, CallArgs& a, Renderer& r) {
  a.check("indent", 3, "width,first,blank");
  const Value* w = arg(a, 0, "width");
  std::string ind = !w               ? "    "
                    : w->is_string() ? w->str()
                                     : std::string(size_t(std::clamp<int64_t>(w->as_int(), 0, 1024)), ' ');
  bool first = flag_arg(a, 1, "first"), blank = flag_arg(a, 2, "blank");
  std::string s = to_str(v) + "\n";  // jinja2 appends a newline before splitlines()
  CallArgs none;
  List lines = r.call(method_of(Value(s), "splitlines"), none).items();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].str();
    if (i) out += "\n";
    if (i && (blank || !line.empty())) out += ind;
    out += line;
    r.charge_string(out.size());
  }
  if (first) out = ind + out;
  return Value(std::move(out));
}
Value f_select(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, false, true); }
Value f_reject(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, false, false); }
Value f_selectattr(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, true, true); }
Value f_rejectattr(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, true, false); }
Value f_map(const Value& v, CallArgs& a, Renderer& r) {
  List out;
  const Value* attribute = a.get(size_t(-1), "attribute");
  const Value* dflt = a.get(size_t(-1), "default");
  for (const Value& item : iterate(v)) {
    r.step();
    if (attribute) {
      Value got = attr_path(item, to_str(*attribute));
      out.push_back(got.is_undefined() && dflt ? *dflt : got);
    } else {
      if (a.positional.empty() || !a.positional[0].is_string())
        fail(ErrorKind::InvalidArgument, "map needs a filter name or attribute=");
      CallArgs rest;
      rest.positional.assign(a.positional.begin() + 1, a.positional.end());
      rest.keyword = a.keyword;
      out.push_back(r.filter(a.positional[0].str(), item, rest));
    }
  }
  return Value::list(std::move(out));
}
Value f_unique(const Value& v, CallArgs& a, Renderer& r) {
  a.check("unique", 2, "case_sensitive,attribute");
  bool cs = flag_arg(a, 0, "case_sensitive");
  const Value* attribute = arg(a, 1, "attribute");
  List out, seen;
  for (const Value& item : iterate(v)) {
    Value k = sort_key(item, attribute, cs);
    bool dup = false;
    for (const Value& s : seen) {
      r.step();
      dup = dup || equals(s, k);
    }
    if (!dup) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}
Value f_reverse(const Value& v, CallArgs&, Renderer&) {
  if (v.is_string()) {
    std::u32string s = to_u32(v.str());
    std::reverse(s.begin(), s.end());
    return Value(from_u32(s));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}
Value f_sort(const Value& v, CallArgs& a, Renderer& r) {
  a.check("sort", 3, "reverse,case_sensitive,attribute");
  bool rev = flag_arg(a, 0, "reverse"), cs = flag_arg(a, 1, "case_sensitive");
  const Value* attribute = arg(a, 2, "attribute");
  List items = iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(sort_key(items[i], attribute, cs), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    r.step();
    return rev ? compare_values(y.first, x.first) < 0 : compare_values(x.first, y.first) < 0;
  });
  List out;
  for (auto& [k, i] : keyed) out.push_back(items[i]);
  return Value::list(std::move(out));
}
Value f_dictsort(const Value& v, CallArgs& a, Renderer& r) {
  a.check("dictsort", 3, "case_sensitive,by,reverse");
  if (!v.is_dict()) fail(ErrorKind::InvalidArgument, "dictsort needs a mapping, not ", type_name(v));
  bool cs = flag_arg(a, 0, "case_sensitive"), rev = flag_arg(a, 2, "reverse");
  const Value* by = arg(a, 1, "by");
  bool by_value = by && to_str(*by) == "value";
  List pairs;
  for (const auto& [k, item] : v.dict().entries) pairs.push_back(Value::list({Value(k), item}, true));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    r.step();
    Value kx = sort_key(x.items()[by_value ? 1 : 0], nullptr, cs),
          ky = sort_key(y.items()[by_value ? 1 : 0], nullptr, cs);
    return rev ? compare_values(ky, kx) < 0 : compare_values(kx, ky) < 0;
  });
  return Value::list(std::move(pairs));
}
Value f_batch(const Value& v, CallArgs& a, Renderer&) {
  a.check("batch", 2, "linecount,fill_with");
  const Value* n = arg(a, 0, "linecount");
  const Value* fill = arg(a, 1, "fill_with");
  if (!n || !n->is_int() || n->as_int() <= 0) fail(ErrorKind::InvalidArgument, "batch needs a positive linecount");
  List out, cur;
  for (const Value& item : iterate(v)) {
    cur.push_back(item);
    if (int64_t(cur.size()) == n->as_int()) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    while (fill && !fill->is_none() && int64_t(cur.size()) < n->as_int()) cur.push_back(*fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}
Value extreme(const Value& v, CallArgs& a, bool want_max) {
  a.check(want_max ? "max" : "min", 2, "case_sensitive,attribute");
  bool cs = flag_arg(a, 0, "case_sensitive");
  const Value* attribute = arg(a, 1, "attribute");
  List items = iterate(v);
  if (items.empty()) return Value::undefined("no min/max item, sequence was empty");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    int c = compare_values(sort_key(items[i], attribute, cs), sort_key(items[best], attribute, cs));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_min(const Value& v, CallArgs& a, Renderer&) { return extreme(v, a, false); }
Value f_max(const Value& v, CallArgs& a, Renderer&) { return extreme(v, a, true); }
Value f_sum(const Value& v, CallArgs& a, Renderer& r) {
  a.check("sum", 2, "attribute,start");
  const Value* attribute = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start ? *start : Value(0);
  for (const Value& item : iterate(v))
    total = binary_op("+", total, attribute ? attr_path(item, to_str(*attribute)) : item, r);
  return total;
}
Value f_escape(const Value& v, CallArgs&, Renderer& r) {
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  r.charge_string(out.size());
  return Value(std::move(out));
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> table = {
      {"trim", f_trim},
      {"length", f_length},
      {"count", f_length},
      {"upper", f_upper},
      {"lower", f_lower},
      {"title", f_title},
      {"capitalize", f_capitalize},
      {"replace", f_replace},
      {"join", f_join},
      {"first", f_first},
      {"last", f_last},
      {"default", f_default},
      {"d", f_default},
      {"tojson", f_tojson},
      {"items", f_items},
      {"list", f_list},
      {"string", f_string},
      {"int", f_int},
      {"float", f_float},
      {"abs", f_abs},
      {"round", f_round},
      {"safe", f_safe},
      {"indent", f_indent},
      {"select", f_select},
      {"reject", f_reject},
      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr},
      {"map", f_map},
      {"unique", f_unique},
      {"reverse", f_reverse},
      {"sort", f_sort},
      {"dictsort", f_dictsort},
      {"batch", f_batch},
      {"min", f_min},
      {"max", f_max},
      {"sum", f_sum},
      {"escape", f_escape},
      {"e", f_escape},
  };
  return table;
}

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

Value Renderer::filter(const std::string& name, const Value& v, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail(ErrorKind::Unsupported, "no filter named '", name, "'");
  return it->second(v, args, *this);
}

bool Renderer::test(const std::string& name, const Value& v, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) fail(ErrorKind::Unsupported, "no test named '", name, "'");
  return it->second(v, args, *this);
}

}  // namespace wick::text::jinja
