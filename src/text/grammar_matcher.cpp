// Token masks from a grammar (grammar.h): the vocabulary's byte trie walked through the
// grammar's lazily built DFA (grammar_impl.h), one mask cached per state.

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_map>

#include "text/free_prefix.h"
#include "text/grammar_impl.h"
#include "wick/error.h"
#include "wick/text/tokenizer.h"

namespace wick::text {

// The tokens' byte strings as a trie in preorder: node i's subtree is [i, end[i]), so a
// walk skips a subtree no grammar state can enter by jumping to end[i].
struct TokenTable::Trie {
  std::vector<uint8_t> byte;
  std::vector<uint16_t> depth;  // 1 for the first byte of a token
  std::vector<uint32_t> end;
  std::vector<uint32_t> first_token;  // the tokens that end at node i: ids[first_token[i] .. first_token[i + 1])
  std::vector<int32_t> ids;
  uint16_t max_depth = 0;
  // The bytes below node i (its descendants'), for nodes with kBelowMin descendants or more:
  // below_bytes[below[i]], kNoBelow for the others. A walk in a state that every one of
  // those bytes leads back to (a string's content) allows the whole subtree without
  // stepping through it.
  static constexpr uint32_t kNoBelow = UINT32_MAX, kBelowMin = 4;
  std::vector<uint32_t> below;
  std::vector<std::array<uint64_t, 4>> below_bytes;
};

// What a local state (grammar_impl.h) decides alone: the tokens it allows whatever the
// context, and the trie's subtrees whose tokens depend on it (their root nodes; a root's
// own tokens may be allowed already).
struct LocalMask {
  std::vector<uint32_t> allowed;
  std::vector<uint32_t> dependent;
};

// Local masks by the signature of their local state. Bounded: 1,024 masks of a 152k
// vocabulary are 19 MB; past that it starts over.
struct TokenTable::FragmentCache {
  static constexpr size_t kMax = 1024;
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const LocalMask>> masks;
  std::shared_ptr<const LocalMask> find(const std::string& key) {
    const std::lock_guard<std::mutex> lock(mu);
    const auto it = masks.find(key);
    return it == masks.end() ? nullptr : it->second;
  }
  void add(std::string key, std::shared_ptr<const LocalMask> m) {
    const std::lock_guard<std::mutex> lock(mu);
    if (masks.size() >= kMax) masks.clear();
    masks.emplace(std::move(key), std::move(m));
  }
};

namespace {

void allow(std::span<uint32_t> mask, int32_t id) { mask[uint32_t(id) >> 5] |= 1u << (uint32_t(id) & 31); }
// Whether every bit of `part` is in `whole`.
bool covers(const std::array<uint64_t, 4>& whole, const std::array<uint64_t, 4>& part) {
  return !(part[0] & ~whole[0]) && !(part[1] & ~whole[1]) && !(part[2] & ~whole[2]) && !(part[3] & ~whole[3]);
}
void refuse(std::span<uint32_t> mask, int32_t id) { mask[uint32_t(id) >> 5] &= ~(1u << (uint32_t(id) & 31)); }

// Tokens with no bytes (special ones, holes) are not in it.
std::unique_ptr<TokenTable::Trie> build_trie(const std::vector<std::string>& bytes) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < bytes.size(); ++id)
    if (!bytes[id].empty()) order.push_back(int32_t(id));
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return bytes[size_t(a)] < bytes[size_t(b)]; });
  auto t = std::make_unique<TokenTable::Trie>();
  std::vector<uint32_t> path;  // the nodes of the previous token's bytes
  const std::string* prev = nullptr;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth) {
      t->end[path.back()] = uint32_t(t->byte.size());
      path.pop_back();
    }
  };
  for (const int32_t id : order) {
    const std::string& s = bytes[size_t(id)];
    WICK_CHECK(s.size() < UINT16_MAX, InvalidArgument, "token table: token ", id, " is ", s.size(), " bytes long");
    size_t common = 0;
    if (prev)
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    close_to(common);
    for (size_t k = common; k < s.size(); ++k) {
      path.push_back(uint32_t(t->byte.size()));
      t->byte.push_back(uint8_t(s[k]));
      t->depth.push_back(uint16_t(k + 1));
      t->end.push_back(0);
      t->first_token.push_back(uint32_t(t->ids.size()));
    }
    t->ids.push_back(id);  // node path.back() is the last one made: its tokens stay contiguous
    t->max_depth = std::max(t->max_depth, uint16_t(s.size()));
    prev = &s;
  }
  close_to(0);
  t->first_token.push_back(uint32_t(t->ids.size()));
  // Each node's byte goes into the sets of its ancestors that keep one.
  const size_t n = t->byte.size();
  t->below.assign(n, TokenTable::Trie::kNoBelow);
  std::vector<uint32_t> ancestors;  // ancestors[k]: the node at depth k + 1 on the current path
  for (size_t i = 0; i < n; ++i) {
    const size_t d = t->depth[i];
    ancestors.resize(d - 1);
    for (const uint32_t a : ancestors)
      if (t->below[a] != TokenTable::Trie::kNoBelow)
        t->below_bytes[t->below[a]][t->byte[i] >> 6] |= uint64_t(1) << (t->byte[i] & 63);
    ancestors.push_back(uint32_t(i));
    if (t->end[i] - i - 1 >= TokenTable::Trie::kBelowMin) {
      t->below[i] = uint32_t(t->below_bytes.size());
      t->below_bytes.emplace_back();
    }
  }
  return t;
}

}  // namespace

