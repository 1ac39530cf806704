// GBNF (llama.cpp's grammar dialect, grammar.h) into the flat element form of
// grammar_impl.h: characters become their UTF-8 bytes, character classes byte sets or
// (beyond ASCII) rules of byte-set sequences, groups and postfix operators rules of their own.

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "text/grammar_impl.h"
#include "text/unicode.h"
#include "text/utf8_ranges.h"
#include "wick/error.h"

namespace wick::text {

namespace {

using Sequence = std::vector<GrammarElement>;
using Alternatives = std::vector<Sequence>;

// Bounds that keep a hostile grammar's compiled form proportional to its text.
constexpr uint64_t kMaxRepeat = 1 << 16;              // m and n of {m,n}
constexpr uint64_t kMaxElements = uint64_t(1) << 24;  // elements after expansion

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view src) : src_(src) {}

  // Parses the whole text; the start rule's id. InvalidArgument for syntax errors and
  // undefined rules.
  uint32_t parse(std::string_view root_name) {
    skip_space(true);
    while (at_ < src_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t r = 0; r < rules_.size(); ++r)
      WICK_CHECK(defined_[r], InvalidArgument, "grammar: ", where(first_use_[r]), ": rule '", names_[r],
                 "' is not defined");
    const auto root = ids_.find(std::string(root_name));
    WICK_CHECK(root != ids_.end() && defined_[root->second], InvalidArgument, "grammar: no rule named '", root_name,
               "' (the start symbol)");
    return root->second;
  }
  std::optional<GbnfProblem> problem(uint32_t root) const;
  std::shared_ptr<Grammar::Impl> flatten(uint32_t root) const;  // the rules laid out flat

