// The free text before a grammar (grammar.h's FreePrefix: a model's reasoning before its
// structured answer), as a byte automaton: the opening marker byte by byte, then any bytes
// until the first closing marker (found with its Knuth-Morris-Pratt failure function).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "wick/text/grammar.h"

namespace wick::text {

class FreePrefixAutomaton {
 public:
  // Where the output is in the prefix: bytes of the opening marker seen, bytes of the
  // closing marker matched at the end of the free text, whether the closing marker came.
  struct Pos {
    size_t opened = 0, closing = 0;
    bool done = false;
  };
  explicit FreePrefixAutomaton(FreePrefix p);

  // Takes bytes until the prefix ends: how many it took (the rest belong to the grammar), or
  // npos when they cannot follow (a byte off the opening marker); pos is unchanged on npos.
  size_t feed(Pos& pos, std::string_view bytes) const;
  // In the free text: every position there with the same `closing` behaves the same.
  bool in_free_text(const Pos& pos) const { return !pos.done && pos.opened == p_.open.size(); }
  size_t closing_states() const { return p_.close.size(); }
  char close_last() const { return p_.close.back(); }

 private:
  FreePrefix p_;
  std::vector<size_t> fail_;  // the longest proper border of close[0..k]
};

}  // namespace wick::text