TokenTable::TokenTable(std::vector<std::string> bytes, std::span<const int32_t> excluded) : bytes_(std::move(bytes)) {
  for (const int32_t id : excluded)
    if (id >= 0 && size_t(id) < bytes_.size()) bytes_[size_t(id)].clear();
  trie_ = build_trie(bytes_);
  fragments_ = std::make_unique<FragmentCache>();
}

TokenTable::TokenTable(const Tokenizer& tokenizer) {
  const size_t n = tokenizer.vocab_size();
  bytes_.resize(n);
  for (size_t id = 0; id < n; ++id) {
    if (tokenizer.is_special(int32_t(id))) continue;
    try {
      bytes_[id] = tokenizer.token_bytes(int32_t(id));
    } catch (const Error&) {
      // A hole in the vocabulary (an id no token has): never allowed.
    }
  }
  trie_ = build_trie(bytes_);
  fragments_ = std::make_unique<FragmentCache>();
}

TokenTable::~TokenTable() = default;

size_t TokenTable::vocab_size() const { return bytes_.size(); }

const std::string& TokenTable::bytes(int32_t id) const {
  WICK_CHECK(id >= 0 && size_t(id) < bytes_.size(), IndexOutOfRange, "token table: id ", id,
             " is not in the vocabulary (size ", bytes_.size(), ")");
  return bytes_[size_t(id)];
}

struct GrammarMatcher::Impl {
  Impl(Grammar g, std::shared_ptr<const TokenTable> t, std::optional<FreePrefix> p)
      : grammar(std::move(g)), tokens(std::move(t)), dfa(grammar.impl()) {
    WICK_CHECK(tokens != nullptr, InvalidArgument, "GrammarMatcher: no token table");
    if (p) {
      prefix.emplace(std::move(*p));
      pos.done = false;
    }
    state = dfa.start();
    mask_words = (tokens->vocab_size() + 31) / 32;
  }
  Grammar grammar;  // keeps the grammar the automaton reads alive
  std::shared_ptr<const TokenTable> tokens;
  GrammarAutomaton dfa;
  uint32_t state = GrammarAutomaton::kDead;
  size_t mask_words = 0;
  // Bounded caches: past the bound they start over (states recur within a string, a number,
  // an array's items). 32 masks of a 152k vocabulary are 608 KB per sequence.
  static constexpr size_t kMaxMasks = 32, kMaxLocals = 64;
  static constexpr size_t kMaxSignature = 64 << 10;           // bytes of a fragment's signature that is shared
  std::unordered_map<uint32_t, std::vector<uint32_t>> masks;  // by state
  std::unordered_map<uint32_t, std::shared_ptr<const LocalMask>> locals;  // by local state
  std::vector<uint32_t> scratch_level;                                    // walk_subtree's states by depth
  uint64_t computed = 0, cached = 0;
  // The free text before the sentence (FreePrefix), while pos is not done.
  std::optional<FreePrefixAutomaton> prefix;
  FreePrefixAutomaton::Pos pos{.done = true};
  std::vector<int32_t> closers;                   // tokens with the closing marker's last byte
  std::vector<std::vector<uint32_t>> free_masks;  // in the free text, by pos.closing (empty: not yet)

