// The grammar's pushdown automaton as a lazily built DFA (grammar_impl.h).

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "text/grammar_impl.h"
#include "wick/error.h"

namespace wick::text {

namespace {
// Reference chains without a byte between them are as deep as the grammar's nesting of
// rules at one point (left recursion is refused at parse time); this bounds hostile ones.
constexpr int kMaxCloseDepth = 4096;
}  // namespace

GrammarAutomaton::GrammarAutomaton(const Grammar::Impl& g) : g_(g) {
  frames_.push_back({0, 0});                                        // the bottom
  frames_.push_back({0, 0});                                        // the escape frame
  for (const uint8_t flags : {uint8_t(0), kAccepting, kEscapes}) {  // kDead, kDone, kEscaped
    state_ids_[std::string(1, char(flags))] = uint32_t(states_.size());
    states_.push_back(State{{}, flags});
    info_.push_back(flags);
    next_.resize(next_.size() + 256, kDead);  // none takes a byte
  }
  std::vector<Stack> stacks;
  uint8_t flags = 0;
  for (const uint32_t alt : g_.alts[g_.root]) close(alt, 0, stacks, flags, 0);
  start_ = intern(std::move(stacks), flags);
}

uint32_t GrammarAutomaton::frame(uint32_t pos, uint32_t ret) {
  const uint64_t key = uint64_t(pos) << 32 | ret;
  const auto [it, added] = frame_ids_.try_emplace(key, uint32_t(frames_.size()));
  if (added) frames_.push_back({pos, ret});
  return it->second;
}

void GrammarAutomaton::close(uint32_t pos, uint32_t ret, std::vector<Stack>& out, uint8_t& flags, int depth) {
  WICK_CHECK(depth < kMaxCloseDepth, InvalidArgument, "grammar: rules nested deeper than ", kMaxCloseDepth,
             " without a character between them");
  for (;;) {
    const GrammarElement& e = g_.elems[pos];
    if (e.kind == GrammarElement::Bytes) {
      out.push_back({pos, ret});
      return;
    }
    if (e.kind == GrammarElement::End) {
      if (ret == 0 || ret == kEscapeFrame) {
        flags |= ret == 0 ? kAccepting : kEscapes;
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
    for (size_t i = 0; i + 1 < alts.size(); ++i) close(alts[i], cont, out, flags, depth + 1);
    pos = alts.back();
    ret = cont;
  }
}

uint32_t GrammarAutomaton::intern(std::vector<Stack>&& stacks, uint8_t flags) {
  if (stacks.empty()) return flags & kAccepting ? kDone : flags & kEscapes ? kEscaped : kDead;
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::string key(stacks.size() * sizeof(Stack) + 1, '\0');
  std::memcpy(key.data(), stacks.data(), stacks.size() * sizeof(Stack));
  key.back() = char(flags);
  const auto [it, added] = state_ids_.try_emplace(std::move(key), uint32_t(states_.size()));
  if (added) {
    states_.push_back(State{std::move(stacks), flags});
    info_.push_back(flags | kHasStacks);
    next_.resize(next_.size() + 256, kUnknown);
  }
  return it->second;
}

uint32_t GrammarAutomaton::step(uint32_t state, uint8_t b) {
  // close() adds frames, never states: the stacks read here stay put.
  scratch_.clear();
  uint8_t flags = 0;
  for (const Stack& s : states_[state].stacks)
    if (g_.sets[g_.elems[s.pos].arg].has(b)) close(s.pos + 1, s.ret, scratch_, flags, 0);
  return intern(std::vector<Stack>(scratch_), flags);
}

uint32_t GrammarAutomaton::remember(uint32_t state, uint8_t b, uint32_t to) {
  next_[size_t(state) << 8 | b] = to;  // after step(): next_ may have moved
  return to;
}

const GrammarAutomaton::ByteBits& GrammarAutomaton::loops(uint32_t state) {
  if (const auto it = loops_.find(state); it != loops_.end()) return it->second;
  ByteBits bits{};
  for (int b = 0; b < 256; ++b)
    if (next(state, uint8_t(b)) == state) bits[size_t(b) >> 6] |= uint64_t(1) << (b & 63);
  return loops_.emplace(state, bits).first->second;
}

uint32_t GrammarAutomaton::shared_context(const std::vector<Stack>& stacks) const {
  if (stacks.size() < 2) return 0;
  // The frames within reach of the first stack's top, nearest first; the deepest one every
  // other stack reaches within kLocalFrames + 1 frames too... the nearest such, in fact.
  std::vector<uint32_t> reach;
  for (uint32_t f = stacks[0].ret; f != 0 && reach.size() <= size_t(kLocalFrames); f = frames_[f].ret)
    reach.push_back(f);
  for (const uint32_t c : reach) {
    bool everywhere = true;
    for (size_t k = 1; k < stacks.size() && everywhere; ++k) {
      int depth = 0;
      uint32_t f = stacks[k].ret;
      for (; f != 0 && f != c && depth < kLocalFrames; f = frames_[f].ret) ++depth;
      everywhere = f == c;
    }
    if (everywhere) return c;
  }
  return 0;
}

uint32_t GrammarAutomaton::local(uint32_t state) {
  if (local_of_.size() <= state) local_of_.resize(states_.size(), kUnknown);
  if (local_of_[state] != kUnknown) return local_of_[state];
  // Each stack keeps its top and the frames below it down to the context that every stack
  // shares (what called a string whose content this is), when there is one within
  // kLocalFrames frames of each top: the fragment is then the same wherever it is used (the
  // same string rule in any object of any schema shares one walk). Else each keeps
  // kLocalFrames frames. What lies deeper becomes the escape frame.
  const std::vector<Stack>& stacks = states_[state].stacks;
  const uint32_t shared = shared_context(stacks);
  const auto cut = [&](auto&& self, uint32_t f, int keep) -> uint32_t {
    if (f == 0) return 0;  // the real bottom stays: ending there is the sentence's end
    if (shared != 0 ? f == shared : keep == 0) return kEscapeFrame;
    const Stack below = frames_[f];
    return frame(below.pos, self(self, below.ret, keep - 1));
  };
  std::vector<Stack> tops;
  for (const Stack& s : stacks) tops.push_back({s.pos, cut(cut, s.ret, kLocalFrames)});
  const uint32_t id = intern(std::move(tops), 0);
  local_of_.resize(states_.size(), kUnknown);
  local_of_[state] = id;
  return id;
}

std::optional<std::string> GrammarAutomaton::signature(uint32_t local_state, size_t max_bytes) const {
  std::string out;
  std::unordered_map<uint32_t, uint32_t> renumbered;
  std::vector<uint32_t> queue;
  auto write_u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto write_run = [&](uint32_t pos) {  // elements from pos to the end of its alternative
    for (;; ++pos) {
      const GrammarElement& e = g_.elems[pos];
      out += char('0' + e.kind);
      if (e.kind == GrammarElement::End) return;
      if (e.kind == GrammarElement::Bytes) {
        out.append(reinterpret_cast<const char*>(g_.sets[e.arg].bits.data()), sizeof(ByteSet::bits));
      } else {
        const auto [it, added] = renumbered.try_emplace(e.arg, uint32_t(renumbered.size()));
        if (added) queue.push_back(e.arg);
        write_u32(it->second);
      }
    }
  };
  for (const Stack& s : states_[local_state].stacks) {
    write_run(s.pos);
    uint32_t f = s.ret;
    for (; f != 0 && f != kEscapeFrame; f = frames_[f].ret) {
      out += '|';
      write_run(frames_[f].pos);
    }
    out += f == 0 ? 'B' : 'E';
  }
  for (size_t q = 0; q < queue.size() && out.size() <= max_bytes; ++q) {
    out += 'R';
    for (const uint32_t alt : g_.alts[queue[q]]) write_run(alt);
  }
  if (out.size() > max_bytes) return std::nullopt;
  return out;
}

namespace {
// The state after text from the start (a fresh automaton; kDead once no stack takes a byte).
uint32_t state_after(GrammarAutomaton& a, std::string_view text) {
  uint32_t s = a.start();
  for (const char c : text) s = a.next(s, uint8_t(c));
  return s;
}
}  // namespace

bool Grammar::accepts(std::string_view text) const {
  GrammarAutomaton a(*impl_);
  return a.accepting(state_after(a, text));
}

bool Grammar::accepts_prefix(std::string_view text) const {
  GrammarAutomaton a(*impl_);
  return state_after(a, text) != GrammarAutomaton::kDead;
}

size_t Grammar::rule_count() const { return impl_->alts.size(); }

}  // namespace wick::text
