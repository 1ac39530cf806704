// Literals, classes, code point sets and the rule set of gbnf_emit.h.
#include "text/gbnf_emit.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unordered_set>

#include "text/unicode.h"
#include "wick/error.h"

namespace wick::text::gbnf {
namespace {

constexpr char32_t kMaxCp = 0x10FFFF;

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  return buf;
}

// One code point inside [ ]: the class's own metacharacters escaped, controls and non-ASCII
// as \x / \u / \U escapes so that grammars stay plain ASCII there.
void append_class_char(std::string& out, char32_t cp) {
  if (cp == ']' || cp == '[' || cp == '\\' || cp == '^' || cp == '-') {
    out += '\\';
    out += static_cast<char>(cp);
  } else if (cp < 0x20 || cp == 0x7F) {
    out += "\\x" + hex(cp, 2);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp <= 0xFFFF) {
    out += "\\u" + hex(cp, 4);
  } else {
    out += "\\U" + hex(cp, 8);
  }
}

std::string class_text(const CodeSet& set, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const Range& r : set) {
    append_class_char(out, r.lo);
    if (r.hi == r.lo) continue;
    if (r.hi > r.lo + 1) out += '-';
    append_class_char(out, r.hi);
  }
  return out + "]";
}

// Code points in a literal's text (an escape is one).
size_t literal_chars(std::string_view lit) {
  size_t n = 0;
  for (size_t i = 1; i + 1 < lit.size(); ++n) {
    if (lit[i] == '\\') {
      const char e = lit[i + 1];
      i += e == 'x' ? 4 : e == 'u' ? 6 : e == 'U' ? 10 : 2;
    } else {
      i += unicode::decode_utf8(lit, i).length;
    }
  }
  return n;
}

}  // namespace

size_t item_end(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  const char c = s[i];
  auto is_name = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-'; };
  if (is_name(c)) {
    while (i < s.size() && is_name(s[i])) ++i;
    return i;
  }
  if (c == '.') return i + 1;
  if (c == '"' || c == '[') {
    const char close = c == '"' ? '"' : ']';
    for (++i; i < s.size(); ++i) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == close)
        return i + 1;
    }
    return std::string_view::npos;
  }
  if (c == '(') {
    int depth = 0;
    while (i < s.size()) {
      if (s[i] == '"' || s[i] == '[') {
        i = item_end(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (s[i] == '(') ++depth;
      if (s[i] == ')' && --depth == 0) return i + 1;
      ++i;
    }
  }
  return std::string_view::npos;
}

std::string literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    switch (b) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b < 0x20 || b == 0x7F)
          out += "\\x" + hex(b, 2);
        else
          out += ch;
    }
  }
  return out + "\"";
}

