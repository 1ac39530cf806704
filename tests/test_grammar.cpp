// The grammar engine (wick/text/grammar.h): GBNF parsing, sentences accepted and refused
// (hand-derived cases), token masks against a token-by-token reference, random walks of
// the mask ending in documents an independent parser (nlohmann::json) accepts.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/sanitized.h"
#include "support/thrown.h"
#include "wick/error.h"
#include "wick/text/grammar.h"
#include "wick/text/json_schema.h"
#include "wick/text/tokenizer.h"

using wick::ErrorKind;
using wick::text::FreePrefix;
using wick::text::Grammar;
using wick::text::GrammarMatcher;
using wick::text::TokenTable;

namespace {

// JSON in GBNF (the shape of llama.cpp's grammars/json.gbnf, written here): any value,
// whitespace bounded so that a random walk ends.
constexpr const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,2})? ws  # exponents a double holds

ws ::= | " " | "\n" [ \t]{0,20}
)";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const wick::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Grammar, LiteralsAlternativesAndGroups) {
  const Grammar g = Grammar::from_gbnf(R"(root ::= "ab" ("c" | "de")? x
x ::= "!" | )");
  for (const char* s : {"ab", "abc", "abde", "ab!", "abc!", "abde!"}) EXPECT_TRUE(g.accepts(s)) << s;
  for (const char* s : {"", "a", "abd", "abcde", "ab!!", "abc!x"}) EXPECT_FALSE(g.accepts(s)) << s;
  EXPECT_TRUE(g.accepts_prefix("abd"));
  EXPECT_FALSE(g.accepts_prefix("abx"));
}

TEST(Grammar, RepetitionCountsAreExact) {
  const Grammar g = Grammar::from_gbnf(R"(root ::= [a-c]{2,4} "-" "x"{3} "y"{1,} "z"*)");
  auto with = [](int a, int x, int y, int z) {
    return std::string(size_t(a), 'b') + "-" + std::string(size_t(x), 'x') + std::string(size_t(y), 'y') +
           std::string(size_t(z), 'z');
  };
  for (int a = 0; a <= 6; ++a)
    for (int x = 2; x <= 4; ++x)
      for (int y = 0; y <= 2; ++y)
        for (int z = 0; z <= 2; ++z)
          EXPECT_EQ(g.accepts(with(a, x, y, z)), a >= 2 && a <= 4 && x == 3 && y >= 1) << with(a, x, y, z);
}

TEST(Grammar, CharacterClassesMatchWholeUtf8Characters) {
  const Grammar g = Grammar::from_gbnf(R"(root ::= [^"a-z]+)");
  EXPECT_TRUE(g.accepts("\xc3\xa9"));          // é (2 bytes)
  EXPECT_TRUE(g.accepts("\xe2\x82\xac!"));     // € (3 bytes)
  EXPECT_TRUE(g.accepts("\xf0\x9f\x98\x80"));  // an emoji (4 bytes)
  EXPECT_TRUE(g.accepts("\x7f\x01"));
  EXPECT_FALSE(g.accepts("q"));
  EXPECT_FALSE(g.accepts("\""));
  EXPECT_FALSE(g.accepts("\xc3"));          // a character cut short
  EXPECT_TRUE(g.accepts_prefix("\xc3"));    // ... which can still be finished
  EXPECT_FALSE(g.accepts_prefix("\x80"));   // a continuation byte alone never starts one
  EXPECT_FALSE(g.accepts("\xed\xa0\x80"));  // an encoded surrogate is not UTF-8
  EXPECT_FALSE(g.accepts("\xc0\xaf"));      // an overlong '/'
  const Grammar range = Grammar::from_gbnf(R"(root ::= [\u00e0-\u00ff\U0001F600] "." )");
  EXPECT_TRUE(range.accepts("\xc3\xa0."));
  EXPECT_TRUE(range.accepts("\xc3\xbf."));
  EXPECT_FALSE(range.accepts("\xc3\x9f."));
  EXPECT_TRUE(range.accepts("\xf0\x9f\x98\x80."));
  EXPECT_FALSE(range.accepts("\xf0\x9f\x98\x81."));
  const Grammar any = Grammar::from_gbnf(R"(root ::= "<" . ">")");
  EXPECT_TRUE(any.accepts("<\xe2\x82\xac>"));
  EXPECT_FALSE(any.accepts("<>"));
}

