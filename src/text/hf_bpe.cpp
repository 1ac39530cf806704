// BPE as HF tokenizers runs it (models/bpe): characters (or their <0xNN> byte tokens, or the
// unknown token) as symbols, then the lowest-ranked adjacent merge first from a priority
// queue over a linked list of symbols, with a per-piece cache shared by all threads.
#include <array>
#include <cstdio>
#include <mutex>
#include <queue>
#include <shared_mutex>

#include "text/hf_components.h"
#include "text/hf_util.h"

namespace wick::text::hf {
namespace {

constexpr size_t kMaxCachedPiece = 256;  // bytes; longer pieces are rare and not worth keeping
constexpr size_t kMaxCacheEntries = 1 << 16;

struct MergeInfo {
  uint32_t rank;
  int32_t new_id;
};

class Bpe : public Model {
 public:
  Bpe(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& o,
      std::string prefix, std::string suffix)
      : vocab_(vocab), o_(o), prefix_(std::move(prefix)), suffix_(std::move(suffix)) {
    byte_ids_ = vocab.byte_ids(-1);
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [a, b] = merges[rank];
      const auto ia = vocab.find(a), ib = vocab.find(b);
      WICK_CHECK(ia && ib, Format, "tokenizer: merge ", rank, " '", a, " ", b, "' names a token not in the vocabulary");
      const std::string joined = a + b.substr(b.starts_with(prefix_) ? prefix_.size() : 0);
      const auto id = vocab.find(joined);
      WICK_CHECK(id, Format, "tokenizer: merge ", rank, " '", a, " ", b, "' makes '", joined,
                 "', which is not in the vocabulary");
      merges_[key(*ia, *ib)] = {static_cast<uint32_t>(rank), *id};  // a repeated pair: the later rank wins, as in HF
    }
    n_merges_ = merges.size();
  }

  size_t merges() const override { return n_merges_; }

  void encode(std::string_view piece, std::vector<int32_t>& out) const override {
    if (piece.empty()) return;
    if (o_.ignore_merges)
      if (const auto id = vocab_.find(piece)) return out.push_back(*id);
    const bool cacheable = piece.size() <= kMaxCachedPiece;
    if (cacheable) {
      std::shared_lock lock(cache_mutex_);
      if (auto it = cache_.find(piece); it != cache_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const size_t start = out.size();
    merge_word(piece, out);
    if (cacheable) {
      std::unique_lock lock(cache_mutex_);
      if (cache_.size() < kMaxCacheEntries)
        cache_.emplace(std::string(piece), std::vector<int32_t>(out.begin() + start, out.end()));
    }
  }

 private:
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };

  void merge_word(std::string_view w, std::vector<int32_t>& out) const {
    std::vector<Symbol> sym;
    sym.reserve(w.size());
    auto add = [&](int32_t id) { sym.push_back({id, int32_t(sym.size()) - 1, int32_t(sym.size()) + 1, true}); };
    bool pending_unk = false;  // a run of unknown characters not yet added (fused into one)
    std::string scratch;
    for (size_t i = 0; i < w.size();) {
      const size_t b = i;
      next_char(w, i);
      std::string_view ch = w.substr(b, i - b);
      if ((b > 0 && !prefix_.empty()) || (i == w.size() && !suffix_.empty())) {
        scratch.assign(b > 0 ? prefix_ : "");
        scratch.append(ch);
        if (i == w.size()) scratch += suffix_;
        ch = scratch;
      }
      if (const auto id = vocab_.find(ch)) {
        if (pending_unk) add(*o_.unk), pending_unk = false;
        add(*id);
        continue;
      }
      if (o_.byte_fallback) {
        const std::string_view raw = w.substr(b, i - b);
        bool all = true;
        for (unsigned char c : raw) all = all && byte_ids_[c] >= 0;
        if (all) {
          for (unsigned char c : raw) add(byte_ids_[c]);
          continue;
        }
      }
      if (o_.unk) {
        if (pending_unk && !o_.fuse_unk) add(*o_.unk);
        pending_unk = true;
      }
    }
    if (pending_unk) add(*o_.unk);
    if (sym.empty()) return;
    sym.back().next = -1;

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int32_t left) {
      const int32_t right = sym[left].next;
      if (right < 0) return;
      if (auto it = merges_.find(key(sym[left].id, sym[right].id)); it != merges_.end())
        queue.push({it->second.rank, left, it->second.new_id});
    };
    for (int32_t i = 0; i + 1 < int32_t(sym.size()); ++i) consider(i);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = sym[top.pos];
      if (!left.alive || left.next < 0) continue;
      // Stale entry: the pair at pos changed since it was queued.
      const auto it = merges_.find(key(left.id, sym[left.next].id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;
      Symbol& right = sym[left.next];
      left.id = top.new_id;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) sym[right.next].prev = top.pos;
      if (left.prev >= 0) consider(left.prev);
      consider(top.pos);
    }
    for (const Symbol& s : sym)
      if (s.alive) out.push_back(s.id);
  }

  const Vocab& vocab_;
  BpeOptions o_;
  std::string prefix_, suffix_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, MergeInfo> merges_;
  size_t n_merges_ = 0;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options) {
  return std::make_unique<Bpe>(vocab, merges, options, "", "");
}

// tokenizer.json's BPE: {"vocab": {token: id}, "merges": ["a b", ...] or [["a", "b"], ...]}.
std::unique_ptr<Model> make_bpe_json(const json& j, Pipeline& p) {
  for (const auto& [token, id] : field_ref(j, "vocab", "model").items()) {
    WICK_CHECK(id.is_number_integer(), Format, "tokenizer.json: model.vocab['", token, "'] is not an integer id");
    p.vocab.add(token, id.get<int64_t>(), "model.vocab");
  }
  std::vector<std::pair<std::string, std::string>> merges;
  static const json kNone = json::array();
  const json& list = j.contains("merges") ? j["merges"] : kNone;
  WICK_CHECK(list.is_array(), Format, "tokenizer.json: model.merges is not an array");
  merges.reserve(list.size());
  for (const json& m : list) {
    if (m.is_string()) {
      const auto& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      WICK_CHECK(sp != std::string::npos, Format, "tokenizer.json: merge '", s, "' is not 'a b'");
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else {
      WICK_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), Format,
                 "tokenizer.json: a merge is neither 'a b' nor [a, b]");
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  BpeOptions o;
  o.byte_fallback = get_or(j, "byte_fallback", false, "BPE");
  o.fuse_unk = get_or(j, "fuse_unk", false, "BPE");
  o.ignore_merges = get_or(j, "ignore_merges", false, "BPE");
  WICK_CHECK(get_or(j, "dropout", 0.0, "BPE") == 0.0, Unsupported, "tokenizer.json: BPE dropout is not supported");
  if (const auto unk = get_or<std::string>(j, "unk_token", "", "BPE"); !unk.empty()) {
    o.unk = p.vocab.find(unk);
    WICK_CHECK(o.unk, Format, "tokenizer.json: BPE unk_token '", unk, "' is not in the vocabulary");
  }
  return std::make_unique<Bpe>(p.vocab, merges, o, get_or<std::string>(j, "continuing_subword_prefix", "", "BPE"),
                               get_or<std::string>(j, "end_of_word_suffix", "", "BPE"));
}

}  // namespace wick::text::hf