 private:
  std::string where(size_t offset) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    return detail::cat("line ", line, " column ", col);
  }
  [[noreturn]] void error(const std::string& what) const {
    fail(ErrorKind::InvalidArgument, "grammar: ", where(at_), ": ", what);
  }
  bool eof() const { return at_ >= src_.size(); }
  char peek() const { return eof() ? '\0' : src_[at_]; }

  void skip_space(bool newlines) {
    while (!eof()) {
      const char c = src_[at_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\r' || c == '\n'))) {
        ++at_;
      } else if (c == '#') {
        while (!eof() && src_[at_] != '\n' && src_[at_] != '\r') ++at_;
      } else {
        return;
      }
    }
  }
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }
  std::string parse_name() {
    const size_t start = at_;
    while (!eof() && name_char(src_[at_])) ++at_;
    if (at_ == start) error(detail::cat("expected a rule name, found '", std::string(1, peek()), "'"));
    return std::string(src_.substr(start, at_ - start));
  }

  uint32_t rule_id(const std::string& name, size_t offset) {
    const auto [it, added] = ids_.try_emplace(name, uint32_t(rules_.size()));
    if (added) {
      names_.push_back(name);
      rules_.emplace_back();
      defined_.push_back(false);
      first_use_.push_back(offset);
    }
    return it->second;
  }
  uint32_t new_rule(const std::string& base, Alternatives alts) {
    const uint32_t id = rule_id(detail::cat(base, "/", rules_.size()), at_);
    define(id, std::move(alts));
    return id;
  }
  void define(uint32_t id, Alternatives alts) {
    for (const Sequence& s : alts) elements_ += s.size() + 1;
    if (elements_ > kMaxElements) error("the grammar expands to more than 16M elements");
    rules_[id] = std::move(alts);
    defined_[id] = true;
  }
  GrammarElement set_element(const ByteSet& s) {
    const auto [it, added] = set_ids_.try_emplace(s.bits, uint32_t(sets_.size()));
    if (added) sets_.push_back(s);
    return {GrammarElement::Bytes, it->second};
  }
  static GrammarElement ref(uint32_t rule) { return {GrammarElement::Ref, rule}; }

  void parse_rule() {
    const size_t start = at_;
    const std::string name = parse_name();
    skip_space(false);
    if (src_.substr(at_, 3) != "::=") error("expected '::=' after the rule name");
    at_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, start);
    if (defined_[id]) {
      at_ = start;
      error(detail::cat("rule '", name, "' is defined twice"));
    }
    Alternatives alts = parse_alternatives(name, false);
    define(id, std::move(alts));
    if (!eof() && peek() != '\n' && peek() != '\r') error(detail::cat("unexpected '", std::string(1, peek()), "'"));
  }

  Alternatives parse_alternatives(const std::string& rule, bool nested) {
    Alternatives alts;
    alts.push_back(parse_sequence(rule, nested));
    while (peek() == '|') {
      ++at_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  Sequence parse_sequence(const std::string& rule, bool nested) {
    Sequence seq;
    size_t item = 0;  // where the last item starts in seq (what a postfix applies to)
    bool has_item = false;
    while (!eof()) {
      const char c = peek();
      if (c == '"') {
        item = seq.size(), has_item = true;
        ++at_;
        std::string bytes;
        while (peek() != '"') {
          if (eof()) error("unterminated string literal");
          unicode::append_utf8(bytes, parse_char());
        }
        ++at_;
        for (const char b : bytes) {
          ByteSet s;
          s.add(uint8_t(b));
          seq.push_back(set_element(s));
        }
      } else if (c == '[') {
        item = seq.size(), has_item = true;
        ++at_;
        const bool negated = peek() == '^';
        if (negated) ++at_;
        std::vector<CodeRange> ranges;
        while (peek() != ']') {
          if (eof()) error("unterminated character class");
          const char32_t lo = parse_char();
          char32_t hi = lo;
          if (peek() == '-' && at_ + 1 < src_.size() && src_[at_ + 1] != ']') {
            ++at_;
            hi = parse_char();
            if (hi < lo) error("a character range whose end precedes its start");
          }
          ranges.push_back({lo, hi});
        }
        ++at_;
        seq.push_back(class_element(rule, negated ? complement(ranges) : ranges));
      } else if (c == '.') {
        item = seq.size(), has_item = true;
        ++at_;
        seq.push_back(class_element(rule, {{0, 0x10FFFF}}));
      } else if (name_char(c)) {
        item = seq.size(), has_item = true;
        const size_t start = at_;
        seq.push_back(ref(rule_id(parse_name(), start)));
      } else if (c == '(') {
        item = seq.size(), has_item = true;
        ++at_;
        skip_space(true);
        Alternatives inner = parse_alternatives(rule, true);
        if (peek() != ')') error("expected ')'");
        ++at_;
        seq.push_back(ref(new_rule(rule, std::move(inner))));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!has_item) error(detail::cat("'", std::string(1, c), "' with nothing before it to repeat"));
        uint64_t lo = 0, hi = UINT64_MAX;  // hi UINT64_MAX: unbounded
        ++at_;
        if (c == '+') lo = 1;
        if (c == '?') hi = 1;
        if (c == '{') parse_braces(lo, hi);
        Sequence x(seq.begin() + long(item), seq.end());
        seq.resize(item);
        repeat(rule, x, lo, hi, seq);
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  void parse_braces(uint64_t& lo, uint64_t& hi) {
    skip_space(true);
    lo = parse_count();
    skip_space(true);
    hi = lo;
    if (peek() == ',') {
      ++at_;
      skip_space(true);
      hi = peek() == '}' ? UINT64_MAX : parse_count();
      skip_space(true);
    }
    if (peek() != '}') error("expected '}'");
    ++at_;
    if (hi != UINT64_MAX && hi < lo) error("a repetition {m,n} with n < m");
  }
  uint64_t parse_count() {
    if (!(peek() >= '0' && peek() <= '9')) error("expected a repetition count");
    uint64_t n = 0;
    while (peek() >= '0' && peek() <= '9') {
      n = n * 10 + uint64_t(src_[at_++] - '0');
      if (n > kMaxRepeat) error(detail::cat("a repetition count over ", kMaxRepeat));
    }
    return n;
  }

  // x{lo,hi} appended to seq: lo copies of x, then x* (unbounded) or a chain of hi - lo
  // nested optional copies (x (x (x)?)?)?, each a rule that ends in a tail call.
  void repeat(const std::string& rule, const Sequence& x, uint64_t lo, uint64_t hi, Sequence& seq) {
    for (uint64_t i = 0; i < lo; ++i) {
      seq.insert(seq.end(), x.begin(), x.end());
      if (seq.size() > kMaxElements) error("the grammar expands to more than 16M elements");
    }
    if (hi == lo) return;
    if (hi == UINT64_MAX) {
      const uint32_t star = rule_id(detail::cat(rule, "/", rules_.size()), at_);
      Sequence again = x;
      again.push_back(ref(star));
      define(star, {again, {}});
      seq.push_back(ref(star));
      return;
    }
    uint32_t tail = 0;
    for (uint64_t i = 0; i < hi - lo; ++i) {
      Sequence once = x;
      if (i) once.push_back(ref(tail));
      tail = new_rule(rule, {once, {}});
    }
    seq.push_back(ref(tail));
  }

  char32_t parse_char() {
    const auto c = uint8_t(src_[at_]);
    if (c != '\\') {
      // A raw character: its UTF-8 bytes as written (one code point).
      size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
      if (n == 0 || at_ + n > src_.size()) error("invalid UTF-8");
      char32_t cp = n == 1 ? c : c & (0x7F >> n);
      for (size_t k = 1; k < n; ++k) {
        const auto b = uint8_t(src_[at_ + k]);
        if ((b & 0xC0) != 0x80) error("invalid UTF-8");
        cp = cp << 6 | (b & 0x3F);
      }
      at_ += n;
      return cp;
    }
    if (at_ + 1 >= src_.size()) error("an escape at the end of the grammar");
    const char e = src_[at_ + 1];
    at_ += 2;
    switch (e) {
      case 'x': return parse_hex(2);
      case 'u': return parse_hex(4);
      case 'U': return parse_hex(8);
      case 't': return '\t';
      case 'r': return '\r';
      case 'n': return '\n';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/': return char32_t(e);
      default: break;
    }
    at_ -= 2;
    error(detail::cat("unknown escape '\\", std::string(1, e), "'"));
  }
  char32_t parse_hex(int digits) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i, ++at_) {
      const char c = peek();
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) error(detail::cat("expected ", digits, " hex digits"));
      v = v << 4 | char32_t(d);
    }
    if (v > 0x10FFFF) error("a code point beyond U+10FFFF");
    return v;
  }

  // A character class: one byte set when it is all ASCII, else a rule whose alternatives
  // are the UTF-8 byte-range sequences of its code points (one rule per distinct class).
  GrammarElement class_element(const std::string& rule, std::vector<CodeRange> ranges) {
    ranges = normalize(std::move(ranges));
    if (ranges.empty()) error("an empty character class matches nothing");
    if (ranges.back().hi < 0x80) {
      ByteSet s;
      for (const CodeRange& r : ranges) s.add_range(uint8_t(r.lo), uint8_t(r.hi));
      return set_element(s);
    }
    std::string key;
    for (const CodeRange& r : ranges) key += detail::cat(uint32_t(r.lo), '-', uint32_t(r.hi), ',');
    if (const auto it = class_rules_.find(key); it != class_rules_.end()) return ref(it->second);
    Alternatives alts;
    ByteSet single;  // every one-byte sequence in one set
    bool any_single = false;
    for (const Utf8Sequence& u : utf8_sequences(ranges)) {
      if (u.size() == 1) {
        single.add_range(u[0].lo, u[0].hi);
        any_single = true;
        continue;
      }
      Sequence s;
      for (const ByteRange& b : u) {
        ByteSet bs;
        bs.add_range(b.lo, b.hi);
        s.push_back(set_element(bs));
      }
      alts.push_back(std::move(s));
    }
    if (any_single) alts.insert(alts.begin(), Sequence{set_element(single)});
    const uint32_t id = new_rule(rule + "/char", std::move(alts));
    class_rules_.emplace(std::move(key), id);
    return ref(id);
  }

  std::string_view src_;
  size_t at_ = 0;
  uint64_t elements_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<Alternatives> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::vector<ByteSet> sets_;
  std::map<std::array<uint64_t, 4>, uint32_t> set_ids_;
  std::unordered_map<std::string, uint32_t> class_rules_;
};