  // Whether token `id` can come from prefix position `at` (and the grammar's state after it).
  bool prefix_takes(FreePrefixAutomaton::Pos at, int32_t id) {
    const std::string& b = tokens->bytes(id);
    if (b.empty()) return false;
    const size_t took = prefix->feed(at, b);
    if (took == std::string_view::npos) return false;
    uint32_t s = state;
    for (size_t k = took; k < b.size() && s != GrammarAutomaton::kDead; ++k) s = dfa.next(s, uint8_t(b[k]));
    return s != GrammarAutomaton::kDead;
  }
  // The mask inside the prefix. The opening marker tries every token (a step or two); in the
  // free text every token is allowed but those that close it with bytes the sentence cannot
  // start with, which can only be tokens holding the marker's last byte: one mask per
  // position in the closing marker.
  void prefix_mask(std::span<uint32_t> out) {
    const auto n = int32_t(tokens->vocab_size());
    if (!prefix->in_free_text(pos)) {
      std::fill(out.begin(), out.end(), 0u);
      for (int32_t id = 0; id < n; ++id)
        if (prefix_takes(pos, id)) allow(out, id);
      return;
    }
    if (free_masks.empty()) {
      free_masks.resize(prefix->closing_states());
      for (int32_t id = 0; id < n; ++id)
        if (tokens->bytes(id).find(prefix->close_last()) != std::string::npos) closers.push_back(id);
    }
    std::vector<uint32_t>& m = free_masks[pos.closing];
    if (m.empty()) {
      m.assign(mask_words, 0u);
      for (int32_t id = 0; id < n; ++id)
        if (!tokens->bytes(id).empty()) allow(m, id);
      for (const int32_t id : closers)
        if (!prefix_takes(pos, id)) refuse(m, id);
    }
    std::copy(m.begin(), m.end(), out.begin());
  }

  // One walk of the whole trie from a local state: a subtree is skipped at the first byte no
  // local stack takes; its tokens depend on the context when a path escaped on the way.
  void walk_local(uint32_t from, LocalMask& out) {
    out.allowed.assign(mask_words, 0u);
    out.dependent.clear();
    const TokenTable::Trie& t = tokens->trie();
    std::vector<uint32_t> level(size_t(t.max_depth) + 1);
    std::vector<char> escaped(size_t(t.max_depth) + 1, 0);
    level[0] = from;
    const size_t n = t.byte.size();
    for (size_t i = 0; i < n;) {
      const size_t d = t.depth[i];
      const uint32_t s = dfa.next(level[d - 1], t.byte[i]);
      const bool esc = escaped[d - 1] || dfa.escaped(s);
      if (!dfa.has_stacks(s)) {
        // No local stack: the tokens ending here are allowed at a sentence's end; the others
        // below depend on the context if a path escaped on the way, else are refused.
        if (dfa.accepting(s))
          for (uint32_t k = t.first_token[i]; k < t.first_token[i + 1]; ++k) allow(out.allowed, t.ids[k]);
        if (esc && t.first_token[i] != t.first_token[t.end[i]]) out.dependent.push_back(uint32_t(i));
        i = t.end[i];
        continue;
      }
      level[d] = s;
      escaped[d] = esc;
      // A byte that led back to the same state (a string's content): when every byte below
      // does too, every token of the subtree is allowed.
      if (s == level[d - 1] && t.below[i] != TokenTable::Trie::kNoBelow &&
          covers(dfa.loops(s), t.below_bytes[t.below[i]])) {
        for (uint32_t k = t.first_token[i]; k < t.first_token[t.end[i]]; ++k) allow(out.allowed, t.ids[k]);
        i = t.end[i];
        continue;
      }
      for (uint32_t k = t.first_token[i]; k < t.first_token[i + 1]; ++k) allow(out.allowed, t.ids[k]);
      ++i;
    }
  }

