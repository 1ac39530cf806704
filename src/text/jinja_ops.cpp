// Operators, attribute/item lookup and slicing with the semantics jinja2 inherits from
// Python (int overflow, which Python never has, is an error here).
#include <cmath>

#include "text/jinja_eval.h"

namespace wick::text::jinja {
namespace {

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail(ErrorKind::InvalidArgument, a.undefined_name());
  if (b.is_undefined()) fail(ErrorKind::InvalidArgument, b.undefined_name());
  fail(ErrorKind::InvalidArgument, "unsupported operand type(s) for ", op, ": '", type_name(a), "' and '", type_name(b),
       "'");
}

bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }

Value repeat(const Value& seq, int64_t n, Renderer& r) {
  if (n < 0) n = 0;
  if (length_of(seq) == 0) return seq.is_string() ? Value("") : Value::list({}, seq.tuple);  // n copies of nothing
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && uint64_t(n) > r.limits().max_output_bytes / s.size() + 1)
      r.charge_string(r.limits().max_output_bytes + 1);
    r.charge_string(s.size() * size_t(n));
    std::string out;
    out.reserve(s.size() * size_t(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const List& items = seq.items();
  if (!items.empty() && uint64_t(n) > r.limits().max_container_items / items.size() + 1)
    r.charge_items(r.limits().max_container_items + 1);
  r.charge_items(items.size() * size_t(n));
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.tuple);
}

