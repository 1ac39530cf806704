// The compiled form of a grammar (grammar.h) and the pushdown automaton that runs it.
//
// A grammar is a flat array of elements: each alternative of each rule is a run of
// elements ending with End. An element is a byte set (one byte of input) or a reference to
// a rule. A position in the array says the rule, the alternative and how far into it.
//
// The automaton's configuration is a set of stacks. A stack is (pos, ret): pos is a byte
// set element still to match, ret the frame to return to when pos's alternative ends (a
// frame is again (pos, ret), interned, so stacks share their bottoms; frame 0 is the
// bottom: returning to it ends the sentence). A reference at the end of an alternative
// returns straight to the caller's frame (a tail call), so right recursion, which every
// repetition compiles to, keeps stacks flat.
//
// Configurations are interned as states and the transitions between them memoized (a lazy
// DFA over the automaton's configurations): inside a string, one state follows every
// ordinary character, and walking the vocabulary's trie costs one table lookup per node.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wick/text/grammar.h"

namespace wick::text {

struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t(1) << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(uint8_t(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct GrammarElement {
  enum Kind : uint8_t { Bytes, Ref, End };
  Kind kind = End;
  uint32_t arg = 0;  // Bytes: index into sets; Ref: the rule
};

struct Grammar::Impl {
  std::vector<GrammarElement> elems;
  std::vector<std::vector<uint32_t>> alts;  // per rule: where each alternative starts in elems
  std::vector<ByteSet> sets;
  std::vector<std::string> names;  // per rule (generated ones: parent name + suffix)
  uint32_t root = 0;
};

// Why a grammar that parses cannot run (Grammar::from_gbnf refuses it): the rule named (a
// group's rule is named after its rule, "name/N").
struct GbnfProblem {
  enum Kind { NoSentence, LeftRecursive } kind;
  std::string rule;
};
// The problem of GBNF text with a root rule, if any (InvalidArgument for text that does not
// parse): what the JSON Schema compiler asks of its output to name the $ref at fault.
std::optional<GbnfProblem> gbnf_problem(std::string_view gbnf);

// One automaton over a grammar: its interned frames and states, and the transitions found
// so far. Not thread-safe.
//
// Local states (local()) serve the token masks: the same byte-set tops as a state, each
// with its few nearest frames and then the escape frame instead of the rest of its stack. What a token does from there
// is decided without the stack below (allowed, or refused) unless a path returns through the escape frame (escaped()):
// only those tokens depend on the context. A string's content, say, has one local state wherever the string is, and
// only the tokens that close the string need the real stack.
class GrammarAutomaton {
 public:
  static constexpr uint32_t kDead = 0;     // no stack and not a sentence: nothing may follow
  static constexpr uint32_t kDone = 1;     // a sentence that no byte continues
  static constexpr uint32_t kEscaped = 2;  // no local stack left; a path returned to the context

  explicit GrammarAutomaton(const Grammar::Impl& g);

  uint32_t start() const { return start_; }
  // The state after byte b (memoized).
  uint32_t next(uint32_t state, uint8_t b) {
    const uint32_t to = next_[size_t(state) << 8 | b];
    return to != kUnknown ? to : remember(state, b, step(state, b));
  }
  bool accepting(uint32_t state) const { return info_[state] & kAccepting; }
  // The byte that led here let a path of a local state return to its context.
  bool escaped(uint32_t state) const { return info_[state] & kEscapes; }
  bool has_stacks(uint32_t state) const { return info_[state] & kHasStacks; }
  // The bytes that lead from `state` back to itself (a string's ordinary characters), as
  // 256 bits; all 256 transitions are computed the first time it is asked.
  using ByteBits = std::array<uint64_t, 4>;
  const ByteBits& loops(uint32_t state);
  // The local state of `state` (its tops, returning to the escape frame), and a key that is
  // the same for states with the same tops.
  uint32_t local(uint32_t state);
  // What a local state's behaviour depends on, written out: its tops' rests of alternatives
  // and every rule they reach (renumbered in the order reached, byte sets as their bits).
  // Equal signatures (of any two grammars) mean equal local masks: the same string or number
  // rule in another schema reuses one (TokenTable's cache). nullopt past max_bytes (a
  // fragment that reaches a large part of a large grammar is not worth writing out, nor
  // shared).
  std::optional<std::string> signature(uint32_t local_state, size_t max_bytes) const;
  size_t state_count() const { return states_.size(); }

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  static constexpr uint32_t kEscapeFrame = 1;  // frames_[1]: returning to it escapes
  static constexpr int kLocalFrames = 3;       // frames a local state keeps below each top
  static constexpr uint8_t kAccepting = 1, kEscapes = 2, kHasStacks = 4;
  struct Stack {
    uint32_t pos, ret;
    auto operator<=>(const Stack&) const = default;
  };
  struct State {
    std::vector<Stack> stacks;  // sorted, unique
    uint8_t flags = 0;          // kAccepting, kEscapes
  };
  uint32_t step(uint32_t state, uint8_t b);
  uint32_t remember(uint32_t state, uint8_t b, uint32_t to);  // stores a transition, returns to
  // Adds the stacks reached from (pos, ret) until each top is a byte set (references
  // expanded, ended alternatives returned from); flags gains kAccepting / kEscapes when a
  // path returns to the bottom / the escape frame.
  void close(uint32_t pos, uint32_t ret, std::vector<Stack>& out, uint8_t& flags, int depth);
  uint32_t frame(uint32_t pos, uint32_t ret);
  // The nearest frame that every one of several stacks has within kLocalFrames + 1 frames of
  // its top (0: none, or a single stack).
  uint32_t shared_context(const std::vector<Stack>& stacks) const;
  uint32_t intern(std::vector<Stack>&& stacks, uint8_t flags);

  const Grammar::Impl& g_;
  std::vector<Stack> frames_;  // frame id -> (pos, ret); 0 the bottom, 1 the escape frame
  std::unordered_map<uint64_t, uint32_t> frame_ids_;
  std::vector<State> states_;
  // The transitions, 256 per state in one flat table (kUnknown: not computed yet): the token
  // trie's walk reads one of them per node.
  std::vector<uint32_t> next_;
  std::vector<uint8_t> info_;                            // per state: its flags, and kHasStacks
  std::unordered_map<std::string, uint32_t> state_ids_;  // stacks' bytes + flags -> id
  std::vector<uint32_t> local_of_;                       // state -> its local state (kUnknown: not yet)
  std::unordered_map<uint32_t, ByteBits> loops_;         // loops() of the states asked
  std::vector<Stack> scratch_;
  uint32_t start_ = kDead;
};

}  // namespace wick::text
