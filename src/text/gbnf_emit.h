// What the GBNF writers (json_schema*.cpp, regex_gbnf.cpp) share: literals and character
// classes written the way grammar.h parses them, sets of code points, a rule set that names
// and deduplicates rules. Whether every rule can end and none loops on itself is the grammar
// compiler's check (gbnf_problem, grammar_impl.h), asked of the finished text.
//
// Expressions are GBNF text that can stand in a sequence: an alternation is always inside
// parentheses, so `a + " " + b` is a sequence of a and b.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wick::text::gbnf {

// Repetition counts above this (minLength, maxItems, x{m,n} in a pattern) are not written
// out: the matcher expands a{m,n} into about n rules.
inline constexpr int64_t kMaxRepeat = 10000;

// The end of the GBNF item starting at expr[i] (a name, literal, class, '.' or group), or npos.
size_t item_end(std::string_view expr, size_t i);

// "..." matching exactly `bytes` (UTF-8 text kept raw, control bytes as \xHH).
std::string literal(std::string_view bytes);

// A JSON string's contents for `text`, as JSON writes it: " \ and controls escaped (\n, \t, ...,
// \u00XX), everything else raw.
std::string json_escape(std::string_view text);

// "\"key\":", the start of an object's member.
std::string json_key(std::string_view key);

// expr, in parentheses unless it already is one item (a name, a literal of one character, a
// class, a group), so that a postfix applies to all of it.
std::string atom(const std::string& expr);

// expr repeated min..max times (max < 0: unbounded), with the shortest postfix ("?", "*",
// "+", "{m}", "{m,}", "{m,n}"); "" when max == 0.
std::string repeat(const std::string& expr, int64_t min, int64_t max);

// "( a | b | ... )", or the one alternative alone. An empty string among alts (the empty
// text) makes the whole optional instead: "( a | b )?". alts is not empty.
std::string alternatives(const std::vector<std::string>& alts);

// Code points as sorted, disjoint, non-adjacent closed ranges. Surrogates (U+D800..U+DFFF)
// never appear: no UTF-8 text holds them.
struct Range {
  char32_t lo, hi;
};
using CodeSet = std::vector<Range>;

CodeSet make_set(std::vector<Range> ranges);  // sorts, merges, drops surrogates
CodeSet complement(const CodeSet& set);
bool contains(const CodeSet& set, char32_t cp);

// One code point of the set: a literal or a [class]. The set must not be empty.
std::string char_expr(const CodeSet& set);
// One code point of the set as it appears inside a JSON string: raw where JSON allows it,
// escaped (\" \\ \n \u001f ...) where it must be. The set must not be empty.
std::string json_char_expr(const CodeSet& set);

// Named rules. Names are made from hints ([a-zA-Z0-9-], numbered when taken); `root` is
// reserved for the start rule.
class RuleSet {
 public:
  RuleSet();

  // A fresh name for a rule defined later (a rule that refers to itself).
  std::string reserve(std::string_view hint);
  void define(const std::string& name, std::string body);
  // A name for `body`: the rule that already has this body, else a new one. A name, literal
  // or class is returned as it is, without a rule.
  std::string add(std::string_view hint, std::string body);

  // The grammar text, root first.
  std::string str() const;

 private:
  std::vector<std::string> names_;
  std::vector<std::string> bodies_;  // "" for a reserved rule not defined yet
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<std::string, std::string> by_body_;
  std::unordered_map<std::string, int> taken_;  // hint -> times used
};

// JSON's own rules (json_schema_values.cpp), each added to the rule set when first asked for:
// documents written as json_schema.h describes (compact, one optional space after ':' and ',',
// at most 16 digits before and after the point).
class JsonRules {
 public:
  explicit JsonRules(RuleSet& rules) : rules_(rules) {}

  std::string ws();      // the optional space
  std::string value();   // any JSON value
  std::string object();  // any JSON object
  std::string string();  // any string
  // A string of min..max characters (max < 0: no limit); an escape is one character.
  std::string string_chars(int64_t min, int64_t max);
  // A string other than the ones in `excluded` (a closed set of property names): written
  // without escapes, so that no spelling of an excluded name gets through.
  std::string key_except(const std::vector<std::string_view>& excluded);
  std::string integer();  // any integer of up to 16 digits
  // Numbers; at_least_zero / above_zero bound them below by 0.
  std::string number(bool at_least_zero, bool above_zero);
  std::string boolean();
  // A string in the format (date, time, date-time, uuid, email); nullopt for another.
  std::optional<std::string> format(std::string_view name);

 private:
  std::string raw_key_char();

  RuleSet& rules_;
  std::string value_;
};

// The integers lo..hi (within +-(10^16 - 1)) written as JSON writes them: no leading zeros,
// no "-0". An expression without rules.
inline constexpr int64_t kMaxInteger = 9'999'999'999'999'999;
std::string integer_range(int64_t lo, int64_t hi);

// The regular expression (regex_gbnf.cpp) as an expression over `rules`: its texts raw, or
// written inside a JSON string (json_escaped). InvalidArgument / Unsupported as
// regex_to_gbnf.
std::string regex_expr(std::string_view pattern, RuleSet& rules, bool json_escaped);

}  // namespace wick::text::gbnf