TEST(Grammar, EscapesCommentsAndLineBreaks) {
  const Grammar g = Grammar::from_gbnf(
      "# a comment\n"
      "root ::= \"\\x41\\u00e9\\t\\n\\\"\" (  # a group over lines\n"
      "   \"x\" |\n"
      "   \"y\"\n"
      ") tail\n"
      "tail ::= [\\]\\-]\n");
  EXPECT_TRUE(g.accepts("A\xc3\xa9\t\n\"x]"));
  EXPECT_TRUE(g.accepts("A\xc3\xa9\t\n\"y-"));
  EXPECT_FALSE(g.accepts("A\xc3\xa9\t\n\"z]"));
}

TEST(Grammar, RecursionIsNestedNotLeft) {
  const Grammar g = Grammar::from_gbnf(R"g(root ::= "(" root ")" | "x")g");
  EXPECT_TRUE(g.accepts("x"));
  EXPECT_TRUE(g.accepts("(((x)))"));
  EXPECT_FALSE(g.accepts("((x)"));
  const Grammar json = Grammar::from_gbnf(kJson);
  for (const char* s : {R"({"a": [1, 2.5e3, {"b": null}], "c": "\u00e9\n"})", "{}", R"({"x":[[[[]]]]})"})
    EXPECT_TRUE(json.accepts(s)) << s;
  for (const char* s : {R"({"a" 1})", "[]", R"({"a": 01})", R"({"a": "\q"})", "{,}"})
    EXPECT_FALSE(json.accepts(s)) << s;
}

TEST(Grammar, BadGrammarsAreErrorsNamingTheProblem) {
  EXPECT_EQ(wick::test::thrown_kind([] { Grammar::from_gbnf("root ::= x"); }), ErrorKind::InvalidArgument);
  EXPECT_NE(message_of([] { Grammar::from_gbnf("root ::= \"a\"\nfoo ::= bar"); }).find("line 2"), std::string::npos);
  EXPECT_NE(message_of([] { Grammar::from_gbnf("root ::= \"a\"\nfoo ::= bar"); }).find("'bar' is not defined"),
            std::string::npos);
  EXPECT_NE(message_of([] { Grammar::from_gbnf("root ::= root \"a\" | \"b\""); }).find("left-recursive"),
            std::string::npos);
  EXPECT_NE(
      message_of([] { Grammar::from_gbnf("root ::= x? root \"a\" | \"b\"\nx ::= \"c\""); }).find("left-recursive"),
      std::string::npos);
  EXPECT_NE(message_of([] { Grammar::from_gbnf("root ::= \"a\" x\nx ::= \"b\" x"); }).find("no finite sentence"),
            std::string::npos);
  EXPECT_NE(message_of([] { Grammar::from_gbnf("start ::= \"a\""); }).find("no rule named 'root'"), std::string::npos);
  for (const char* bad : {"root ::= \"a", "root ::= [a-", "root ::= (\"a\"", "root ::= \"a\"{2,1}", "root ::= *",
                          "root ::= \"\\q\"", "root ::= \"a\"{99999999}", "root ::= [z-a]", "root = \"a\"",
                          "root ::= \"a\" )", "root ::= \"a\"\nroot ::= \"b\"", "root ::= [^\\x00-\\U0010FFFF]"})
    EXPECT_EQ(wick::test::thrown_kind([&] { Grammar::from_gbnf(bad); }), ErrorKind::InvalidArgument) << bad;
  Grammar::from_gbnf("root ::= \"a\"", "root");
  EXPECT_NO_THROW(Grammar::from_gbnf("other ::= \"a\"", "other"));
}

