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
#include <string>
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

// One automaton over a grammar: its interned frames and states, and the transitions found
// so far. Not thread-safe.
class GrammarAutomaton {
 public:
  static constexpr uint32_t kDead = 0;  // no stack and not a sentence: nothing may follow
  static constexpr uint32_t kDone = 1;  // a sentence that no byte continues

  explicit GrammarAutomaton(const Grammar::Impl& g);

  uint32_t start() const { return start_; }
  // The state after byte b (memoized).
  uint32_t next(uint32_t state, uint8_t b) {
    const auto& row = states_[state].next;
    if (!row.empty() && row[b] != kUnknown) return row[b];
    return remember(state, b, step(state, b));
  }
  bool accepting(uint32_t state) const { return states_[state].accepting; }
  bool has_stacks(uint32_t state) const { return !states_[state].stacks.empty(); }
  size_t state_count() const { return states_.size(); }

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  struct Stack {
    uint32_t pos, ret;
    auto operator<=>(const Stack&) const = default;
  };
  struct State {
    std::vector<Stack> stacks;  // sorted, unique
    bool accepting = false;
    std::vector<uint32_t> next;  // 256 transitions once asked (kUnknown: not computed)
  };
  uint32_t step(uint32_t state, uint8_t b);
  uint32_t remember(uint32_t state, uint8_t b, uint32_t to);  // stores a transition, returns to
  // Adds the stacks reached from (pos, ret) until each top is a byte set (references
  // expanded, ended alternatives returned from).
  void close(uint32_t pos, uint32_t ret, std::vector<Stack>& out, bool& accepting, int depth);
  uint32_t frame(uint32_t pos, uint32_t ret);
  uint32_t intern(std::vector<Stack>&& stacks, bool accepting);

  const Grammar::Impl& g_;
  std::vector<Stack> frames_;  // frame id -> (pos, ret); frames_[0] is the bottom
  std::unordered_map<uint64_t, uint32_t> frame_ids_;
  std::vector<State> states_;
  std::unordered_map<std::string, uint32_t> state_ids_;  // stacks' bytes + accepting -> id
  std::vector<Stack> scratch_;
  uint32_t start_ = kDead;
};

}  // namespace wick::text
