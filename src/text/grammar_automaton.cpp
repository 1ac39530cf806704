// The grammar's pushdown automaton as a lazily built DFA (grammar_impl.h).

#include <algorithm>
#include <cstring>

#include "text/grammar_impl.h"
#include "wick/error.h"

namespace wick::text {

namespace {
// Reference chains without a byte between them are as deep as the grammar's nesting of
// rules at one point (left recursion is refused at parse time); this bounds hostile ones.
constexpr int kMaxCloseDepth = 4096;
}  // namespace

GrammarAutomaton::GrammarAutomaton(const Grammar::Impl& g) : g_(g) {
  frames_.push_back({0, 0});                // the bottom
  states_.push_back(State{{}, false, {}});  // kDead
  states_.push_back(State{{}, true, {}});   // kDone
  state_ids_[std::string(1, '\0')] = kDead;
  state_ids_[std::string(1, '\1')] = kDone;
  for (auto& s : states_) s.next.assign(256, kDead);  // neither state takes a byte
  std::vector<Stack> stacks;
  bool accepting = false;
  for (const uint32_t alt : g_.alts[g_.root]) close(alt, 0, stacks, accepting, 0);
  start_ = intern(std::move(stacks), accepting);
}

uint32_t GrammarAutomaton::frame(uint32_t pos, uint32_t ret) {
  const uint64_t key = uint64_t(pos) << 32 | ret;
  const auto [it, added] = frame_ids_.try_emplace(key, uint32_t(frames_.size()));
  if (added) frames_.push_back({pos, ret});
  return it->second;
}

void GrammarAutomaton::close(uint32_t pos, uint32_t ret, std::vector<Stack>& out, bool& accepting, int depth) {
  WICK_CHECK(depth < kMaxCloseDepth, InvalidArgument, "grammar: rules nested deeper than ", kMaxCloseDepth,
             " without a character between them");
  for (;;) {
    const GrammarElement& e = g_.elems[pos];
    if (e.kind == GrammarElement::Bytes) {
      out.push_back({pos, ret});
      return;
    }
    if (e.kind == GrammarElement::End) {
      if (ret == 0) {
        accepting = true;
        return;
      }
      const Stack f = frames_[ret];
      pos = f.pos;
      ret = f.ret;
      continue;
    }
    // A reference: each alternative of the rule, returning to what follows the reference
    // (straight to ret when nothing does: a tail call).
    const uint32_t cont = g_.elems[pos + 1].kind == GrammarElement::End ? ret : frame(pos + 1, ret);
    const auto& alts = g_.alts[e.arg];
    for (size_t i = 0; i + 1 < alts.size(); ++i) close(alts[i], cont, out, accepting, depth + 1);
    pos = alts.back();
    ret = cont;
  }
}

uint32_t GrammarAutomaton::intern(std::vector<Stack>&& stacks, bool accepting) {
  if (stacks.empty()) return accepting ? kDone : kDead;
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::string key(stacks.size() * sizeof(Stack) + 1, '\0');
  std::memcpy(key.data(), stacks.data(), stacks.size() * sizeof(Stack));
  key.back() = accepting ? '\1' : '\0';
  const auto [it, added] = state_ids_.try_emplace(std::move(key), uint32_t(states_.size()));
  if (added) states_.push_back(State{std::move(stacks), accepting, {}});
  return it->second;
}

uint32_t GrammarAutomaton::step(uint32_t state, uint8_t b) {
  scratch_.clear();
  bool accepting = false;
  // states_ may grow (and move) while closing: copy the stacks taken first.
  std::vector<Stack> taken;
  for (const Stack& s : states_[state].stacks)
    if (g_.sets[g_.elems[s.pos].arg].has(b)) taken.push_back(s);
  for (const Stack& s : taken) close(s.pos + 1, s.ret, scratch_, accepting, 0);
  return intern(std::vector<Stack>(scratch_), accepting);
}

uint32_t GrammarAutomaton::remember(uint32_t state, uint8_t b, uint32_t to) {
  auto& row = states_[state].next;  // after step(): states_ may have moved
  if (row.empty()) row.assign(256, kUnknown);
  row[b] = to;
  return to;
}

bool Grammar::accepts(std::string_view text) const {
  GrammarAutomaton a(*impl_);
  uint32_t s = a.start();
  for (const char c : text) s = a.next(s, uint8_t(c));
  return a.accepting(s);
}

bool Grammar::accepts_prefix(std::string_view text) const {
  GrammarAutomaton a(*impl_);
  uint32_t s = a.start();
  for (const char c : text) s = a.next(s, uint8_t(c));
  return s != GrammarAutomaton::kDead;
}

size_t Grammar::rule_count() const { return impl_->alts.size(); }

}  // namespace wick::text
