// Constrained decoding: a context-free grammar over bytes, and a matcher that says which
// tokens of a vocabulary may come next so that the output stays a prefix of a sentence.
//
// Grammars are written in GBNF, llama.cpp's dialect (its grammars/ folder and `grammar`
// request field parse as they are): `name ::= alternatives`, "literals" with escapes
// (\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), [character classes] with ranges and ^, `.` (any
// character), ( groups ), |, and the postfixes * + ? {m} {m,} {m,n}; # comments; a rule
// ends at a line break outside parentheses. Characters are Unicode code points, matched as
// their UTF-8 bytes. JSON Schema and regular expressions compile to GBNF
// (json_schema.h).
//
// The matcher is a pushdown automaton with persistent stacks (llama.cpp's grammar stacks,
// XGrammar's persistent stack): its state is a set of stacks whose tops are byte sets. The
// allowed tokens of a state come from one walk of the vocabulary's byte trie (llguidance's
// token trie), pruned at the first byte no stack takes, and are cached per state: a state
// seen again (every token of a long string, the same field of the next array item) costs a
// lookup.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

class Tokenizer;

// A compiled grammar (immutable, cheap to copy: shared).
class Grammar {
 public:
  // Parses GBNF; the start symbol is the rule named `root`. InvalidArgument naming the line
  // and column of a syntax error, an undefined rule, or a left-recursive rule (a rule that
  // can reach itself before consuming a byte: the matcher would never end).
  static Grammar from_gbnf(std::string_view gbnf, std::string_view root = "root");

  // Whether the whole of `text` (bytes) is a sentence of the grammar.
  bool accepts(std::string_view text) const;
  // Whether `text` can be continued into a sentence (the empty string always can, unless the
  // grammar has no sentence).
  bool accepts_prefix(std::string_view text) const;

  size_t rule_count() const;  // after the postfix operators were expanded into rules

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Grammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The bytes of every token of a vocabulary, in a trie (made once per tokenizer, shared by
// every matcher). Special tokens (control tokens such as <|eot_id|>) are not in it: a
// grammar never allows them; the caller allows its end-of-generation tokens when the
// matcher can_end().
class TokenTable {
 public:
  explicit TokenTable(const Tokenizer& tokenizer);
  // For tests and other vocabularies: bytes[id] for every id; ids in `excluded` (their
  // bytes are dropped) and empty strings are never allowed.
  explicit TokenTable(std::vector<std::string> bytes, std::span<const int32_t> excluded = {});
  ~TokenTable();
  TokenTable(const TokenTable&) = delete;
  TokenTable& operator=(const TokenTable&) = delete;

  size_t vocab_size() const;
  const std::string& bytes(int32_t id) const;  // IndexOutOfRange outside the vocabulary; "" when excluded

  struct Trie;
  const Trie& trie() const { return *trie_; }
  // The masks of grammar fragments (a string's content, a number), shared by every matcher
  // of every grammar over this table (thread-safe).
  struct FragmentCache;
  FragmentCache& fragments() const { return *fragments_; }

 private:
  std::vector<std::string> bytes_;
  std::unique_ptr<Trie> trie_;
  std::unique_ptr<FragmentCache> fragments_;
};

// Where one sequence is in a grammar. Not thread-safe; one per sequence.
// Free text before the grammar's sentence: a thinking model's reasoning before its
// structured answer. The output opens with `open` (empty: the prompt has opened it), then
// any text up to the first `close` (non-empty), then the sentence, right after it.
struct FreePrefix {
  std::string open, close;
};

class GrammarMatcher {
 public:
  GrammarMatcher(Grammar grammar, std::shared_ptr<const TokenTable> tokens,
                 std::optional<FreePrefix> prefix = std::nullopt);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // The tokens that may come next: bit (id % 32) of mask[id / 32] is set for each allowed
  // id, cleared for the others; mask holds (vocab_size + 31) / 32 words (InvalidArgument
  // otherwise). End-of-generation tokens are not set (see can_end()).
  void fill_mask(std::span<uint32_t> mask);
  // Takes a token: false, and nothing changes, when it is not allowed.
  bool accept(int32_t token);
  // The same for bytes (tests, forced text such as a tool call's opening).
  bool accept_bytes(std::string_view bytes);
  // The text so far is a sentence (an end-of-generation token may come now).
  bool can_end() const;
  // A sentence that no byte can continue: generation is over.
  bool must_end() const;
  // States whose masks were computed / found cached (for the benchmark and tests).
  uint64_t masks_computed() const;
  uint64_t masks_cached() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wick::text
