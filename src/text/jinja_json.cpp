// JSON in and out: Python's json.dumps for tojson (transformers' filter: ensure_ascii=False,
// optional indent, separators, sort_keys), and JSON contexts read into values with their
// key order kept (Python dicts keep insertion order, and tojson prints in it).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja_eval.h"
#include "text/unicode.h"

namespace wick::text::jinja {
namespace {

void string_json(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    char buf[16];
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (c < 0x80 || !ensure_ascii) {
      out += char(c);
      ++i;
    } else {
      unicode::Decoded d = unicode::decode_utf8(s, i);
      char32_t cp = d.valid ? d.cp : char32_t(0xdc00 + c);
      i += d.valid ? d.length : 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xd800 + (cp >> 10)),
                      unsigned(0xdc00 + (cp & 0x3ff)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
      }
      out += buf;
    }
  }
  out += '"';
}

struct JsonWriter {
  int indent;
  bool ensure_ascii, sort_keys;
  std::string_view item_sep, key_sep;
  std::string out;

  void newline(uint32_t level) {
    if (indent < 0) return;
    out += '\n';
    out.append(size_t(indent) * level, ' ');
  }
  void write(const Value& v, uint32_t level) {
    walk(level);
    walk_bytes(out.size());
    if (v.is_none()) {
      out += "null";
    } else if (v.is_bool()) {
      out += std::get<bool>(v.v) ? "true" : "false";
    } else if (v.is_int()) {
      out += std::to_string(v.as_int());
    } else if (v.is_float()) {
      double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
    } else if (v.is_string()) {
      string_json(out, v.str(), ensure_ascii);
    } else if (v.is_list()) {
      const List& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        write(items[i], level + 1);
      }
      newline(level);
      out += ']';
    } else if (v.is_dict()) {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict().entries) entries.push_back(&e);
      if (sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (entries.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        string_json(out, entries[i]->first, ensure_ascii);
        out += key_sep;
        write(entries[i]->second, level + 1);
      }
      newline(level);
      out += '}';
    } else {
      fail(ErrorKind::InvalidArgument, "Object of type ", type_name(v), " is not JSON serializable");
    }
  }
};

}  // namespace

std::string to_json(const Value& v, int indent, bool ensure_ascii, bool sort_keys, std::string_view item_sep,
                    std::string_view key_sep) {
  JsonWriter w{indent, ensure_ascii, sort_keys, item_sep, key_sep, {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace wick::text::jinja