namespace {

// The reference for a mask: each token alone, from the bytes so far.
std::vector<bool> reference_mask(const Grammar& g, const std::string& prefix, const std::vector<std::string>& vocab) {
  std::vector<bool> out;
  for (const std::string& t : vocab) out.push_back(!t.empty() && g.accepts_prefix(prefix + t));
  return out;
}

std::vector<std::string> small_vocab() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, char(b));  // every byte, as byte-level BPE has
  for (const char* t : {"{\"",
                        "\":",
                        "\": ",
                        "\",",
                        "\"}",
                        "true",
                        "false",
                        "null",
                        "12",
                        "3.5",
                        "e+",
                        "\\u00",
                        "ab",
                        " {",
                        "}}",
                        "]]",
                        "[[",
                        ", \"",
                        "\xc3\xa9t\xc3\xa9",
                        "\xe2\x82",
                        "\xac",
                        "\n  ",
                        "\"\"",
                        "{}",
                        "[]",
                        "-0",
                        "1e",
                        "0.",
                        ".5",
                        "tr",
                        "ue",
                        "nu",
                        "ll,",
                        "]]]",
                        "]]]]",
                        "]]]]]",
                        "x]]]]",
                        "[[[["})
    v.emplace_back(t);
  v.emplace_back("");  // a hole
  return v;
}

std::vector<bool> mask_bits(GrammarMatcher& m, size_t vocab) {
  std::vector<uint32_t> words((vocab + 31) / 32);
  m.fill_mask(words);
  std::vector<bool> out;
  for (size_t id = 0; id < vocab; ++id) out.push_back((words[id / 32] >> (id % 32)) & 1);
  return out;
}

}  // namespace

TEST(GrammarMatcher, MasksAreWhatEachTokenAloneAllows) {
  const Grammar g = Grammar::from_gbnf(kJson);
  const std::vector<std::string> vocab = small_vocab();
  const std::vector<int32_t> excluded{int32_t('{')};  // as a special token would be
  auto table = std::make_shared<const TokenTable>(vocab, excluded);
  std::vector<std::string> allowed = vocab;
  allowed['{'] = "";
  GrammarMatcher m(g, table);
  std::string text;
  for (const char* piece : {"{\"", "ab", "\xc3\xa9t\xc3\xa9", "\": ", "[[", "12", "]]", "}"}) {
    EXPECT_EQ(mask_bits(m, vocab.size()), reference_mask(g, text, allowed)) << "after '" << text << "'";
    const auto id = int32_t(std::find(vocab.begin(), vocab.end(), std::string(piece)) - vocab.begin());
    ASSERT_TRUE(m.accept(id)) << piece;
    text += piece;
  }
  EXPECT_EQ(text, "{\"ab\xc3\xa9t\xc3\xa9\": [[12]]}");
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.must_end());  // trailing whitespace may follow
  EXPECT_EQ(mask_bits(m, vocab.size()), reference_mask(g, text, allowed));
  EXPECT_FALSE(m.accept('{'));                        // excluded
  EXPECT_FALSE(m.accept(int32_t(vocab.size() - 1)));  // the hole
  EXPECT_FALSE(m.accept('x'));                        // not allowed: nothing changes
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.accept(-1));
  EXPECT_FALSE(m.accept(int32_t(vocab.size())));
  std::vector<uint32_t> wrong(3);
  EXPECT_EQ(wick::test::thrown_kind([&] { m.fill_mask(wrong); }), ErrorKind::InvalidArgument);
}