// What the matcher could not run: a rule reachable from the root with no finite sentence
// (recursion with no base case), or a rule that reaches itself before a byte (left
// recursion).
std::optional<GbnfProblem> GbnfParser::problem(uint32_t root) const {
  const size_t n = rules_.size();
  // Nullable and productive rules, by fixpoint.
  std::vector<char> nullable(n, 0), productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r)
      for (const Sequence& s : rules_[r]) {
        bool all_null = true, all_prod = true;
        for (const GrammarElement& e : s) {
          all_null = all_null && e.kind == GrammarElement::Ref && nullable[e.arg];
          all_prod = all_prod && (e.kind != GrammarElement::Ref || productive[e.arg]);
        }
        if (all_null && !nullable[r]) nullable[r] = 1, changed = true;
        if (all_prod && !productive[r]) productive[r] = 1, changed = true;
      }
  }
  std::vector<char> seen(n, 0);
  std::vector<uint32_t> todo{root};
  seen[root] = 1;
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    if (!productive[r]) return GbnfProblem{GbnfProblem::NoSentence, names_[r]};
    for (const Sequence& s : rules_[r])
      for (const GrammarElement& e : s)
        if (e.kind == GrammarElement::Ref && !seen[e.arg]) seen[e.arg] = 1, todo.push_back(e.arg);
  }
  // Left recursion: a cycle among "r may start with rule q" edges (depth-first, iterative).
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& s : rules_[r])
      for (const GrammarElement& e : s) {
        if (e.kind != GrammarElement::Ref) break;
        starts[r].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
  std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t r0 = 0; r0 < n; ++r0) {
    if (color[r0]) continue;
    std::vector<std::pair<uint32_t, size_t>> path{{uint32_t(r0), 0}};
    color[r0] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == starts[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t q = starts[r][i++];
      if (color[q] == 1) return GbnfProblem{GbnfProblem::LeftRecursive, names_[q]};
      if (color[q] == 0) color[q] = 1, path.push_back({q, 0});
    }
  }
  return std::nullopt;
}