void check_overflow(bool overflow) {
  if (overflow) fail(ErrorKind::InvalidArgument, "integer overflow (beyond 64 bits)");
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (is_integral(a) && is_integral(b) && op != "/") {
    int64_t x = a.as_int(), y = b.as_int(), z = 0;
    if (op == "+" || op == "-" || op == "*") {
      check_overflow(op == "+"   ? __builtin_add_overflow(x, y, &z)
                     : op == "-" ? __builtin_sub_overflow(x, y, &z)
                                 : __builtin_mul_overflow(x, y, &z));
      return Value(z);
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail(ErrorKind::InvalidArgument, "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) fail(ErrorKind::InvalidArgument, "integer overflow (beyond 64 bits)");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value(std::pow(double(x), double(y)));
      int64_t result = 1;
      for (int64_t i = 0; i < y; ++i) {
        check_overflow(__builtin_mul_overflow(result, x, &z));
        result = z;
        if (result == 0 || result == 1) break;
      }
      return Value(result);
    }
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") return Value(std::pow(x, y));
  if (y == 0) fail(ErrorKind::InvalidArgument, "division by zero");
  if (op == "/") return Value(x / y);
  if (op == "//") return Value(std::floor(x / y));
  double m = std::fmod(x, y);
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  return Value(m);
}

// Python's ordering for <, <=, >, >=: numbers, strings (code point order is UTF-8 byte
// order), lists element by element.
int order(const Value& a, const Value& b, const std::string& op, uint32_t depth = 0) {
  walk(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str().compare(b.str()) < 0 ? -1 : a.str() > b.str();
  if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
    const List &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return order(x[i], y[i], op, depth + 1);
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  if (a.is_undefined()) fail(ErrorKind::InvalidArgument, a.undefined_name());
  if (b.is_undefined()) fail(ErrorKind::InvalidArgument, b.undefined_name());
  fail(ErrorKind::InvalidArgument, "'", op, "' not supported between instances of '", type_name(a), "' and '",
       type_name(b), "'");
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string())
      fail(ErrorKind::InvalidArgument, "'in <string>' requires string as left operand, not ", type_name(item));
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.dict().find(item.str());
  if (container.is_list()) {
    for (const Value& v : container.items())
      if (equals(v, item)) return true;
    return false;
  }
  if (container.is_undefined()) return false;
  fail(ErrorKind::InvalidArgument, "argument of type '", type_name(container), "' is not iterable");
}

std::string object_name(const Value& v) {
  std::string s = "'";
  s += type_name(v);
  s += " object'";
  return s;
}

}  // namespace

int compare_values(const Value& a, const Value& b) { return order(a, b, "<"); }

Value binary_op(const std::string& op, const Value& a, const Value& b, Renderer& r) {
  if (op == "~") {
    std::string out = to_str(a);
    std::string rhs = to_str(b);
    r.charge_string(out.size() + rhs.size());
    return Value(out + rhs);
  }
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      r.charge_string(a.str().size() + b.str().size());
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
      r.charge_items(a.items().size() + b.items().size());
      List out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.tuple);
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && is_integral(b)) return repeat(a, b.as_int(), r);
    if ((b.is_string() || b.is_list()) && is_integral(a)) return repeat(b, a.as_int(), r);
  }
  if (op == "%" && a.is_string())
    fail(ErrorKind::Unsupported, "printf-style string formatting ('...' % args) is not supported");
  type_error(op, a, b);
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  int c = order(a, b, op);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail(ErrorKind::InvalidArgument, obj.undefined_name());
  if (obj.is_dict() && obj.dict().is_namespace) {
    if (const Value* v = obj.dict().find(name)) return *v;
  } else {
    // Python attributes (methods) first, then items, as jinja2's getattr does.
    Value m = method_of(obj, name);
    if (!m.is_undefined()) return m;
    if (obj.is_dict())
      if (const Value* v = obj.dict().find(name)) return *v;
  }
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail(ErrorKind::InvalidArgument, obj.undefined_name());
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.dict().find(key.str())) return *v;
    return get_attr(obj, key.str());  // jinja2's getitem falls back to the attribute
  }
  if ((obj.is_list() || obj.is_string()) && is_integral(key)) {
    int64_t n = int64_t(obj.is_list() ? obj.items().size() : code_points(obj.str()));
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.items()[size_t(i)];
      if (int64_t(obj.str().size()) == n) return Value(obj.str().substr(size_t(i), 1));  // ASCII
      std::u32string cps = to_u32(obj.str());
      return Value(from_u32(cps.substr(size_t(i), 1)));
    }
    return Value::undefined(object_name(obj) + " has no element " + std::to_string(key.as_int()));
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(object_name(obj) + " has no element " + to_repr(key));
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step, Renderer& r) {
  if (obj.is_undefined()) fail(ErrorKind::InvalidArgument, obj.undefined_name());
  if (!obj.is_list() && !obj.is_string())
    fail(ErrorKind::InvalidArgument, "'", type_name(obj), "' object is not subscriptable");
  auto bound = [](const Value& v, const char* what) -> const Value& {
    if (!v.is_none() && !is_integral(v))
      fail(ErrorKind::InvalidArgument, "slice ", what, " must be an integer or None, not ", type_name(v));
    return v;
  };
  int64_t st = bound(step, "step").is_none() ? 1 : step.as_int();
  if (st == 0) fail(ErrorKind::InvalidArgument, "slice step cannot be zero");
  std::u32string cps;
  if (obj.is_string()) cps = to_u32(obj.str());
  int64_t n = int64_t(obj.is_list() ? obj.items().size() : cps.size());
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t lo = adjust(bound(start, "start"), st < 0 ? n - 1 : 0);
  int64_t hi = adjust(bound(stop, "stop"), st < 0 ? -1 : n);
  List items;
  std::u32string out;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
    if (obj.is_list())
      items.push_back(obj.items()[size_t(i)]);
    else
      out += cps[size_t(i)];
  }
  if (obj.is_string()) {
    std::string s = from_u32(out);
    r.charge_string(s.size());
    return Value(std::move(s));
  }
  r.charge_items(items.size());
  return Value::list(std::move(items), obj.tuple);
}

List iterate(const Value& v, Renderer& r) {
  if (v.is_list()) {
    r.charge_items(v.items().size());
    return v.items();
  }
  if (v.is_dict()) {
    r.charge_items(v.dict().entries.size());
    List keys;
    for (const auto& [k, item] : v.dict().entries) keys.emplace_back(k);
    return keys;
  }
  if (v.is_string()) {
    std::u32string cps = to_u32(v.str());
    r.charge_items(cps.size());
    List chars;
    for (char32_t c : cps) chars.emplace_back(from_u32(std::u32string(1, c)));
    return chars;
  }
  if (v.is_undefined()) return {};
  fail(ErrorKind::InvalidArgument, "'", type_name(v), "' object is not iterable");
}

size_t length_of(const Value& v) {
  if (v.is_list()) return v.items().size();
  if (v.is_dict()) return v.dict().entries.size();
  if (v.is_string()) return code_points(v.str());
  if (v.is_undefined()) return 0;
  fail(ErrorKind::InvalidArgument, "object of type '", type_name(v), "' has no len()");
}

}  // namespace wick::text::jinja