std::string json_escape(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    switch (b) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", b);  // lowercase, as JSON writers do
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string json_key(std::string_view key) {
  std::string text = "\"";
  text += json_escape(key);
  text += "\":";
  return literal(text);
}

std::string atom(const std::string& expr) {
  const size_t end = item_end(expr, 0);
  const bool one_item = end == expr.size() && (expr[0] != '"' || literal_chars(expr) == 1);
  return one_item ? expr : "( " + expr + " )";
}

namespace {

std::string repeat_suffix(int64_t min, int64_t max) {
  if (min == 1 && max == 1) return "";
  if (min == 0 && max == 1) return "?";
  if (min == 0 && max < 0) return "*";
  if (min == 1 && max < 0) return "+";
  if (max < 0) return "{" + std::to_string(min) + ",}";
  if (min == max) return "{" + std::to_string(min) + "}";
  return "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

}  // namespace

std::string repeat(const std::string& expr, int64_t min, int64_t max) {
  if (max == 0 || expr.empty()) return "";
  if (min == 1 && max == 1) return expr;
  return atom(expr) + repeat_suffix(min, max);
}

std::string alternatives(const std::vector<std::string>& alts) {
  std::unordered_set<std::string_view> seen;
  std::string out;
  size_t kept = 0;
  bool optional = false;
  for (const auto& a : alts) {
    if (a.empty())
      optional = true;
    else if (seen.insert(a).second)
      out += (kept++ ? " | " : "") + a;
  }
  WICK_CHECK(kept || optional, Internal, "gbnf: an alternation of nothing");
  if (kept == 0) return "";
  if (kept > 1) out = "( " + out + " )";
  return optional ? atom(out) + "?" : out;
}

CodeSet make_set(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  CodeSet merged;
  for (const Range& r : ranges) {
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  CodeSet out;  // without surrogates
  for (const Range& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

CodeSet complement(const CodeSet& set) {
  std::vector<Range> out;
  char32_t next = 0;
  for (const Range& r : set) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCp) out.push_back({next, kMaxCp});
  return make_set(std::move(out));
}

bool contains(const CodeSet& set, char32_t cp) {
  auto it = std::upper_bound(set.begin(), set.end(), cp, [](char32_t c, const Range& r) { return c < r.lo; });
  return it != set.begin() && std::prev(it)->hi >= cp;
}

std::string char_expr(const CodeSet& set) {
  WICK_CHECK(!set.empty(), Internal, "gbnf: a class of no character");
  if (set.size() == 1 && set[0].lo == set[0].hi) {
    std::string utf8;
    unicode::append_utf8(utf8, set[0].lo);
    return literal(utf8);
  }
  const CodeSet rest = complement(set);
  if (rest.empty()) return ".";
  return rest.size() <= set.size() ? class_text(rest, true) : class_text(set, false);
}

std::string json_char_expr(const CodeSet& set) {
  std::vector<std::string> alts;
  const CodeSet raw = make_set({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCp}});
  std::vector<Range> raw_part;
  for (const Range& r : set)
    for (const Range& q : raw)
      if (std::max(r.lo, q.lo) <= std::min(r.hi, q.hi))
        raw_part.push_back({std::max(r.lo, q.lo), std::min(r.hi, q.hi)});
  if (!raw_part.empty()) alts.push_back(char_expr(make_set(std::move(raw_part))));
  // The short escapes (\/ is '/' written the long way, allowed but never required).
  std::vector<Range> shorts;
  const std::pair<char32_t, char> short_forms[] = {{'"', '"'},  {'\\', '\\'}, {'/', '/'},  {'\b', 'b'},
                                                   {'\f', 'f'}, {'\n', 'n'},  {'\r', 'r'}, {'\t', 't'}};
  for (const auto& [cp, letter] : short_forms)
    if (contains(set, cp)) shorts.push_back({static_cast<char32_t>(letter), static_cast<char32_t>(letter)});
  if (!shorts.empty()) alts.push_back(literal("\\") + " " + char_expr(make_set(std::move(shorts))));
  // Every control character as \u00XX, in either case of hex digit.
  std::vector<std::string> by_high;
  for (char32_t high = 0; high < 2; ++high) {
    std::vector<Range> digits;
    for (char32_t low = 0; low < 16; ++low) {
      if (!contains(set, high * 16 + low)) continue;
      const char32_t d = low < 10 ? '0' + low : 'a' + low - 10;
      digits.push_back({d, d});
      if (low >= 10) digits.push_back({d - 'a' + 'A', d - 'a' + 'A'});
    }
    if (!digits.empty())
      by_high.push_back(literal(std::string(1, static_cast<char>('0' + high))) + " " +
                        char_expr(make_set(std::move(digits))));
  }
  if (!by_high.empty()) alts.push_back(literal("\\u00") + " " + alternatives(by_high));
  WICK_CHECK(!alts.empty(), Internal, "gbnf: a class of no character");
  return alternatives(alts);
}

RuleSet::RuleSet() { reserve("root"); }

std::string RuleSet::reserve(std::string_view hint) {
  std::string base;
  for (const char c : hint) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c));
    if (ok)
      base += c;
    else if (!base.empty() && base.back() != '-')
      base += '-';
    if (base.size() >= 48) break;
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.empty()) base = "r";
  std::string name = base;
  for (int& n = taken_[base]; index_.count(name); name = base + "-" + std::to_string(++n)) {
  }
  index_.emplace(name, names_.size());
  names_.push_back(name);
  bodies_.emplace_back();
  return name;
}

namespace {

// A rule's body without the parentheses of a group that is all of it.
std::string unwrap(std::string body) {
  if (body.size() > 4 && body.starts_with("( ") && item_end(body, 0) == body.size())
    return body.substr(2, body.size() - 4);
  return body;
}

}  // namespace

void RuleSet::define(const std::string& name, std::string body) {
  body = unwrap(std::move(body));
  const size_t i = index_.at(name);
  by_body_.emplace(body, name);
  bodies_[i] = std::move(body);
}

std::string RuleSet::add(std::string_view hint, std::string body) {
  WICK_CHECK(!body.empty(), Internal, "gbnf: an empty rule for ", hint);
  if (body[0] != '(' && item_end(body, 0) == body.size()) return body;
  body = unwrap(std::move(body));
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  std::string name = reserve(hint);
  define(name, std::move(body));
  return name;
}

std::string RuleSet::str() const {
  std::string out;
  for (size_t i = 0; i < names_.size(); ++i) out += names_[i] + " ::= " + bodies_[i] + "\n";
  return out;
}

}  // namespace wick::text::gbnf
