// Methods of str, dict and list values (`s.strip()`, `d.items()`) and the global functions
// transformers' environment provides (range, namespace, dict, joiner, raise_exception,
// strftime_now). Strings are UTF-8; Python's code-point semantics are kept for lengths,
// indexing, strip and split; case mapping beyond lower() is ASCII only.
#include <ctime>

#include "text/jinja_eval.h"
#include "text/unicode.h"

namespace wick::text::jinja {

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    unicode::Decoded d = unicode::decode_utf8(s, i);
    out += d.valid ? d.cp : char32_t(0xdc00 + (unsigned char)s[i]);  // Python's surrogateescape
    i += d.valid ? d.length : 1;
  }
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) {
    if (c >= 0xdc80 && c <= 0xdcff)
      out += char(c - 0xdc00);
    else
      unicode::append_utf8(out, c);
  }
  return out;
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    unicode::Decoded d = unicode::decode_utf8(s, i);
    i += d.valid ? d.length : 1;
    ++n;
  }
  return n;
}

namespace {
std::u32string lower(std::u32string_view s);
}  // namespace

std::string lower_str(std::string_view s) { return from_u32(lower(to_u32(s))); }

namespace {

bool py_space(char32_t c) { return (c >= 9 && c <= 13) || (c >= 28 && c <= 32) || unicode::is_white_space(c); }
char32_t upper(char32_t c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }
std::u32string lower(std::u32string_view s) {
  std::u32string out;
  for (char32_t c : s) unicode::append_lower(out, c);
  return out;
}
bool is_alpha(char32_t c) { return unicode::is_letter(c); }

Value fn(std::string name, std::function<Value(CallArgs&, Renderer&)> f) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(f);
  return Value(CallablePtr(c));
}

const std::string& str_arg(const CallArgs& a, size_t i, std::string_view name, std::string_view fn_name) {
  const Value* v = a.get(i, name);
  if (!v || !v->is_string()) fail(ErrorKind::InvalidArgument, fn_name, "() argument '", name, "' must be a str");
  return v->str();
}

// str.strip/lstrip/rstrip: whitespace, or the characters of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::u32string cps = to_u32(s);
  std::u32string set = chars && chars->is_string() ? to_u32(chars->str()) : std::u32string();
  bool ws = !chars || chars->is_none();
  auto drop = [&](char32_t c) { return ws ? py_space(c) : set.find(c) != std::u32string::npos; };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && drop(cps[b])) ++b;
  if (right)
    while (e > b && drop(cps[e - 1])) --e;
  return from_u32(std::u32string_view(cps).substr(b, e - b));
}

Value split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  List parts;
  if (!sep || sep->is_none()) {
    std::u32string cps = to_u32(s);
    std::vector<std::pair<size_t, size_t>> words;
    for (size_t i = 0; i < cps.size();) {
      while (i < cps.size() && py_space(cps[i])) ++i;
      size_t b = i;
      while (i < cps.size() && !py_space(cps[i])) ++i;
      if (i > b) words.emplace_back(b, i);
    }
    if (maxsplit >= 0 && words.size() > size_t(maxsplit) + 1) {
      // The rest stays one part (stripped on the split side only), as CPython keeps it.
      if (from_right) {
        size_t cut = words.size() - size_t(maxsplit) - 1;
        std::u32string head = cps.substr(0, words[cut].second);
        size_t hb = 0;
        while (hb < head.size() && py_space(head[hb])) ++hb;
        parts.emplace_back(from_u32(head.substr(hb)));
        for (size_t w = cut + 1; w < words.size(); ++w)
          parts.emplace_back(from_u32(cps.substr(words[w].first, words[w].second - words[w].first)));
      } else {
        for (size_t w = 0; w < size_t(maxsplit); ++w)
          parts.emplace_back(from_u32(cps.substr(words[w].first, words[w].second - words[w].first)));
        std::u32string tail = cps.substr(words[size_t(maxsplit)].first);
        while (!tail.empty() && py_space(tail.back())) tail.pop_back();
        parts.emplace_back(from_u32(tail));
      }
    } else {
      for (auto [b, e] : words) parts.emplace_back(from_u32(cps.substr(b, e - b)));
    }
    return Value::list(std::move(parts));
  }
  if (!sep->is_string()) fail(ErrorKind::InvalidArgument, "split() separator must be a str or None");
  const std::string& d = sep->str();
  if (d.empty()) fail(ErrorKind::InvalidArgument, "empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t pos = 0;
    while (true) {
      size_t f = (maxsplit < 0 || int64_t(pieces.size()) < maxsplit) ? s.find(d, pos) : std::string::npos;
      if (f == std::string::npos) {
        pieces.push_back(s.substr(pos));
        break;
      }
      pieces.push_back(s.substr(pos, f - pos));
      pos = f + d.size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      size_t f = (maxsplit < 0 || int64_t(pieces.size()) < maxsplit) && end >= d.size() ? s.rfind(d, end - d.size())
                                                                                        : std::string::npos;
      if (f == std::string::npos) {
        pieces.push_back(s.substr(0, end));
        break;
      }
      pieces.push_back(s.substr(f + d.size(), end - f - d.size()));
      end = f;
    }
    std::reverse(pieces.begin(), pieces.end());
  }
  for (auto& p : pieces) parts.emplace_back(std::move(p));
  return Value::list(std::move(parts));
}

