// The rules for JSON's own values (any value, strings, numbers, the string formats), exact
// integer ranges, and any_json_gbnf.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "text/gbnf_emit.h"
#include "text/unicode.h"
#include "wick/error.h"
#include "wick/text/json_schema.h"

namespace wick::text {
namespace gbnf {
namespace {

// The characters JSON strings hold as they are; the rest (" \ and controls) are escaped.
CodeSet raw_string_chars() { return make_set({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}); }

std::string digit_class(char lo, char hi) {
  if (lo == hi) return literal(std::string(1, lo));
  return std::string("[") + lo + (hi > lo + 1 ? "-" : "") + hi + "]";
}

// The decimal strings from a to b, both of the same length, a <= b: split at the first digit
// where they differ into the part that keeps a's digit, the digits strictly between, and the
// part that keeps b's.
std::string same_length_range(std::string_view a, std::string_view b) {
  size_t common = 0;
  while (common < a.size() && a[common] == b[common]) ++common;
  std::string prefix = common ? literal(a.substr(0, common)) : "";
  if (common == a.size()) return prefix;
  a.remove_prefix(common);
  b.remove_prefix(common);
  const size_t rest = a.size() - 1;
  const bool low_full = a.find_first_not_of('0', 1) == std::string_view::npos;
  const bool high_full = b.find_first_not_of('9', 1) == std::string_view::npos;
  const std::string any_rest = rest ? std::string(" ").append(repeat("[0-9]", rest, rest)) : "";
  std::vector<std::string> alts;
  // A side whose other digits are all at their end of the range is one literal.
  const bool low_top = a.find_first_not_of('9', 1) == std::string_view::npos;
  const bool high_bottom = b.find_first_not_of('0', 1) == std::string_view::npos;
  if (!low_full)
    alts.push_back(low_top ? literal(a)
                           : literal(a.substr(0, 1)) + " " + same_length_range(a.substr(1), std::string(rest, '9')));
  const char from = static_cast<char>(a[0] + (low_full ? 0 : 1)), to = static_cast<char>(b[0] - (high_full ? 0 : 1));
  if (from <= to) alts.push_back(digit_class(from, to) + any_rest);
  if (!high_full)
    alts.push_back(high_bottom
                       ? literal(b)
                       : literal(b.substr(0, 1)) + " " + same_length_range(std::string(rest, '0'), b.substr(1)));
  const std::string body = alternatives(alts);
  return prefix.empty() ? body : prefix + " " + body;
}

std::string natural_range(int64_t lo, int64_t hi) {
  const auto digits = [](int64_t v) { return static_cast<int>(std::to_string(v).size()); };
  std::vector<std::string> alts;
  int64_t power = 1;  // 10^(d-1)
  for (int d = 1; d <= digits(hi); ++d, power *= 10) {
    const int64_t from = std::max(lo, d == 1 ? 0 : power), to = std::min(hi, power * 10 - 1);
    if (from > to) continue;
    if (hi == kMaxInteger && from == power && d > 1) {  // every longer number, as one repetition
      alts.push_back("[1-9] " + repeat("[0-9]", d - 1, 15));
      break;
    }
    alts.push_back(same_length_range(std::to_string(from), std::to_string(to)));
  }
  return alternatives(alts);
}

}  // namespace

std::string integer_range(int64_t lo, int64_t hi) {
  WICK_CHECK(-kMaxInteger <= lo && lo <= hi && hi <= kMaxInteger, Internal, "integer_range: ", lo, "..", hi);
  if (lo >= 0) return natural_range(lo, hi);
  if (hi < 0) return literal("-") + " " + atom(natural_range(-hi, -lo));
  return alternatives({literal("-") + " " + atom(natural_range(1, -lo)), natural_range(0, hi)});
}

std::string JsonRules::ws() { return rules_.add("ws", literal(" ") + "?"); }

std::string JsonRules::value() {
  if (value_.empty()) {
    value_ = rules_.reserve("value");  // first: object and array refer to it
    const std::string sep = literal(",") + " " + ws() + " ";
    const std::string array =
        rules_.add("array", literal("[") + " ( " + value_ + " ( " + sep + value_ + " )* )? " + literal("]"));
    rules_.define(value_, object() + " | " + array + " | " + string() + " | " + number(false, false) + " | " +
                              boolean() + " | " + literal("null"));
  }
  return value_;
}

std::string JsonRules::object() {
  const std::string member = rules_.add("member", string() + " " + literal(":") + " " + ws() + " " + value());
  const std::string sep = literal(",") + " " + ws() + " ";
  return rules_.add("object", literal("{") + " ( " + member + " ( " + sep + member + " )* )? " + literal("}"));
}

std::string JsonRules::string() { return string_chars(0, -1); }

std::string JsonRules::string_chars(int64_t min, int64_t max) {
  // An escape is \" \\ \/ \b \f \n \r \t or \u and four hex digits, not a surrogate's: a
  // pair of them is one character, which the counts below would see as two.
  const std::string ch =
      rules_.add("char", char_expr(raw_string_chars()) + " | " + literal("\\") + " ( [\"\\\\/bfnrt] | " + literal("u") +
                             " ( [0-9a-ce-fA-CE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) )");
  const std::string quote = literal("\"");
  if (max == 0) return literal("\"\"");
  return rules_.add("string", quote + " " + repeat(ch, min, max) + " " + quote);
}

std::string JsonRules::raw_key_char() { return char_expr(raw_string_chars()); }

std::string JsonRules::key_except(const std::vector<std::string_view>& excluded) {
  // A trie of the names; each node's rule is the rest of a key that has its prefix and is
  // not a name: nothing (unless the prefix is one), a character no name continues with and
  // then anything, or a continuation and the child's rule.
  struct Node {
    std::map<char32_t, size_t> kids;
    bool name = false;
  };
  std::vector<Node> trie(1);
  const CodeSet raw = raw_string_chars();
  for (std::string_view name : excluded) {
    std::vector<char32_t> cps;
    for (size_t i = 0; i < name.size();) {
      const unicode::Decoded d = unicode::decode_utf8(name, i);
      cps.push_back(d.cp);
      i += d.length;
    }
    // A name with a character that must be escaped cannot be written here anyway.
    if (std::any_of(cps.begin(), cps.end(), [&](char32_t c) { return !contains(raw, c); })) continue;
    size_t node = 0;
    for (char32_t c : cps) {
      auto [it, fresh] = trie[node].kids.emplace(c, trie.size());
      if (fresh) trie.emplace_back();
      node = it->second;
    }
    trie[node].name = true;
  }
  const std::string any_rest = repeat(raw_key_char(), 0, -1);
  std::vector<std::string> names(trie.size());
  for (size_t n = trie.size(); n-- > 0;) {  // children come after their parents
    std::vector<std::string> alts;
    if (!trie[n].name) alts.push_back("");
    std::vector<Range> taken, first;
    for (const auto& [c, kid] : trie[n].kids) taken.push_back({c, c});
    const CodeSet not_taken = complement(make_set(std::move(taken)));
    for (const Range& r : raw)
      for (const Range& q : not_taken)
        if (std::max(r.lo, q.lo) <= std::min(r.hi, q.hi)) first.push_back({std::max(r.lo, q.lo), std::min(r.hi, q.hi)});
    alts.push_back(char_expr(make_set(std::move(first))) + " " + any_rest);
    for (const auto& [c, kid] : trie[n].kids) {
      std::string utf8;
      unicode::append_utf8(utf8, c);
      alts.push_back(literal(utf8) + " " + names[kid]);
    }
    names[n] = rules_.add("key", alternatives(alts));
  }
  return rules_.add("key", literal("\"") + " " + names[0] + " " + literal("\""));
}

std::string JsonRules::integer() {
  return rules_.add("integer", literal("-") + "? " + rules_.add("natural", "\"0\" | [1-9] [0-9]{0,15}"));
}

std::string JsonRules::number(bool at_least_zero, bool above_zero) {
  const std::string natural = rules_.add("natural", "\"0\" | [1-9] [0-9]{0,15}");
  const std::string fraction = rules_.add("fraction", literal(".") + " [0-9]{1,16}");
  if (above_zero) {
    // Some digit is not 0; a negative exponent stops at -307 so that the value does not
    // round to 0 as a double (it stays above 10^-16 * 10^-307).
    return rules_.add("positive", "( [1-9] [0-9]{0,15} " + fraction + "? | " + literal("0.") +
                                      " \"0\"{0,15} [1-9] [0-9]{0,15} ) ( [eE] ( \"+\"? [0-9]{1,16} | \"-\" ( "
                                      "[0-9]{1,2} | [0-2] [0-9]{2} | \"30\" [0-7] ) ) )?");
  }
  const std::string exponent = rules_.add("exponent", "[eE] [-+]? [0-9]{1,16}");
  const std::string whole = at_least_zero ? natural : integer();
  return rules_.add(at_least_zero ? "non-negative" : "number", whole + " " + fraction + "? " + exponent + "?");
}

std::string JsonRules::boolean() { return rules_.add("boolean", "\"true\" | \"false\""); }

std::optional<std::string> JsonRules::format(std::string_view name) {
  // Dates as Python's date.fromisoformat takes them: years 0001-9999, the days each month
  // has, 29 February in leap years only.
  const std::string two = "( \"0\" [48] | [2468] [048] | [13579] [26] )";  // 04..96 by 4
  const auto date = [&] {
    const std::string year =
        rules_.add("year", "[0-9]{3} [1-9] | [0-9]{2} [1-9] \"0\" | [0-9] [1-9] \"00\" | [1-9] \"000\"");
    const std::string leap = rules_.add("leap-year", "[0-9]{2} " + two + " | " + two + " \"00\"");
    return rules_.add("date",
                      year +
                          " \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )"
                          " | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" )"
                          " | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) ) | " +
                          leap + " \"-02-29\"");
  };
  const auto time = [&] {
    const std::string hour = "( [01] [0-9] | \"2\" [0-3] )";
    return rules_.add("time", hour + " \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} )? ( \"Z\" | [+\\-] " +
                                  hour + " \":\" [0-5] [0-9] )");
  };
  std::string body;
  if (name == "date")
    body = date();
  else if (name == "time")
    body = time();
  else if (name == "date-time")
    body = rules_.add("date-time", date() + " \"T\" " + time());
  else if (name == "uuid")
    body = rules_.add("uuid",
                      "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                      "[0-9a-fA-F]{12}");
  else if (name == "email")
    body = rules_.add("email",
                      "[a-zA-Z0-9._%+\\-]{1,64} \"@\" ( [a-zA-Z0-9] [a-zA-Z0-9\\-]{0,62} \".\" )+ [a-zA-Z]{2,24}");
  else
    return std::nullopt;
  return rules_.add(std::string(name) + "-string", literal("\"") + " " + body + " " + literal("\""));
}

}  // namespace gbnf

std::string any_json_gbnf(bool object_only) {
  gbnf::RuleSet rules;
  gbnf::JsonRules json(rules);
  rules.define("root", object_only ? json.object() : json.value());
  return rules.str();
}

}  // namespace wick::text
