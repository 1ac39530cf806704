// Strings as Python sees them: UTF-8 decoded to code points for lengths, indexing, strip and
// split, and the str methods templates call (`s.strip()`, `s.split(sep)`, `s.format(...)`).
// Case mapping beyond lower() is ASCII only.
#include <charconv>

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

namespace {
bool ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}
}  // namespace

size_t code_points(std::string_view s) {
  if (ascii(s)) return s.size();
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

const std::string& str_arg(const CallArgs& a, size_t i, std::string_view name, std::string_view fn_name) {
  const Value* v = a.get(i, name);
  if (!v || !v->is_string()) fail(ErrorKind::InvalidArgument, fn_name, "() argument '", name, "' must be a str");
  return v->str();
}

// str.strip/lstrip/rstrip: whitespace, or the characters of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  bool ws = !chars || chars->is_none();
  if (ascii(s) && (ws || (chars->is_string() && ascii(chars->str())))) {
    // The common case (trim of ASCII text) without decoding to code points.
    auto drop = [&](char c) { return ws ? py_space(char32_t(c)) : chars->str().find(c) != std::string::npos; };
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && drop(s[b])) ++b;
    if (right)
      while (e > b && drop(s[e - 1])) --e;
    return s.substr(b, e - b);
  }
  std::u32string cps = to_u32(s);
  std::u32string set = chars && chars->is_string() ? to_u32(chars->str()) : std::u32string();
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
      size_t k = 0;
      std::from_chars(field.data(), field.data() + field.size(), k);  // field.size() < 10: no overflow
      v = field.size() < 10 && k < a.positional.size() ? &a.positional[k] : nullptr;
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
    return callable(name, [s, pred](CallArgs&, Renderer&) {
      std::u32string cps = to_u32(s);
      bool ok = !cps.empty();
      for (char32_t c : cps) ok = ok && pred(c);
      return Value(ok);
    });
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return callable(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 1, "chars");
      return Value(strip(s, a.get(0, "chars"), name != "rstrip", name != "lstrip"));
    });
  if (name == "split" || name == "rsplit")
    return callable(name, [s, name](CallArgs& a, Renderer& r) {
      a.check(name, 2, "sep,maxsplit");
      const Value* m = a.get(1, "maxsplit");
      Value parts = split(s, a.get(0, "sep"), m ? m->as_int() : -1, name == "rsplit");
      r.charge_items(parts.items().size());
      return parts;
    });
  if (name == "startswith" || name == "endswith")
    return callable(name, [s, name](CallArgs& a, Renderer&) {
      a.check(name, 1, "");
      if (a.positional.empty()) fail(ErrorKind::InvalidArgument, name, "() takes one argument");
      return Value(affix(s, a.positional[0], name == "startswith"));
    });
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
    return callable(name, [s, name](CallArgs&, Renderer&) {
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
    return callable(name, [s](CallArgs& a, Renderer& r) {
      a.check("replace", 3, "");
      const Value* count = a.get(2, "count");
      return Value(replace(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                           count ? count->as_int() : -1, r));
    });
  if (name == "format") return callable(name, [s](CallArgs& a, Renderer& r) { return Value(format(s, a, r)); });
  if (name == "join")
    return callable(name, [s](CallArgs& a, Renderer& r) {
      if (a.positional.size() != 1) fail(ErrorKind::InvalidArgument, "join() takes one argument");
      std::string out;
      List items = iterate(a.positional[0], r);
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
    return callable(name, [s, name](CallArgs& a, Renderer&) {
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
    return callable(name, [s](CallArgs&, Renderer& r) {
      List lines;
      size_t b = 0;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == '\n' || s[i] == '\r') {
          lines.emplace_back(s.substr(b, i - b));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          b = i + 1;
        }
      if (b < s.size()) lines.emplace_back(s.substr(b));
      r.charge_items(lines.size());
      return Value::list(std::move(lines));
    });
  if (name == "isdigit") return flag([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return flag(is_alpha);
  if (name == "isspace") return flag(py_space);
  if (name == "isalnum") return flag([](char32_t c) { return is_alpha(c) || unicode::is_number(c); });
  return Value();
}

}  // namespace

Value str_method_of(const std::string& s, const std::string& name) { return str_method(s, name); }

}  // namespace wick::text::jinja
