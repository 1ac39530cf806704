// JSON Schema and regular expressions compiled to GBNF, run by the grammar engine: the
// documents of data/grammar/schema_cases.json against the labels jsonschema gave them
// (gen_schema_cases.py), integer ranges against every integer around them, patterns against
// std::regex, then the errors and hostile inputs.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>

#include "support/sanitized.h"
#include "support/thrown.h"
#include "text/gbnf_emit.h"
#include "wick/error.h"
#include "wick/text/grammar.h"
#include "wick/text/json_schema.h"

namespace wick {
namespace {

using text::any_json_gbnf;
using text::Grammar;
using text::json_schema_to_gbnf;
using text::JsonSchemaOptions;
using text::regex_to_gbnf;
using Json = nlohmann::ordered_json;  // keeps the schemas' property order

Grammar schema_grammar(const std::string& schema, JsonSchemaOptions options = {}) {
  return Grammar::from_gbnf(json_schema_to_gbnf(schema, options));
}

JsonSchemaOptions strict() {
  JsonSchemaOptions o;
  o.strict = true;
  return o;
}

TEST(JsonSchema, CasesAgainstJsonschema) {
  std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/grammar/schema_cases.json");
  ASSERT_TRUE(in.good());
  const Json cases = Json::parse(in);
  ASSERT_GE(cases.size(), 60u);
  size_t valid = 0, invalid = 0, skipped = 0, refused_in_strict = 0;
  for (const Json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    JsonSchemaOptions options;
    options.strict = c["strict"];
    options.closed_objects = c["closed_objects"];
    const std::string gbnf = json_schema_to_gbnf(c["schema"].dump(), options);
    const Grammar g = Grammar::from_gbnf(gbnf);
    // Strict mode either refuses the schema or writes the same grammar.
    JsonSchemaOptions strict_options = options;
    strict_options.strict = true;
    try {
      EXPECT_EQ(json_schema_to_gbnf(c["schema"].dump(), strict_options), gbnf);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
      ++refused_in_strict;
    }
    for (const Json& d : c["docs"]) {
      const std::string text = d["text"];
      if (!d["valid"]) {
        // Soundness: no document the schema forbids.
        EXPECT_FALSE(g.accepts(text)) << text << "\n" << gbnf;
        ++invalid;
      } else if (d.contains("skip")) {
        ++skipped;  // valid, but a spelling the grammar does not write (the reason says why)
      } else {
        EXPECT_TRUE(g.accepts(text)) << text << "\n" << gbnf;
        ++valid;
      }
    }
  }
  EXPECT_GE(valid, 300u);
  EXPECT_GE(invalid, 220u);
  std::cout << "[ schemas  ] " << cases.size() << " schemas: " << valid << " valid and " << invalid
            << " invalid documents checked, " << skipped << " valid ones outside the grammar's spellings; "
            << refused_in_strict << " schemas refused in strict mode\n";
}

// Every integer in [lo - 50, hi + 50] (and far outside) against the bounds.
void check_range(const std::string& bounds, int64_t lo, int64_t hi) {
  SCOPED_TRACE(bounds);
  const Grammar g = schema_grammar("{\"type\":\"integer\"," + bounds + "}");
  for (int64_t v = lo - 50; v <= hi + 50; ++v) EXPECT_EQ(g.accepts(std::to_string(v)), v >= lo && v <= hi) << v;
  EXPECT_FALSE(g.accepts("-0" + std::to_string(std::abs(lo))));  // leading zeros
  EXPECT_FALSE(g.accepts("0" + std::to_string(std::abs(hi))));
  EXPECT_FALSE(g.accepts(std::to_string(hi) + ".0"));
}

TEST(JsonSchema, IntegerRangesExhaustive) {
  check_range("\"minimum\":0,\"maximum\":0", 0, 0);
  check_range("\"minimum\":1,\"maximum\":12", 1, 12);
  check_range("\"minimum\":-5,\"maximum\":300", -5, 300);
  check_range("\"minimum\":-300,\"maximum\":-5", -300, -5);
  check_range("\"minimum\":-1234,\"maximum\":987", -1234, 987);
  check_range("\"minimum\":7,\"maximum\":7", 7, 7);
  check_range("\"minimum\":-7,\"maximum\":-7", -7, -7);
  check_range("\"minimum\":10,\"maximum\":99", 10, 99);
  check_range("\"minimum\":9,\"maximum\":10", 9, 10);
  check_range("\"minimum\":99,\"maximum\":1001", 99, 1001);
  check_range("\"minimum\":123,\"maximum\":4567", 123, 4567);
  check_range("\"minimum\":1000,\"maximum\":1999", 1000, 1999);
  check_range("\"minimum\":10200,\"maximum\":10299", 10200, 10299);
  check_range("\"minimum\":0,\"maximum\":1,\"exclusiveMaximum\":1", 0, 0);
  check_range("\"exclusiveMinimum\":-3,\"exclusiveMaximum\":3", -2, 2);
  check_range("\"minimum\":-2.5,\"maximum\":2.5", -2, 2);
  check_range("\"minimum\":1e2,\"maximum\":150.0", 100, 150);
  check_range("\"minimum\":999999999999990,\"maximum\":1000000000000010", 999999999999990, 1000000000000010);

  // Every range within [-25, 25].
  for (int lo = -25; lo <= 25; ++lo)
    for (int hi = lo; hi <= 25; hi += 3) {
      const Grammar g = Grammar::from_gbnf("root ::= " + text::gbnf::integer_range(lo, hi) + "\n");
      for (int v = -40; v <= 40; ++v) ASSERT_EQ(g.accepts(std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi;
    }
  // Random ranges over several digit counts.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 150; ++i) {
    const int64_t scale = int64_t{1} << (rng() % 24);
    int64_t a = static_cast<int64_t>(rng() % (2 * scale)) - scale,
            b = static_cast<int64_t>(rng() % (2 * scale)) - scale;
    if (a > b) std::swap(a, b);
    const Grammar g = Grammar::from_gbnf("root ::= " + text::gbnf::integer_range(a, b) + "\n");
    for (int k = 0; k < 300; ++k) {
      const int64_t v = (k % 2 ? a : b) + static_cast<int64_t>(rng() % 41) - 20 +
                        (k % 3 ? 0 : static_cast<int64_t>(rng() % (b - a + 1)));
      ASSERT_EQ(g.accepts(std::to_string(v)), v >= a && v <= b) << a << ".." << b << " " << v;
    }
  }
}

TEST(JsonSchema, IntegerOneSidedBounds) {
  {
    const Grammar g = schema_grammar(R"({"type":"integer","minimum":17})");
    for (int64_t v = -100; v <= 3000; ++v) ASSERT_EQ(g.accepts(std::to_string(v)), v >= 17) << v;
    EXPECT_TRUE(g.accepts("9999999999999999"));
    EXPECT_TRUE(g.accepts("1000000000000000"));
    EXPECT_FALSE(g.accepts("10000000000000000"));  // 17 digits: past what the grammar writes
  }
  {
    const Grammar g = schema_grammar(R"({"type":"integer","exclusiveMaximum":-17})");
    for (int64_t v = -3000; v <= 100; ++v) ASSERT_EQ(g.accepts(std::to_string(v)), v < -17) << v;
    EXPECT_TRUE(g.accepts("-9999999999999999"));
    EXPECT_FALSE(g.accepts("-10000000000000000"));
  }
  {
    const Grammar g = schema_grammar(R"({"type":"integer","minimum":0})");
    EXPECT_TRUE(g.accepts("0"));
    EXPECT_FALSE(g.accepts("-1"));
    EXPECT_FALSE(g.accepts("-0"));
    EXPECT_TRUE(g.accepts("123456"));
  }
  // No integer fits: nothing to write.
  EXPECT_EQ(test::thrown_kind([] { json_schema_to_gbnf(R"({"type":"integer","minimum":3,"maximum":2})"); }),
            ErrorKind::InvalidArgument);
  EXPECT_EQ(test::thrown_kind([] { json_schema_to_gbnf(R"({"type":"integer","minimum":1e20})"); }),
            ErrorKind::InvalidArgument);
}

TEST(JsonSchema, RegexAgainstStdRegex) {
  const std::vector<std::string> patterns = {"abc",
                                             "a|b|c",
                                             "a*",
                                             "a+b?",
                                             "(ab)*c",
                                             "[a-c]{2,3}",
                                             "[^a-c]+",
                                             "\\d{3}-\\d{2}",
                                             "\\w+@\\w+\\.com",
                                             "\\s*x\\s*",
                                             "\\D\\W\\S",
                                             "a.c",
                                             "(?:ab|cd){2}",
                                             "(\\d{4})-(\\d{2})",
                                             "x{2,}",
                                             "x{0,2}y",
                                             "[\\d.-]+",
                                             "[-a]+",
                                             "[a-]+",
                                             "[\\]\\[]",
                                             "\\.\\*\\+\\?",
                                             "\\x41\\u0042C?",
                                             "a*?b",
                                             "a+?",
                                             "a{2}?",
                                             "^$",
                                             "^(a|)$",
                                             "(|a)b",
                                             "\\/",
                                             "[\\w-]+",
                                             "\\t\\n",
                                             "(a|b)*abb",
                                             "((a))+",
                                             "a{0}b",
                                             "[a-zA-Z_][a-zA-Z0-9_]*",
                                             "colou?r",
                                             "\\$\\^",
                                             "^abc$|^x$",
                                             "[^\\d\\s]*",
                                             "(a|ab)(c|bcd)"};
  const std::vector<std::string> texts = {
      "",      "a",      "b",      "c",       "ab",      "abc",          "abcabc",       "aa",   "aaa", "aab",
      "ac",    "abb",    "aabb",   "abababb", "x",       "xx",           "xxx",          "xy",   "xxy", "xxxy",
      "y",     "123",    "123-45", "12-345",  "2024-01", "ann@mail.com", "ann@mail.org", " x ",  "  x", "\t x\n",
      "a c",   "a\nc",   "a.c",    "abcd",    "cdab",    "abab",         "xyz",          "-",    "a-",  "-a-",
      "]",     "[",      "][",     ".*+?",    "AB",      "ABC",          "\t\n",         "ab_9", "9ab", "_x",
      "color", "colour", "$^",     "/",       "1.5-2",   "abcbcd",       "acd",          "A1 ",  "!?"};
  size_t checks = 0;
  for (const std::string& p : patterns) {
    SCOPED_TRACE(p);
    const std::regex re(p, std::regex::ECMAScript);
    const std::string gbnf = regex_to_gbnf(p);
    const Grammar g = Grammar::from_gbnf(gbnf);
    for (const std::string& t : texts) {
      EXPECT_EQ(g.accepts(t), std::regex_match(t, re)) << "'" << t << "'\n" << gbnf;
      ++checks;
    }
  }
  EXPECT_GE(checks, 2000u);
  // Beyond ASCII (std::regex works on bytes): characters are code points.
  const Grammar dot = Grammar::from_gbnf(regex_to_gbnf("^.{2}$"));
  EXPECT_TRUE(dot.accepts("é😀"));
  EXPECT_FALSE(dot.accepts("é"));
  EXPECT_FALSE(dot.accepts("a\n"));
  const Grammar range = Grammar::from_gbnf(regex_to_gbnf("[α-ω]+\\u{1F600}\\uD83D\\uDE01"));
  EXPECT_TRUE(range.accepts("λμ😀😁"));
  EXPECT_FALSE(range.accepts("λA😀😁"));
  const Grammar negated = Grammar::from_gbnf(regex_to_gbnf("[^a]"));
  EXPECT_TRUE(negated.accepts("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_TRUE(negated.accepts("\n"));
  EXPECT_FALSE(negated.accepts("a"));
  const Grammar space = Grammar::from_gbnf(regex_to_gbnf("\\s"));
  EXPECT_TRUE(space.accepts("\xE3\x80\x80"));  // U+3000
  EXPECT_TRUE(space.accepts("\xEF\xBB\xBF"));  // U+FEFF
}

TEST(JsonSchema, PatternInsideStrings) {
  // The pattern's characters as JSON writes them inside the string.
  const Grammar g = schema_grammar(R"({"type":"string","pattern":"^[\"\\\\\\n\u0001a]{1,3}$"})");
  EXPECT_TRUE(g.accepts(R"("a\"\\")"));
  EXPECT_TRUE(g.accepts(R"("\n")"));
  EXPECT_TRUE(g.accepts(R"("\u000a")"));
  EXPECT_TRUE(g.accepts(R"("\u0001a")"));
  EXPECT_FALSE(g.accepts("\"\n\""));  // a raw control character
  EXPECT_FALSE(g.accepts(R"(""")"));  // an unescaped quote
  EXPECT_FALSE(g.accepts(R"("\u0002")"));
  EXPECT_FALSE(g.accepts(R"("aaaa")"));
  const Grammar dot = schema_grammar(R"({"type":"string","pattern":"^.$"})");
  EXPECT_TRUE(dot.accepts(R"("\t")"));
  EXPECT_TRUE(dot.accepts(R"("\"")"));
  EXPECT_TRUE(dot.accepts(R"("\/")"));
  EXPECT_FALSE(dot.accepts(R"("\n")"));
  EXPECT_FALSE(dot.accepts(R"("\u000D")"));
}

TEST(JsonSchema, AnyJson) {
  const Grammar any = Grammar::from_gbnf(any_json_gbnf(false));
  const Grammar object = Grammar::from_gbnf(any_json_gbnf(true));
  for (const char* doc :
       {R"({})", R"({"a": [1, -2.5e+3, "x\n\u00e9", true, false, null], "b":{"c":{}}})", R"({"":""})"}) {
    EXPECT_TRUE(any.accepts(doc)) << doc;
    EXPECT_TRUE(object.accepts(doc)) << doc;
  }
  for (const char* doc : {"[]", "[[], {}]", "0", "-0.5", "\"s\"", "true", "null"}) {
    EXPECT_TRUE(any.accepts(doc)) << doc;
    EXPECT_FALSE(object.accepts(doc)) << doc;
  }
  for (const char* doc : {"", "{", "[1,]", "{\"a\" : 1}", "{ }", "01", "1.", "\"\t\"", "\"\\x\"", "nul", "{\"a\":1,,}",
                          "[1,  2]", "\"\\ud800\""}) {
    EXPECT_FALSE(any.accepts(doc)) << doc;
    EXPECT_FALSE(object.accepts(doc)) << doc;
  }
}

TEST(JsonSchema, Errors) {
  auto kind = [](const std::string& schema, JsonSchemaOptions o = {}) {
    return test::thrown_kind([&] { json_schema_to_gbnf(schema, o); });
  };
  EXPECT_EQ(kind("{\"type\":"), ErrorKind::InvalidArgument);  // not JSON
  EXPECT_EQ(kind("false"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind("3"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind(R"({"type":"float"})"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind(R"({"type":"string","minLength":-1})"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind(R"({"type":"object","properties":[]})"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],
                    "additionalProperties":false,"allOf":[{"properties":{"a":false}}]})"),
            ErrorKind::InvalidArgument);  // the required property can have no value
  EXPECT_EQ(kind(R"({"type":"string","pattern":"(a"})"), ErrorKind::InvalidArgument);
  // $ref that does not resolve: named in the message.
  try {
    json_schema_to_gbnf(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("#/$defs/missing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kind(R"({"$ref":"other.json#/a"})"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind(R"({"$ref":"#anchor"})"), ErrorKind::InvalidArgument);
  // Recursion with no base case.
  for (
      const char* schema :
      {R"({"$ref":"#"})", R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})",
       R"({"$defs":{"l":{"type":"array","items":{"$ref":"#/$defs/l"},"minItems":1}},"$ref":"#/$defs/l"})",
       R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})",
       R"({"properties":{"a":{"$ref":"#/$defs/l"}},"$defs":{"l":{"type":"array","items":{"$ref":"#/$defs/l"},"minItems":1}}})",
       R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"}) {
    try {
      json_schema_to_gbnf(schema);
      ADD_FAILURE() << "no error: " << schema;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << schema;
      EXPECT_NE(std::string(e.what()).find("no base case"), std::string::npos) << e.what();
    }
  }
  // Keywords a grammar cannot enforce: Unsupported in strict mode, ignored otherwise.
  for (const char* schema : {
           R"({"type":"object","minProperties":1})",
           R"({"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}})",
           R"({"type":"integer","multipleOf":3})",
           R"({"type":"number","maximum":5})",
           R"({"type":"number","minimum":2})",
           R"({"type":"string","format":"hostname"})",
           R"({"type":"string","pattern":"^a","minLength":2})",
           R"({"type":"string","pattern":"(?=a)a"})",
           R"({"type":"string","pattern":"(a)\\1"})",
           R"({"not":{"type":"string"}})",
           R"({"type":"object","patternProperties":{"^x":{}}})",
           R"({"if":{"type":"string"},"then":{"minLength":1}})",
           R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
           R"({"oneOf":[{"const":1},{"enum":[2,1]}]})",
           R"({"oneOf":[{"properties":{"a":{}}},{"type":"string"}]})",
           R"({"enum":["a","b"],"pattern":"^a$"})",
           R"({"type":"array","minItems":1000000000})",
           R"({"type":"string","maxLength":1000000000000})",
       }) {
    EXPECT_EQ(kind(schema, strict()), ErrorKind::Unsupported) << schema;
    EXPECT_EQ(kind(schema), std::nullopt) << schema;
  }
  // The message names the keyword's place in the schema.
  try {
    json_schema_to_gbnf(R"({"type":"object","properties":{"x":{"type":"number","maximum":5}}})", strict());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/properties/x/maximum"), std::string::npos) << e.what();
  }
  // allOf that cannot be one schema: Unsupported either way.
  const char* unmergeable = R"({"allOf":[{"type":"string","pattern":"^a"},{"pattern":"b$"}]})";
  EXPECT_EQ(kind(unmergeable), ErrorKind::Unsupported);
  EXPECT_EQ(kind(unmergeable, strict()), ErrorKind::Unsupported);
  // Strict mode takes what it can enforce.
  EXPECT_EQ(kind(R"({"type":"object","properties":{"a":{"type":"string","format":"date","description":"d"}},
                    "required":["a"],"additionalProperties":false,"title":"t","$schema":"x"})",
                 strict()),
            std::nullopt);
}

TEST(JsonSchema, RegexErrors) {
  auto kind = [](const std::string& p) { return test::thrown_kind([&] { regex_to_gbnf(p); }); };
  for (const char* p : {"(a", "a)", "[a", "*a", "a**", "a{2,1}", "\\", "[z-a]", "(?x)", "\\q", "\\xZ1"})
    EXPECT_EQ(kind(p), ErrorKind::InvalidArgument) << p;
  for (const char* p : {"(a)\\1", "(?=a)", "(?!a)", "(?<=a)b", "(?<!a)b", "a^b", "a$b", "(^a)", "\\bx", "\\p{L}",
                        "a{100000}", "((a{1000}){1000}){1000}", "[^\\s\\S]"})
    EXPECT_EQ(kind(p), ErrorKind::Unsupported) << p;
  EXPECT_EQ(kind("(?<name>a)\\k"), ErrorKind::Unsupported);
  EXPECT_EQ(kind("(?<name>ab)+"), std::nullopt);
  EXPECT_EQ(kind(std::string(10000, '(') + std::string(10000, ')')), ErrorKind::InvalidArgument);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(JsonSchema, HostileInputs) {
  // A 10 MB enum.
  std::string big = "{\"enum\":[";
  for (int i = 0; i < 300000; ++i) big += (i ? ",\"" : "\"") + std::to_string(i) + "-value-padding-padding\"";
  big += "]}";
  ASSERT_GE(big.size(), 9'000'000u);
  auto t0 = std::chrono::steady_clock::now();
  std::string gbnf = json_schema_to_gbnf(big);
  EXPECT_LT(seconds_since(t0), 2.0 * wick::test::kSanitizerSlowdown);
  const Grammar enum_grammar = Grammar::from_gbnf(gbnf);
  EXPECT_TRUE(enum_grammar.accepts("\"299999-value-padding-padding\""));
  EXPECT_FALSE(enum_grammar.accepts("\"300000-value-padding-padding\""));

  // 20,000 properties, half of them required, with descriptions: 10 MB.
  std::string props;
  std::string required;
  for (int i = 0; i < 20000; ++i) {
    props += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":{\"type\":\"integer\",\"description\":\"" +
             std::string(480, 'd') + "\"}";
    if (i % 2) required += (required.empty() ? "\"p" : ",\"p") + std::to_string(i) + "\"";
  }
  big = "{\"type\":\"object\",\"properties\":{" + props + "},\"required\":[" + required + "]}";
  ASSERT_GE(big.size(), 9'000'000u);
  t0 = std::chrono::steady_clock::now();
  gbnf = json_schema_to_gbnf(big);
  EXPECT_LT(seconds_since(t0), 2.0 * wick::test::kSanitizerSlowdown);
  JsonSchemaOptions open;
  open.closed_objects = false;
  t0 = std::chrono::steady_clock::now();
  gbnf = json_schema_to_gbnf(big, open);
  EXPECT_LT(seconds_since(t0), 2.0 * wick::test::kSanitizerSlowdown);

  // 10,000 levels of nesting: an error, not a crash.
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "{\"type\":\"array\",\"items\":";
  deep += "{}" + std::string(10000, '}');
  EXPECT_EQ(test::thrown_kind([&] { json_schema_to_gbnf(deep); }), ErrorKind::InvalidArgument);
  EXPECT_EQ(test::thrown_kind(
                [&] { json_schema_to_gbnf("{\"const\":" + std::string(10000, '[') + std::string(10000, ']') + "}"); }),
            ErrorKind::InvalidArgument);
  deep.clear();
  for (int i = 0; i < 200; ++i) deep += "{\"type\":\"object\",\"properties\":{\"a\":";
  deep += "{}" + std::string(400, '}');
  EXPECT_EQ(test::thrown_kind([&] { json_schema_to_gbnf(deep); }), ErrorKind::InvalidArgument);

  // References and merges that would multiply: bounded.
  std::string defs = "{\"$defs\":{";
  for (int i = 0; i < 60; ++i)
    defs += "\"d" + std::to_string(i) + "\":{\"anyOf\":[{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) +
            "\"},{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"}],\"minLength\":1},";
  defs += "\"d60\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/d0\"}";
  t0 = std::chrono::steady_clock::now();
  (void)test::thrown_kind([&] { json_schema_to_gbnf(defs); });
  EXPECT_LT(seconds_since(t0), 2.0 * wick::test::kSanitizerSlowdown);
  // Many references to one definition: compiled once.
  std::string refs =
      "{\"$defs\":{\"x\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}},"
      "\"type\":\"array\",\"prefixItems\":[";
  for (int i = 0; i < 20000; ++i) refs += (i ? "," : "") + std::string("{\"$ref\":\"#/$defs/x\"}");
  refs += "]}";
  t0 = std::chrono::steady_clock::now();
  const Grammar tuple = schema_grammar(refs);
  EXPECT_LT(seconds_since(t0), 2.0 * wick::test::kSanitizerSlowdown);
  EXPECT_TRUE(tuple.accepts("[{},{\"a\":\"b\"}]"));
}

TEST(JsonSchema, GrammarShape) {
  // Compact documents with one optional space; property rules named after the path.
  const std::string gbnf = json_schema_to_gbnf(
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]})");
  EXPECT_EQ(gbnf.rfind("root ::= ", 0), 0u) << gbnf;
  EXPECT_NE(gbnf.find("ws ::= \" \"?"), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("root-age ::= "), std::string::npos) << gbnf;
  const Grammar g = Grammar::from_gbnf(gbnf);
  EXPECT_TRUE(g.accepts(R"({"name": "a", "age": 3})"));
  EXPECT_FALSE(g.accepts(R"({"name":"a","age":-3})"));
  EXPECT_FALSE(g.accepts(R"({"name":"a" ,"age":3})"));
}

}  // namespace
}  // namespace wick
