// Python's data model for the interpreter's values: truthiness, str()/repr(), ==.
#include "text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "wick/error.h"

namespace wick::text::jinja {

const Value* NamedValues::find(std::string_view key) const {
  constexpr size_t kLinear = 16;
  if (entries.size() <= kLinear) {
    for (const auto& [k, v] : entries)
      if (k == key) return &v;
    return nullptr;
  }
  // The index holds views of the keys: rebuilt whenever the vector moved or shrank (moving a
  // short string moves its characters), extended when entries were appended.
  if (indexed_data_ != entries.data() || indexed_ > entries.size()) {
    index_.clear();
    indexed_ = 0;
    indexed_data_ = entries.data();
  }
  for (; indexed_ < entries.size(); ++indexed_) index_.emplace(entries[indexed_].first, indexed_);
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries[it->second].second;
}

void NamedValues::set(std::string key, Value value) {
  if (const Value* v = find(key)) {
    *const_cast<Value*>(v) = std::move(value);
    return;
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

void CallArgs::check(std::string_view fn, size_t max_positional, std::string_view allowed) const {
  if (positional.size() > max_positional)
    fail(ErrorKind::InvalidArgument, fn, "() takes at most ", max_positional, " positional arguments, got ",
         positional.size());
  for (const auto& [k, v] : keyword) {
    bool ok = false;
    for (size_t pos = 0; pos <= allowed.size();) {
      size_t end = allowed.find(',', pos);
      if (end == std::string_view::npos) end = allowed.size();
      if (allowed.substr(pos, end - pos) == k) ok = true;
      pos = end + 1;
    }
    if (!ok) fail(ErrorKind::InvalidArgument, fn, "() got an unexpected keyword argument '", k, "'");
  }
}

void check_nesting(uint32_t depth) {
  if (depth > kMaxNesting)
    fail(ErrorKind::InvalidArgument, "values nested deeper than ", kMaxNesting, " levels (or a cycle)");
}

namespace {
thread_local WalkBudget* current_budget = nullptr;  // the render running on this thread
}  // namespace

WalkBudget::WalkBudget(size_t nodes, size_t max) : nodes_left(nodes), max_bytes(max), saved_(current_budget) {
  current_budget = this;
}
WalkBudget::~WalkBudget() { current_budget = saved_; }

void walk(uint32_t depth) {
  check_nesting(depth);
  if (WalkBudget* b = current_budget) {
    if (b->nodes_left == 0)
      fail(ErrorKind::InvalidArgument,
           "printing or comparing values visited more than ChatTemplateLimits::max_steps "
           "nodes (shared sub-lists multiply)");
    --b->nodes_left;
  }
}

void walk_bytes(size_t printed) {
  if (WalkBudget* b = current_budget; b && printed > b->max_bytes)
    fail(ErrorKind::InvalidArgument, "a value prints longer than ", b->max_bytes,
         " bytes (ChatTemplateLimits::max_output_bytes)");
}

Value Value::list(List items, bool is_tuple) {
  uint32_t d = 0;
  for (const Value& item : items) d = std::max(d, item.depth);
  check_nesting(d + 1);
  Value v(std::make_shared<List>(std::move(items)), is_tuple);
  v.depth = d + 1;
  return v;
}

Value Value::dict(DictPtr dp) {
  uint32_t d = 0;
  for (const auto& [k, item] : dp->entries) d = std::max(d, item.depth);
  check_nesting(d + 1);
  Value v(std::move(dp));
  v.depth = d + 1;
  return v;
}

bool truthy(const Value& v) {
  struct {
    bool operator()(const Undefined&) const { return false; }
    bool operator()(const None&) const { return false; }
    bool operator()(bool b) const { return b; }
    bool operator()(int64_t i) const { return i != 0; }
    bool operator()(double d) const { return d != 0.0; }
    bool operator()(const std::string& s) const { return !s.empty(); }
    bool operator()(const ListPtr& l) const { return !l->empty(); }
    bool operator()(const DictPtr& d) const { return !d->entries.empty(); }
    bool operator()(const CallablePtr&) const { return true; }
  } visitor;
  return std::visit(visitor, v.v);
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |d| < 1e16, else
  // scientific with a signed two-digit-minimum exponent; fixed always shows a fraction.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out += digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

namespace {

// Python's repr of a str: single quotes unless the text has ' and no ", escapes for the
// quote, backslash and control characters; other characters (non-ASCII too) as they are.
std::string string_repr(const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += quote;
  return out;
}

std::string container_repr(const Value& v, uint32_t depth) {
  walk(depth);
  std::string out;
  if (v.is_list()) {
    const List& items = v.items();
    out += v.tuple ? '(' : '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      out += to_repr(items[i], depth + 1);
      walk_bytes(out.size());
    }
    if (v.tuple && items.size() == 1) out += ',';
    out += v.tuple ? ')' : ']';
    return out;
  }
  const Dict& d = v.dict();
  if (d.is_namespace) out += "<Namespace ";
  out += '{';
  bool first = true;
  for (const auto& [k, item] : d.entries) {
    if (!first) out += ", ";
    first = false;
    out += string_repr(k) + ": " + to_repr(item, depth + 1);
    walk_bytes(out.size());
  }
  out += '}';
  if (d.is_namespace) out += '>';
  return out;
}

}  // namespace

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) return "";
  return to_repr(v);
}

std::string to_repr(const Value& v, uint32_t depth) {
  if (v.is_undefined()) return "Undefined";
  if (v.is_none()) return "None";
  if (v.is_bool()) return std::get<bool>(v.v) ? "True" : "False";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return float_repr(std::get<double>(v.v));
  if (v.is_string()) return string_repr(v.str());
  if (v.is_callable()) return "<function " + v.callable().name + ">";
  return container_repr(v, depth);
}

bool equals(const Value& a, const Value& b, uint32_t depth) {
  walk(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.v.index() != b.v.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.str() == b.str();
  if (a.is_callable()) return &a.callable() == &b.callable();
  if (a.is_list()) {
    const List &x = a.items(), &y = b.items();
    if (x.size() != y.size() || a.tuple != b.tuple) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!equals(x[i], y[i], depth + 1)) return false;
    return true;
  }
  const Dict &x = a.dict(), &y = b.dict();
  if (x.entries.size() != y.entries.size()) return false;
  for (const auto& [k, item] : x.entries) {
    const Value* other = y.find(k);
    if (!other || !equals(item, *other, depth + 1)) return false;
  }
  return true;
}

std::string_view type_name(const Value& v) {
  static constexpr std::string_view names[] = {"Undefined", "NoneType", "bool", "int",     "float",
                                               "str",       "list",     "dict", "function"};
  if (v.is_list() && v.tuple) return "tuple";
  if (v.is_dict() && v.dict().is_namespace) return "Namespace";
  return names[v.v.index()];
}

}  // namespace wick::text::jinja