  // The mask of the current state: its local state's, plus the dependent tokens each walked
  // from the real state.
  void compute(std::vector<uint32_t>& mask) {
    const uint32_t local = dfa.local(state);
    auto it = locals.find(local);
    if (it == locals.end()) {
      // Another matcher (of this grammar or another) may have walked the same fragment.
      const std::optional<std::string> key = dfa.signature(local, kMaxSignature);
      std::shared_ptr<const LocalMask> found = key ? tokens->fragments().find(*key) : nullptr;
      if (!found) {
        auto made = std::make_shared<LocalMask>();
        walk_local(local, *made);
        found = made;
        if (key) tokens->fragments().add(*key, found);
      }
      if (locals.size() >= kMaxLocals) locals.clear();
      it = locals.emplace(local, std::move(found)).first;
    }
    const LocalMask& lm = *it->second;
    mask = lm.allowed;
    const TokenTable::Trie& t = tokens->trie();
    for (const uint32_t root : lm.dependent) {
      // The real state before the root's byte: after the bytes above it (any token of the
      // subtree starts with them).
      const std::string& path = tokens->bytes(t.ids[t.first_token[root]]);
      uint32_t s = state;
      for (size_t k = 0; k + 1 < t.depth[root] && s != GrammarAutomaton::kDead; ++k) s = dfa.next(s, uint8_t(path[k]));
      if (s != GrammarAutomaton::kDead) walk_subtree(s, root, mask);
    }
  }

  // The tokens of the trie's subtree at `root` that the real automaton takes from `from`
  // (the state before the root's byte), added to mask.
  void walk_subtree(uint32_t from, uint32_t root, std::vector<uint32_t>& mask) {
    const TokenTable::Trie& t = tokens->trie();
    scratch_level.resize(size_t(t.max_depth) + 1);
    scratch_level[t.depth[root] - 1u] = from;
    for (size_t i = root; i < t.end[root];) {
      const size_t d = t.depth[i];
      const uint32_t s = dfa.next(scratch_level[d - 1], t.byte[i]);
      if (s == GrammarAutomaton::kDead) {
        i = t.end[i];
        continue;
      }
      for (uint32_t k = t.first_token[i]; k < t.first_token[i + 1]; ++k) allow(mask, t.ids[k]);
      scratch_level[d] = s;
      ++i;
    }
  }
};

GrammarMatcher::GrammarMatcher(Grammar grammar, std::shared_ptr<const TokenTable> tokens,
                               std::optional<FreePrefix> prefix)
    : impl_(std::make_unique<Impl>(std::move(grammar), std::move(tokens), std::move(prefix))) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::fill_mask(std::span<uint32_t> mask) {
  Impl& m = *impl_;
  WICK_CHECK(mask.size() == m.mask_words, InvalidArgument, "GrammarMatcher::fill_mask: ", mask.size(),
             " words for a vocabulary of ", m.tokens->vocab_size(), " tokens (", m.mask_words, " expected)");
  if (!m.pos.done) {
    m.prefix_mask(mask);
    return;
  }
  auto it = m.masks.find(m.state);
  if (it == m.masks.end()) {
    if (m.masks.size() >= Impl::kMaxMasks) m.masks.clear();
    it = m.masks.emplace(m.state, std::vector<uint32_t>()).first;
    m.compute(it->second);
    ++m.computed;
  } else {
    ++m.cached;
  }
  std::copy(it->second.begin(), it->second.end(), mask.begin());
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  Impl& m = *impl_;
  FreePrefixAutomaton::Pos pos = m.pos;
  if (!pos.done) {
    const size_t took = m.prefix->feed(pos, bytes);
    if (took == std::string_view::npos) return false;
    bytes.remove_prefix(took);
  }
  uint32_t s = m.state;
  for (const char c : bytes) {
    s = m.dfa.next(s, uint8_t(c));
    if (s == GrammarAutomaton::kDead) return false;
  }
  m.state = s;
  m.pos = pos;
  return true;
}

bool GrammarMatcher::accept(int32_t token) {
  if (token < 0 || size_t(token) >= impl_->tokens->vocab_size()) return false;
  const std::string& b = impl_->tokens->bytes(token);
  return !b.empty() && accept_bytes(b);  // an excluded token (special, a hole) has no bytes
}

bool GrammarMatcher::can_end() const { return impl_->pos.done && impl_->dfa.accepting(impl_->state); }
bool GrammarMatcher::must_end() const { return impl_->pos.done && impl_->state == GrammarAutomaton::kDone; }
uint64_t GrammarMatcher::masks_computed() const { return impl_->computed; }
uint64_t GrammarMatcher::masks_cached() const { return impl_->cached; }

}  // namespace wick::text