TEST(GrammarMatcher, RandomWalksOfTheMaskEndInValidJson) {
  const Grammar g = Grammar::from_gbnf(kJson);
  const std::vector<std::string> vocab = small_vocab();
  auto table = std::make_shared<const TokenTable>(vocab);
  std::mt19937 rng(7);
  uint64_t cached = 0;
  int ended = 0;
  for (int walk = 0; walk < 200; ++walk) {
    GrammarMatcher m(g, table);
    std::string text;
    // Prefer closing tokens as the walk grows, so that it ends.
    for (int step = 0; step < 400 && !m.must_end(); ++step) {
      if (m.can_end() && (step > 40 || rng() % 4 == 0)) break;
      const std::vector<bool> bits = mask_bits(m, vocab.size());
      std::vector<int32_t> ids;
      for (size_t id = 0; id < bits.size(); ++id)
        if (bits[id]) ids.push_back(int32_t(id));
      ASSERT_FALSE(ids.empty()) << "a dead end after '" << text << "'";
      std::vector<int32_t> closing;
      for (const int32_t id : ids)
        if (vocab[size_t(id)].find_first_of("}]\"") != std::string::npos) closing.push_back(id);
      const std::vector<int32_t>& pick = step > 60 && !closing.empty() ? closing : ids;
      const int32_t id = pick[rng() % pick.size()];
      ASSERT_TRUE(m.accept(id));
      text += vocab[size_t(id)];
    }
    cached += m.masks_cached();
    if (!m.can_end()) continue;  // a walk cut at 400 tokens proves nothing either way
    ++ended;
    EXPECT_TRUE(g.accepts(text)) << text;
    EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  }
  EXPECT_GT(ended, 150);
  EXPECT_GT(cached, 0u);  // inside strings the state repeats: masks come from the cache
}

// A token's bytes are what it adds in the middle of a text: the pieces of any encoding
// concatenate to the text (SentencePiece's added leading space aside), byte-fallback and
// byte-level pieces of one character included.
TEST(TokenTable, TokenBytesConcatenateToTheText) {
  const std::string dir = std::string(WICK_TEST_DATA_DIR) + "/tokenizers/";
  std::ifstream in(dir + "corpus.json");
  const auto corpus = nlohmann::json::parse(in);
  for (const char* name : {"llama3", "llama2", "gemma", "gpt2", "mistral_metaspace"}) {
    const auto tok = wick::text::Tokenizer::from_folder(dir + name);
    const TokenTable table(tok);
    ASSERT_EQ(table.vocab_size(), tok.vocab_size());
    for (const auto& t : corpus) {
      const std::string text = t.get<std::string>();
      // [INST] is an added token that strips the space after it (rstrip): the text changes.
      if (text.find("[INST]") != std::string::npos) continue;
      wick::text::EncodeOptions plain;
      plain.add_special = false;
      plain.parse_special = false;  // control tokens are not in the table
      const std::vector<int32_t> ids = tok.encode(text, plain);
      std::string joined;
      for (const int32_t id : ids) joined += table.bytes(id);
      EXPECT_TRUE(joined == text || joined == " " + text) << name << ": '" << text << "' gave '" << joined << "'";
    }
    if (const auto eos = tok.eos_id(); eos && tok.is_special(*eos)) EXPECT_EQ(table.bytes(*eos), "") << name;
  }
}

