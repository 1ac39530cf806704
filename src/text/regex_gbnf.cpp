// Regular expressions (ECMAScript syntax, JSON Schema's `pattern`) as GBNF: parsed over code
// points into sets, sequences, alternatives and repetitions, then written out raw or as the
// characters appear inside a JSON string.
#include <algorithm>
#include <string>
#include <vector>

#include "text/gbnf_emit.h"
#include "text/unicode.h"
#include "wick/error.h"
#include "wick/text/json_schema.h"

namespace wick::text {
namespace {

using gbnf::CodeSet;
using gbnf::Range;

constexpr int kMaxDepth = 128;
// Characters the matcher may have to walk once its repetitions are expanded (a{1000}{...}
// written as nested groups multiplies).
constexpr int64_t kMaxExpanded = 1'000'000;
constexpr int64_t kUnbounded = -1;

struct Node {
  enum Kind { kChars, kSeq, kAlt, kRepeat };
  explicit Node(Kind k, CodeSet chars = {}) : kind(k), set(std::move(chars)) {}

  Kind kind;
  CodeSet set;  // kChars
  std::vector<Node> kids;
  int64_t min = 1, max = 1;  // kRepeat (max kUnbounded)
};

CodeSet digits() { return {{'0', '9'}}; }
CodeSet word() { return gbnf::make_set({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
CodeSet space() {
  return gbnf::make_set({{'\t', '\r'},
                         {' ', ' '},
                         {0xA0, 0xA0},
                         {0x1680, 0x1680},
                         {0x2000, 0x200A},
                         {0x2028, 0x2029},
                         {0x202F, 0x202F},
                         {0x205F, 0x205F},
                         {0x3000, 0x3000},
                         {0xFEFF, 0xFEFF}});
}
// '.': everything but the line terminators.
CodeSet dot() { return gbnf::complement(gbnf::make_set({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})); }

class Parser {
 public:
  explicit Parser(std::string_view pattern) : source_(pattern) {
    for (size_t i = 0; i < pattern.size();) {
      const unicode::Decoded d = unicode::decode_utf8(pattern, i);
      WICK_CHECK(d.valid, InvalidArgument, "regex: not UTF-8 at byte ", i, where());
      cps_.push_back(d.cp);
      i += d.length;
    }
  }

  Node parse() {
    Node n = alternation(0);
    WICK_CHECK(pos_ == cps_.size(), InvalidArgument, "regex: unmatched ')' at ", pos_, where());
    return n;
  }

 private:
  std::string where() const {
    const std::string_view shown = source_.substr(0, 200);
    return std::string(" in '") + std::string(shown) + (shown.size() < source_.size() ? "...'" : "'");
  }
  bool at(char32_t c) const { return pos_ < cps_.size() && cps_[pos_] == c; }
  bool at_end() const { return pos_ >= cps_.size(); }

  Node alternation(int depth) {
    Node alt(Node::kAlt);
    alt.kids.push_back(sequence(depth));
    while (at('|')) {
      ++pos_;
      alt.kids.push_back(sequence(depth));
    }
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Node sequence(int depth) {
    Node seq(Node::kSeq);
    while (!at_end() && !at('|') && !at(')')) {
      // Anchors: every pattern matches whole, so ^ and $ mean something only where they
      // would anyway, at the ends of the pattern.
      if (at('^')) {
        WICK_CHECK(depth == 0 && seq.kids.empty(), Unsupported, "regex: '^' other than at the start, at ", pos_,
                   where());
        ++pos_;
        continue;
      }
      if (at('$')) {
        ++pos_;
        WICK_CHECK(depth == 0 && (at_end() || at('|')), Unsupported, "regex: '$' other than at the end, at ", pos_ - 1,
                   where());
        continue;
      }
      Node item = atom(depth);
      int64_t min = 0, max = 0;
      if (quantifier(min, max)) {
        WICK_CHECK(max == kUnbounded || min <= max, InvalidArgument, "regex: {", min, ",", max, "} out of order at ",
                   pos_, where());
        WICK_CHECK(min <= gbnf::kMaxRepeat && max <= gbnf::kMaxRepeat, Unsupported, "regex: a repetition count over ",
                   gbnf::kMaxRepeat, " at ", pos_, where());
        if (at('?')) ++pos_;  // lazy: the same texts
        WICK_CHECK(!starts_quantifier(), InvalidArgument, "regex: nothing to repeat at ", pos_, where());
        Node rep(Node::kRepeat);
        rep.kids.push_back(std::move(item));
        rep.min = min, rep.max = max;
        item = std::move(rep);
      }
      seq.kids.push_back(std::move(item));
    }
    return seq.kids.size() == 1 ? std::move(seq.kids[0]) : seq;
  }

  // {n}, {n,} or {n,m} at pos (a '{' that starts none of them is a literal '{').
  bool braces(size_t& end, int64_t& min, int64_t& max) const {
    size_t i = pos_ + 1;
    auto number = [&](int64_t& v) {
      const size_t from = i;
      for (v = 0; i < cps_.size() && cps_[i] >= '0' && cps_[i] <= '9'; ++i)
        v = std::min<int64_t>(v * 10 + (cps_[i] - '0'), int64_t{1} << 40);
      return i > from;
    };
    if (!number(min)) return false;
    max = min;
    if (i < cps_.size() && cps_[i] == ',') {
      ++i;
      if (!number(max)) max = kUnbounded;
    }
    if (i >= cps_.size() || cps_[i] != '}') return false;
    end = i + 1;
    return true;
  }
  bool starts_quantifier() const {
    size_t end;
    int64_t a, b;
    return at('*') || at('+') || at('?') || (at('{') && braces(end, a, b));
  }
  bool quantifier(int64_t& min, int64_t& max) {
    if (at('*') || at('+') || at('?')) {
      min = at('+') ? 1 : 0;
      max = at('?') ? 1 : kUnbounded;
      ++pos_;
      return true;
    }
    size_t end;
    if (at('{') && braces(end, min, max)) {
      pos_ = end;
      return true;
    }
    return false;
  }

  Node chars(CodeSet set) {
    WICK_CHECK(!set.empty(), Unsupported, "regex: a class that matches no character at ", pos_, where());
    return Node(Node::kChars, std::move(set));
  }

  Node atom(int depth) {
    const char32_t c = cps_[pos_];
    WICK_CHECK(!starts_quantifier(), InvalidArgument, "regex: nothing to repeat at ", pos_, where());
    if (c == '(') return group(depth);
    if (c == '[') return chars(char_class());
    ++pos_;
    if (c == '.') return chars(dot());
    if (c == '\\') return chars(escape(false));
    return chars({{c, c}});
  }

  Node group(int depth) {
    WICK_CHECK(depth < kMaxDepth, InvalidArgument, "regex: groups nested deeper than ", kMaxDepth, where());
    const size_t open = pos_++;
    if (at('?')) {
      ++pos_;
      if (at(':')) {
        ++pos_;
      } else if (at('=') || at('!')) {
        fail(ErrorKind::Unsupported, "regex: lookahead at ", open, where());
      } else if (at('<') && pos_ + 1 < cps_.size() && (cps_[pos_ + 1] == '=' || cps_[pos_ + 1] == '!')) {
        fail(ErrorKind::Unsupported, "regex: lookbehind at ", open, where());
      } else if (at('<')) {  // a named group: the name does not change the texts
        while (!at_end() && !at('>')) ++pos_;
        WICK_CHECK(at('>'), InvalidArgument, "regex: unterminated group name at ", open, where());
        ++pos_;
      } else {
        fail(ErrorKind::InvalidArgument, "regex: unknown group kind '(?' at ", open, where());
      }
    }
    Node inner = alternation(depth + 1);
    WICK_CHECK(at(')'), InvalidArgument, "regex: unclosed '(' at ", open, where());
    ++pos_;
    return inner;
  }

  CodeSet char_class() {
    const size_t open = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    std::vector<Range> ranges;
    while (!at(']')) {
      WICK_CHECK(!at_end(), InvalidArgument, "regex: unterminated class at ", open, where());
      CodeSet a = class_atom();
      if (at('-') && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != ']') {
        ++pos_;
        CodeSet b = class_atom();
        const bool single = a.size() == 1 && a[0].lo == a[0].hi && b.size() == 1 && b[0].lo == b[0].hi;
        if (single) {
          WICK_CHECK(a[0].lo <= b[0].lo, InvalidArgument, "regex: class range out of order at ", pos_, where());
          ranges.push_back({a[0].lo, b[0].lo});
          continue;
        }
        // A class escape at either end: the '-' is itself (Annex B).
        ranges.push_back({'-', '-'});
        ranges.insert(ranges.end(), b.begin(), b.end());
      }
      ranges.insert(ranges.end(), a.begin(), a.end());
    }
    ++pos_;
    const CodeSet set = gbnf::make_set(std::move(ranges));
    return negated ? gbnf::complement(set) : set;
  }

  CodeSet class_atom() {
    const char32_t c = cps_[pos_++];
    if (c != '\\') return {{c, c}};
    return escape(true);
  }

  uint32_t hex_digits(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k, ++pos_) {
      WICK_CHECK(!at_end() && std::isxdigit(static_cast<int>(cps_[pos_] < 0x80 ? cps_[pos_] : 0)), InvalidArgument,
                 "regex: expected a hex digit at ", pos_, where());
      const char32_t h = cps_[pos_];
      v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After a '\': the escape's characters.
  CodeSet escape(bool in_class) {
    WICK_CHECK(!at_end(), InvalidArgument, "regex: '\\' at the end", where());
    const size_t at_escape = pos_ - 1;
    const char32_t c = cps_[pos_++];
    auto one = [](char32_t cp) { return CodeSet{{cp, cp}}; };
    switch (c) {
      case 'd': return digits();
      case 'D': return gbnf::complement(digits());
      case 'w': return word();
      case 'W': return gbnf::complement(word());
      case 's': return space();
      case 'S': return gbnf::complement(space());
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'v': return one('\v');
      case 'f': return one('\f');
      case 'r': return one('\r');
      case 'b':
        WICK_CHECK(in_class, Unsupported, "regex: \\b (word boundary) at ", at_escape, where());
        return one('\b');
      case 'B': fail(ErrorKind::Unsupported, "regex: \\B (word boundary) at ", at_escape, where());
      case 'k': fail(ErrorKind::Unsupported, "regex: backreference at ", at_escape, where());
      case 'p':
      case 'P': fail(ErrorKind::Unsupported, "regex: Unicode property class at ", at_escape, where());
      case 'c': {
        WICK_CHECK(!at_end() && cps_[pos_] < 0x80 && std::isalpha(static_cast<int>(cps_[pos_])), InvalidArgument,
                   "regex: \\c without a letter at ", at_escape, where());
        return one(cps_[pos_++] % 32);
      }
      case 'x': return one(hex_digits(2));
      case 'u': {
        if (at('{')) {
          ++pos_;
          uint32_t v = 0;
          const size_t from = pos_;
          while (!at('}')) v = std::min<uint32_t>(v * 16 + hex_digits(1), 0x110000);
          WICK_CHECK(pos_ > from && v <= 0x10FFFF, InvalidArgument, "regex: bad \\u{...} at ", at_escape, where());
          ++pos_;
          return one(v);
        }
        uint32_t v = hex_digits(4);
        // A surrogate pair written as two escapes is one character.
        if (v >= 0xD800 && v <= 0xDBFF && pos_ + 1 < cps_.size() && cps_[pos_] == '\\' && cps_[pos_ + 1] == 'u') {
          const size_t back = pos_;
          pos_ += 2;
          const uint32_t low = hex_digits(4);
          if (low >= 0xDC00 && low <= 0xDFFF) return one(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
          pos_ = back;
        }
        WICK_CHECK(v < 0xD800 || v > 0xDFFF, Unsupported, "regex: a lone surrogate at ", at_escape, where());
        return one(v);
      }
      case '0':
        WICK_CHECK(at_end() || cps_[pos_] < '0' || cps_[pos_] > '9', Unsupported, "regex: octal escape at ", at_escape,
                   where());
        return one(0);
      default: break;
    }
    WICK_CHECK(c < '1' || c > '9', Unsupported, "regex: backreference at ", at_escape, where());
    WICK_CHECK(c >= 0x80 || !std::isalnum(static_cast<int>(c)), InvalidArgument, "regex: unknown escape at ", at_escape,
               where());
    return one(c);  // \. \\ \/ \- and the other punctuation: the character itself
  }

  std::string_view source_;
  std::u32string cps_;
  size_t pos_ = 0;
};

// The characters the matcher walks for the node, repetitions expanded (capped).
int64_t expanded_size(const Node& n) {
  switch (n.kind) {
    case Node::kChars: return 1;
    case Node::kRepeat: {
      const int64_t times = std::max<int64_t>(1, n.max == kUnbounded ? n.min + 1 : n.max);
      return std::min(kMaxExpanded + 1, expanded_size(n.kids[0]) * times);
    }
    default: {
      int64_t sum = 0;
      for (const Node& k : n.kids) sum = std::min(kMaxExpanded + 1, sum + expanded_size(k));
      return sum;
    }
  }
}

class Writer {
 public:
  Writer(gbnf::RuleSet& rules, bool json) : rules_(rules), json_(json) {}

  std::string write(const Node& n) {
    switch (n.kind) {
      case Node::kChars: return chars(n.set);
      case Node::kRepeat: return gbnf::repeat(write(n.kids[0]), n.min, n.max);
      case Node::kAlt: {
        std::vector<std::string> alts;
        for (const Node& k : n.kids) alts.push_back(write(k));
        return gbnf::alternatives(alts);
      }
      case Node::kSeq: break;
    }
    // Runs of single characters become one literal.
    std::string out, run;
    auto flush = [&] {
      if (!run.empty()) out.append(out.empty() ? "" : " ").append(gbnf::literal(run));
      run.clear();
    };
    for (const Node& k : n.kids) {
      if (k.kind == Node::kChars && k.set.size() == 1 && k.set[0].lo == k.set[0].hi && k.set[0].lo >= 0x20) {
        std::string utf8;
        unicode::append_utf8(utf8, k.set[0].lo);
        run += json_ ? gbnf::json_escape(utf8) : utf8;
        continue;
      }
      flush();
      const std::string item = write(k);
      if (!item.empty()) out += (out.empty() ? "" : " ") + item;
    }
    flush();
    return out;
  }

 private:
  std::string chars(const CodeSet& set) {
    if (!json_) return gbnf::char_expr(set);
    return rules_.add("pattern-char", gbnf::json_char_expr(set));
  }

  gbnf::RuleSet& rules_;
  bool json_;
};

}  // namespace

namespace gbnf {

std::string regex_expr(std::string_view pattern, RuleSet& rules, bool json_escaped) {
  const Node root = Parser(pattern).parse();
  WICK_CHECK(expanded_size(root) <= kMaxExpanded, Unsupported, "regex: over ", kMaxExpanded,
             " characters once its repetitions are expanded: '", pattern.substr(0, 200), "'");
  return Writer(rules, json_escaped).write(root);
}

}  // namespace gbnf

std::string regex_to_gbnf(std::string_view pattern) {
  gbnf::RuleSet rules;
  const std::string expr = gbnf::regex_expr(pattern, rules, false);
  rules.define("root", expr.empty() ? "\"\"" : expr);
  return rules.str();
}

}  // namespace wick::text