std::shared_ptr<Grammar::Impl> GbnfParser::flatten(uint32_t root) const {
  auto g = std::make_shared<Grammar::Impl>();
  g->names = names_;
  g->sets = sets_;
  g->root = root;
  g->alts.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r)
    for (const Sequence& s : rules_[r]) {
      g->alts[r].push_back(uint32_t(g->elems.size()));
      g->elems.insert(g->elems.end(), s.begin(), s.end());
      g->elems.push_back({GrammarElement::End, 0});
    }
  return g;
}

}  // namespace

Grammar Grammar::from_gbnf(std::string_view gbnf, std::string_view root) {
  GbnfParser p(gbnf);
  const uint32_t start = p.parse(root);
  if (const auto bad = p.problem(start)) {
    if (bad->kind == GbnfProblem::NoSentence)
      fail(ErrorKind::InvalidArgument, "grammar: rule '", bad->rule,
           "' has no finite sentence (recursion with no base case)");
    fail(ErrorKind::InvalidArgument, "grammar: rule '", bad->rule,
         "' is left-recursive (it can reach itself before any character)");
  }
  return Grammar(p.flatten(start));
}

std::optional<GbnfProblem> gbnf_problem(std::string_view gbnf) {
  GbnfParser p(gbnf);
  return p.problem(p.parse("root"));
}

}  // namespace wick::text