// Every mask of random walks equals the token-by-token reference: deep nesting (beyond the
// frames a local state keeps), and two grammars sharing fragments through one token table
// (its fragment cache).
TEST(GrammarMatcher, MasksOfRandomWalksMatchTheReferenceAcrossGrammars) {
  const std::vector<std::string> vocab = small_vocab();
  auto table = std::make_shared<const TokenTable>(vocab);
  const std::vector<Grammar> grammars{
      Grammar::from_gbnf(kJson), Grammar::from_gbnf(R"g(root ::= "[" item ("," item)* "]"
item ::= "\"" [a-z\xe9]{0,3} "\"" | "[" root? "]" | [0-9]+)g"),
      Grammar::from_gbnf(R"g(root ::= "{\"" [a-z]+ "\": " ("[" root "]" | "null" | "\"" [^"]* "\"") "}")g"),
      // Whether "]]]]" may close depends on how deep the walk is: beyond a local state's frames.
      Grammar::from_gbnf(R"g(root ::= "[" (root | "x") "]")g")};
  std::mt19937 rng(11);
  int steps = 0;
  for (int walk = 0; walk < 60; ++walk) {
    const Grammar& g = grammars[size_t(walk) % grammars.size()];
    GrammarMatcher m(g, table);
    std::string text;
    for (int step = 0; step < 30 && !m.must_end(); ++step, ++steps) {
      const std::vector<bool> bits = mask_bits(m, vocab.size());
      ASSERT_EQ(bits, reference_mask(g, text, vocab)) << "walk " << walk << " after '" << text << "'";
      std::vector<int32_t> ids;
      for (size_t id = 0; id < bits.size(); ++id)
        if (bits[id]) ids.push_back(int32_t(id));
      ASSERT_FALSE(ids.empty());
      // Mostly openers: nesting grows past the frames a local state keeps.
      std::vector<int32_t> open;
      for (const int32_t id : ids)
        if (vocab[size_t(id)].find_first_of("[{") != std::string::npos) open.push_back(id);
      const auto& pick = !open.empty() && rng() % 3 ? open : ids;
      const int32_t id = pick[rng() % pick.size()];
      ASSERT_TRUE(m.accept(id));
      text += vocab[size_t(id)];
    }
  }
  EXPECT_GT(steps, 1000);
}

namespace {

// The reference for a FreePrefix: text can still become an output when it is a start of the
// opening marker, or opens with it and either has not closed yet or has closed with a start
// of a sentence after the first closing marker (plain string search, not the automaton).
bool prefix_output_continues(const Grammar& g, const FreePrefix& p, const std::string& text, bool whole = false) {
  if (text.size() < p.open.size()) return !whole && p.open.starts_with(text);
  if (!text.starts_with(p.open)) return false;
  const size_t at = text.find(p.close, p.open.size());
  if (at == std::string::npos) return !whole;
  const std::string answer = text.substr(at + p.close.size());
  return whole ? g.accepts(answer) : g.accepts_prefix(answer);
}

}  // namespace

TEST(GrammarMatcher, AFreePrefixLetsAnyTextComeBeforeTheSentence) {
  const Grammar g = Grammar::from_gbnf(kJson);
  std::vector<std::string> vocab = small_vocab();
  for (const char* t : {"<think>", "</think>", "</think>{", "</think>\n", "think>", "</", "<th", "ink>\n", ">\n{",
                        ">{\"", "k>", "</think></"})
    vocab.emplace_back(t);
  auto table = std::make_shared<const TokenTable>(vocab);
  std::mt19937 rng(11);
  int ended = 0;
  for (const FreePrefix& p : {FreePrefix{"<think>", "</think>"}, FreePrefix{"", "</think>"}}) {
    for (int walk = 0; walk < (wick::test::kSanitizerSlowdown > 1 ? 6 : 15); ++walk) {
      GrammarMatcher m(g, table, p);
      std::string text;
      for (int step = 0; step < 80 && !m.must_end(); ++step) {
        if (m.can_end() && rng() % 3 == 0) break;
        const std::vector<bool> bits = mask_bits(m, vocab.size());
        std::vector<int32_t> ids, marker;
        for (size_t id = 0; id < vocab.size(); ++id) {
          const bool expect = !vocab[id].empty() && prefix_output_continues(g, p, text + vocab[id]);
          ASSERT_EQ(bits[id], expect) << "token '" << vocab[id] << "' after '" << text << "'";
          if (!bits[id]) continue;
          ids.push_back(int32_t(id));
          if (vocab[id].find_first_of(step > 12 ? "}]\">" : "<>/tk") != std::string::npos)
            marker.push_back(int32_t(id));
        }
        ASSERT_FALSE(ids.empty()) << "a dead end after '" << text << "'";
        EXPECT_EQ(m.can_end(), prefix_output_continues(g, p, text, true)) << text;
        const std::vector<int32_t>& pick = step > 5 && !marker.empty() && rng() % 2 ? marker : ids;
        const int32_t id = pick[rng() % pick.size()];
        ASSERT_TRUE(m.accept(id));
        text += vocab[size_t(id)];
      }
      if (!m.can_end()) continue;
      ++ended;
      EXPECT_TRUE(prefix_output_continues(g, p, text, true)) << text;
    }
  }
  EXPECT_GT(ended, wick::test::kSanitizerSlowdown > 1 ? 4 : 10);
  // Bytes through accept_bytes: a token that closes the prefix with bytes no sentence starts
  // with is refused whole (nothing changes); the markers may come split across tokens.
  GrammarMatcher m(g, table, FreePrefix{"<think>", "</think>"});
  EXPECT_FALSE(m.accept_bytes("<thonk>"));
  EXPECT_TRUE(m.accept_bytes("<th"));
  EXPECT_TRUE(m.accept_bytes("ink>a </thin"));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("k>x"));
  EXPECT_TRUE(m.accept_bytes("k>{\"a\": 1"));
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_bytes("}"));
  EXPECT_TRUE(m.can_end());
}

