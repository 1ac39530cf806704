// Filters (`x | name(args)`) as jinja2 defines them, with transformers' tojson (json.dumps,
// ensure_ascii=False). One table, name -> function; tests are in jinja_tests.cpp.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "text/jinja_eval.h"
#include "text/unicode.h"

namespace wick::text::jinja {
namespace {

Value str_call(const Value& v, const std::string& method, CallArgs& a, Renderer& r) {
  Value m = method_of(Value(to_str(v)), method);
  return r.call(m, a);
}
// `attribute="a.b"` lookups of map/selectattr/sort/...: dotted, integer parts index.
Value f_trim(const Value& v, CallArgs& a, Renderer& r) {
  a.check("trim", 1, "chars");
  CallArgs m;
  if (const Value* c = a.get(0, "chars")) m.positional.push_back(*c);
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
  const Value* sep = a.get(0, "d");
  const Value* attribute = a.get(1, "attribute");
  std::string s = sep ? to_str(*sep) : "", out;
  List items = iterate(v, r);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += s;
    out += to_str(attribute ? attr_path(items[i], to_str(*attribute)) : items[i]);
    r.charge_string(out.size());
  }
  return Value(std::move(out));
}
Value f_first(const Value& v, CallArgs&, Renderer& r) {
  List items = iterate(v, r);
  return items.empty() ? Value::undefined("no first item, sequence was empty") : items.front();
}
Value f_last(const Value& v, CallArgs&, Renderer& r) {
  List items = iterate(v, r);
  return items.empty() ? Value::undefined("no last item, sequence was empty") : items.back();
}
Value f_default(const Value& v, CallArgs& a, Renderer&) {
  a.check("default", 2, "default_value,boolean");
  const Value* d = a.get(0, "default_value");
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
  List items = iterate(v, r);
  r.charge_items(items.size());
  return Value::list(std::move(items));
}
Value f_string(const Value& v, CallArgs&, Renderer&) { return Value(to_str(v)); }
Value f_int(const Value& v, CallArgs& a, Renderer&) {
  a.check("int", 2, "default,base");
  const Value* d = a.get(0, "default");
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
  const Value* d = a.get(0, "default");
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
  const Value* p = a.get(0, "precision");
  const Value* m = a.get(1, "method");
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
  const Value* w = a.get(0, "width");
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
      {"escape", f_escape},
      {"e", f_escape},
  };
  return table;
}

}  // namespace

Value Renderer::filter(const std::string& name, const Value& v, CallArgs& args) {
  auto it = filters().find(name);
  FilterFn f = it != filters().end() ? it->second : sequence_filter(name);
  if (!f) fail(ErrorKind::Unsupported, "no filter named '", name, "'");
  return f(v, args, *this);
}

}  // namespace wick::text::jinja