bool affix(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const Value& v) {
    if (!v.is_string())
      fail(ErrorKind::InvalidArgument, prefix ? "startswith" : "endswith", "() needs str or a tuple of str");
    const std::string& p = v.str();
    return p.size() <= s.size() &&
           (prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (what.is_list()) {
    for (const Value& v : what.items())
      if (one(v)) return true;
    return false;
  }
  return one(what);
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count, Renderer& r) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` around every code point.
    std::u32string cps = to_u32(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count >= 0 && int64_t(i) >= count) {
        out += from_u32(std::u32string_view(cps).substr(i));
        break;
      }
      out += to;
      if (i < cps.size()) out += from_u32(std::u32string(1, cps[i]));
      r.charge_string(out.size());
    }
    return out;
  }
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    r.charge_string(out.size());
  }
  out.append(s, pos, std::string::npos);
  r.charge_string(out.size());
  return out;
}

std::string title(const std::string& s) {
  std::u32string cps = to_u32(s), out;
  bool prev_cased = false;
  for (char32_t c : cps) {
    if (prev_cased) {
      unicode::append_lower(out, c);
    } else {
      out += upper(c);
    }
    prev_cased = is_alpha(c);
  }
  return from_u32(out);
}

// str.format with {}, {0} and {name} fields (no format specs or conversions).
std::string format(const std::string& s, const CallArgs& a, Renderer& r) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') fail(ErrorKind::InvalidArgument, "single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    size_t e = s.find('}', i);
    if (e == std::string::npos) fail(ErrorKind::InvalidArgument, "single '{' encountered in format string");
    std::string field = s.substr(i + 1, e - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      fail(ErrorKind::Unsupported, "str.format field '{", field, "}': format specs are not supported");
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.positional.size() ? &a.positional[auto_index++] : nullptr;
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      size_t k = std::stoul(field);
      v = k < a.positional.size() ? &a.positional[k] : nullptr;
    } else {
      v = a.get(size_t(-1), field);
    }
    if (!v) fail(ErrorKind::InvalidArgument, "str.format: no argument for field '{", field, "}'");
    out += to_str(*v);
    r.charge_string(out.size());
    i = e;
  }
  return out;
}

Value str_method(const std::string& s, const std::string& name) {
  auto flag = [&](auto pred) {
    return fn(name, [s, pred](CallArgs&, Renderer&) {
      std::u32string cps = to_u32(s);
      bool ok = !cps.empty();
      for (char32_t c : cps) ok = ok && pred(c);
      return Value(ok);
    });
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return fn(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 1, "chars");
      return Value(strip(s, a.get(0, "chars"), name != "rstrip", name != "lstrip"));
    });
  if (name == "split" || name == "rsplit")
    return fn(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 2, "sep,maxsplit");
      const Value* m = a.get(1, "maxsplit");
      return split(s, a.get(0, "sep"), m ? m->as_int() : -1, name == "rsplit");
    });
  if (name == "startswith" || name == "endswith")
    return fn(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 1, "");
      if (a.positional.empty()) fail(ErrorKind::InvalidArgument, name, "() takes one argument");
      return Value(affix(s, a.positional[0], name == "startswith"));
    });
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
    return fn(name, [s, name](CallArgs&, Renderer&) {
      std::u32string cps = to_u32(s);
      if (name == "title") return Value(title(s));
      if (name == "lower") return Value(from_u32(lower(cps)));
      if (name == "upper") {
        for (char32_t& c : cps) c = upper(c);
        return Value(from_u32(cps));
      }
      std::u32string out = lower(cps);
      if (!cps.empty()) out = std::u32string(1, upper(cps[0])) + lower(std::u32string_view(cps).substr(1));
      return Value(from_u32(out));
    });
  if (name == "replace")
    return fn(name, [s](CallArgs& a, Renderer& r) {
      a.check("replace", 3, "");
      const Value* count = a.get(2, "count");
      return Value(replace(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                           count ? count->as_int() : -1, r));
    });
  if (name == "format") return fn(name, [s](CallArgs& a, Renderer& r) { return Value(format(s, a, r)); });
  if (name == "join")
    return fn(name, [s](CallArgs& a, Renderer& r) {
      if (a.positional.size() != 1) fail(ErrorKind::InvalidArgument, "join() takes one argument");
      std::string out;
      List items = iterate(a.positional[0]);
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string())
          fail(ErrorKind::InvalidArgument, "sequence item ", i, ": expected str instance, ", type_name(items[i]),
               " found");
        if (i) out += s;
        out += items[i].str();
        r.charge_string(out.size());
      }
      return Value(std::move(out));
    });
  if (name == "find" || name == "rfind" || name == "count" || name == "index")
    return fn(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 1, "");
      const std::string& sub = str_arg(a, 0, "sub", name);
      if (name == "count") {
        if (sub.empty()) return Value(int64_t(code_points(s) + 1));
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value(n);
      }
      size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name == "index") fail(ErrorKind::InvalidArgument, "substring not found");
        return Value(-1);
      }
      return Value(int64_t(code_points(std::string_view(s).substr(0, p))));
    });
  if (name == "splitlines")
    return fn(name, [s](CallArgs&, Renderer&) {
      List lines;
      size_t b = 0;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == '\n' || s[i] == '\r') {
          lines.emplace_back(s.substr(b, i - b));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          b = i + 1;
        }
      if (b < s.size()) lines.emplace_back(s.substr(b));
      return Value::list(std::move(lines));
    });
  if (name == "isdigit") return flag([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return flag(is_alpha);
  if (name == "isspace") return flag(py_space);
  if (name == "isalnum") return flag([](char32_t c) { return is_alpha(c) || unicode::is_number(c); });
  return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value unsafe(const Value& self, const std::string& name) {
  // ImmutableSandboxedEnvironment refuses methods that modify a list or dict.
  std::string msg = "access to attribute '" + name + "' of '" + std::string(type_name(self)) +
                    "' object is unsafe (the sandbox forbids modifying it)";
  return fn(name, [msg](CallArgs&, Renderer&) -> Value { fail(ErrorKind::InvalidArgument, msg); });
}

}  // namespace

Value method_of(const Value& self, const std::string& name) {
  if (self.is_string()) return str_method(self.str(), name);
  if (self.is_dict()) {
    Value d = self;
    if (name == "items" || name == "keys" || name == "values")
      return fn(name, [d, name](CallArgs&, Renderer& r) {
        List out;
        r.charge_items(d.dict().entries.size());
        for (const auto& [k, v] : d.dict().entries) {
          if (name == "items")
            out.push_back(Value::list({Value(k), v}, true));
          else
            out.push_back(name == "keys" ? Value(k) : v);
        }
        return Value::list(std::move(out));
      });
    if (name == "get")
      return fn(name, [d](CallArgs& a, Renderer&) {
        a.check("get", 2, "");
        if (a.positional.empty()) fail(ErrorKind::InvalidArgument, "get() takes at least one argument");
        const Value* v = a.positional[0].is_string() ? d.dict().find(a.positional[0].str()) : nullptr;
        return v ? *v : a.positional.size() > 1 ? a.positional[1] : Value(None{});
      });
    if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" || name == "clear")
      return unsafe(self, name);
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  if (self.is_list()) {
    Value l = self;
    if (name == "index" || name == "count")
      return fn(name, [l, name](CallArgs& a, Renderer&) {
        a.check(name, 1, "");
        if (a.positional.empty()) fail(ErrorKind::InvalidArgument, name, "() takes one argument");
        int64_t n = 0;
        for (size_t i = 0; i < l.items().size(); ++i)
          if (equals(l.items()[i], a.positional[0])) {
            if (name == "index") return Value(int64_t(i));
            ++n;
          }
        if (name == "index") fail(ErrorKind::InvalidArgument, to_repr(a.positional[0]), " is not in list");
        return Value(n);
      });
    if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
        name == "clear" || name == "sort" || name == "reverse")
      return unsafe(self, name);
  }
  return Value::undefined("'" + std::string(type_name(self)) + " object' has no attribute '" + name + "'");
}

void add_globals(Scope& scope) {
  scope.set("range", fn("range", [](CallArgs& a, Renderer& r) {
              a.check("range", 3, "");
              for (const Value& v : a.positional)
                if (!v.is_int() && !v.is_bool())
                  fail(ErrorKind::InvalidArgument, "range() arguments must be integers, not ", type_name(v));
              if (a.positional.empty()) fail(ErrorKind::InvalidArgument, "range expected at least 1 argument");
              int64_t start = 0, stop, step = 1;
              if (a.positional.size() == 1) {
                stop = a.positional[0].as_int();
              } else {
                start = a.positional[0].as_int();
                stop = a.positional[1].as_int();
                if (a.positional.size() == 3) step = a.positional[2].as_int();
              }
              if (step == 0) fail(ErrorKind::InvalidArgument, "range() arg 3 must not be zero");
              // Python's len(range): computed before anything is allocated.
              long double span = step > 0 ? (long double)stop - start : (long double)start - stop;
              long double n = span <= 0 ? 0 : (span + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step);
              if (n > (long double)r.limits().max_container_items) r.charge_items(r.limits().max_container_items + 1);
              r.charge_items(size_t(n));
              List out;
              for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                out.emplace_back(i);
                if (__builtin_add_overflow(i, step, &i)) break;
                i -= step;
              }
              return Value::list(std::move(out));
            }));
  auto make_dict = [](bool ns) {
    return [ns](CallArgs& a, Renderer& r) {
      auto d = std::make_shared<Dict>();
      d->is_namespace = ns;
      if (!a.positional.empty()) {
        if (a.positional.size() > 1 || !a.positional[0].is_dict())
          fail(ErrorKind::InvalidArgument, ns ? "namespace" : "dict", "() takes one mapping and keyword arguments");
        d->entries = a.positional[0].dict().entries;
      }
      for (auto& [k, v] : a.keyword) {
        if (ns && !k.empty() && k[0] == '_')
          fail(ErrorKind::InvalidArgument,
               "chat templates cannot store underscore-prefixed attributes on a namespace, but got '", k, "'");
        d->set(k, v);
      }
      if (ns) r.own(d);
      return Value::dict(std::move(d));
    };
  };
  scope.set("namespace", fn("namespace", make_dict(true)));
  scope.set("dict", fn("dict", make_dict(false)));
  scope.set("joiner", fn("joiner", [](CallArgs& a, Renderer&) {
              a.check("joiner", 1, "sep");
              const Value* sep = a.get(0, "sep");
              std::string s = sep ? to_str(*sep) : ", ";
              auto used = std::make_shared<bool>(false);
              return fn("joiner", [s, used](CallArgs&, Renderer&) {
                bool first = !*used;
                *used = true;
                return Value(first ? std::string() : s);
              });
            }));
  scope.set("raise_exception", fn("raise_exception", [](CallArgs& a, Renderer&) -> Value {
              fail(ErrorKind::InvalidArgument, a.positional.empty() ? std::string() : to_str(a.positional[0]));
            }));
  scope.set("strftime_now", fn("strftime_now", [](CallArgs& a, Renderer&) {
              a.check("strftime_now", 1, "format");
              const Value* f = a.get(0, "format");
              if (!f || !f->is_string()) fail(ErrorKind::InvalidArgument, "strftime_now() needs a format string");
              std::time_t t = std::time(nullptr);
              std::tm tm{};
              localtime_r(&t, &tm);
              char buf[512];
              size_t n = f->str().size() < 200 ? std::strftime(buf, sizeof buf, f->str().c_str(), &tm) : 0;
              return Value(std::string(buf, n));
            }));
}

}  // namespace wick::text::jinja