// A vocabulary large enough for the trie's shortcuts (subtrees skipped whole inside a
// string, fragments shared across grammars, dependent subtrees walked from the real state):
// every byte, then random tokens of JSON's characters, letters and UTF-8 pieces, many
// sharing prefixes. Masks of schema grammars that share one table, against each token alone.
TEST(GrammarMatcher, MasksOverALargeVocabularyMatchTheReference) {
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(1, char(b));
  std::mt19937 rng(5);
  const std::vector<std::string> pieces{"\"", "\\", "{", "}", "[",        "]",        ",",    ":", " ",
                                        "a",  "b",  "e", "n", "u",        "l",        "t",    "r", "0",
                                        "1",  "9",  "-", ".", "\xc3\xa9", "\xe2\x82", "\xac", "x"};
  const int extra = 2500 / (wick::test::kSanitizerSlowdown > 1 ? 5 : 1);
  for (int k = 0; k < extra; ++k) {
    std::string t = k % 3 && vocab.size() > 256 ? vocab[256 + rng() % (vocab.size() - 256)] : "";
    for (int n = 1 + int(rng() % 3); n > 0; --n) t += pieces[rng() % pieces.size()];
    vocab.push_back(t.substr(0, 10));
  }
  auto table = std::make_shared<const TokenTable>(vocab);
  const std::vector<std::string> schemas{
      R"({"type": "string"})", R"({"type": "array", "items": {"type": "string"}})",
      R"({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "number"}}, "required": ["a"]})",
      R"({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "boolean"}}})",
      R"({"type": "array"})"};
  int steps = 0;
  for (const std::string& schema : schemas) {
    const Grammar g = Grammar::from_gbnf(wick::text::json_schema_to_gbnf(schema));
    for (int walk = 0; walk < 2; ++walk) {
      GrammarMatcher m(g, table);
      std::string text;
      for (int step = 0; step < 14 && !m.must_end(); ++step, ++steps) {
        const std::vector<bool> bits = mask_bits(m, vocab.size());
        ASSERT_EQ(bits, reference_mask(g, text, vocab)) << schema << " after '" << text << "'";
        std::vector<int32_t> ids;
        for (size_t id = 0; id < bits.size(); ++id)
          if (bits[id]) ids.push_back(int32_t(id));
        ASSERT_FALSE(ids.empty()) << schema << " after '" << text << "'";
        const int32_t id = ids[rng() % ids.size()];
        ASSERT_TRUE(m.accept(id));
        text += vocab[size_t(id)];
      }
    }
  }
  EXPECT_GT(steps, 80);
}
