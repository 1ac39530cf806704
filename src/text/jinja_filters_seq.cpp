// The filters over sequences (select/reject[attr], map, unique, reverse, sort, dictsort,
// batch, min, max, sum), as jinja2 defines them; jinja_filters.cpp asks here for the names
// it does not have.
#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "text/jinja_eval.h"

namespace wick::text::jinja {

Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    int64_t index = 0;
    if (digits && std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc())
      fail(ErrorKind::InvalidArgument, "attribute index '", part, "' is out of range");
    cur = digits ? get_item(cur, Value(index)) : get_item(cur, Value(part));
    b = e + 1;
  }
  return cur;
}

namespace {

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
  for (const Value& item : iterate(v, r)) {
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

Value f_select(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, false, true); }
Value f_reject(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, false, false); }
Value f_selectattr(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, true, true); }
Value f_rejectattr(const Value& v, CallArgs& a, Renderer& r) { return select(v, a, r, true, false); }
Value f_map(const Value& v, CallArgs& a, Renderer& r) {
  List out;
  const Value* attribute = a.get(size_t(-1), "attribute");
  const Value* dflt = a.get(size_t(-1), "default");
  for (const Value& item : iterate(v, r)) {
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
  const Value* attribute = a.get(1, "attribute");
  List out, seen;
  for (const Value& item : iterate(v, r)) {
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
Value f_reverse(const Value& v, CallArgs&, Renderer& r) {
  if (v.is_string()) {
    std::u32string s = to_u32(v.str());
    std::reverse(s.begin(), s.end());
    return Value(from_u32(s));
  }
  List items = iterate(v, r);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}
Value f_sort(const Value& v, CallArgs& a, Renderer& r) {
  a.check("sort", 3, "reverse,case_sensitive,attribute");
  bool rev = flag_arg(a, 0, "reverse"), cs = flag_arg(a, 1, "case_sensitive");
  const Value* attribute = a.get(2, "attribute");
  List items = iterate(v, r);
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
  const Value* by = a.get(1, "by");
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
Value f_batch(const Value& v, CallArgs& a, Renderer& r) {
  a.check("batch", 2, "linecount,fill_with");
  const Value* n = a.get(0, "linecount");
  const Value* fill = a.get(1, "fill_with");
  if (!n || !n->is_int() || n->as_int() <= 0) fail(ErrorKind::InvalidArgument, "batch needs a positive linecount");
  List out, cur;
  for (const Value& item : iterate(v, r)) {
    cur.push_back(item);
    if (int64_t(cur.size()) == n->as_int()) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none()) r.charge_items(size_t(n->as_int()));  // the last batch is padded to n
    while (fill && !fill->is_none() && int64_t(cur.size()) < n->as_int()) cur.push_back(*fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}
Value extreme(const Value& v, CallArgs& a, Renderer& r, bool want_max) {
  a.check(want_max ? "max" : "min", 2, "case_sensitive,attribute");
  bool cs = flag_arg(a, 0, "case_sensitive");
  const Value* attribute = a.get(1, "attribute");
  List items = iterate(v, r);
  if (items.empty()) return Value::undefined("no min/max item, sequence was empty");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    int c = compare_values(sort_key(items[i], attribute, cs), sort_key(items[best], attribute, cs));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_min(const Value& v, CallArgs& a, Renderer& r) { return extreme(v, a, r, false); }
Value f_max(const Value& v, CallArgs& a, Renderer& r) { return extreme(v, a, r, true); }
Value f_sum(const Value& v, CallArgs& a, Renderer& r) {
  a.check("sum", 2, "attribute,start");
  const Value* attribute = a.get(0, "attribute");
  const Value* start = a.get(1, "start");
  Value total = start ? *start : Value(0);
  for (const Value& item : iterate(v, r))
    total = binary_op("+", total, attribute ? attr_path(item, to_str(*attribute)) : item, r);
  return total;
}

}  // namespace

FilterFn sequence_filter(const std::string& name) {
  static const std::unordered_map<std::string, FilterFn> table = {
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
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace wick::text::jinja
