// The other tokenizer.json models: Unigram (Viterbi over piece scores, as HF's
// encode_optimized) and WordPiece (greedy longest match with a continuation prefix).
#include <limits>
#include <unordered_map>

#include "text/hf_components.h"
#include "text/hf_util.h"

namespace wick::text::hf {
namespace {

// Appends the byte tokens of s's bytes; false (nothing appended) if one is missing.
bool append_bytes(const std::array<int32_t, 256>& byte_ids, std::string_view s, std::vector<int32_t>& out) {
  for (unsigned char c : s)
    if (byte_ids[c] < 0) return false;
  for (unsigned char c : s) out.push_back(byte_ids[c]);
  return true;
}

class Unigram : public Model {
 public:
  Unigram(const Vocab& vocab, std::vector<double> scores, std::optional<int32_t> unk, bool byte_fallback)
      : vocab_(vocab),
        scores_(std::move(scores)),
        unk_(unk),
        byte_fallback_(byte_fallback),
        byte_ids_(vocab.byte_ids(-1)) {
    double min = 0;
    for (double s : scores_) min = std::min(min, s);
    unk_score_ = min - 10.0;  // HF's K_UNK_PENALTY
    // A byte trie of the pieces: node 0 is the root; edges keyed by (node << 8 | byte).
    node_id_.push_back(-1);
    for (size_t id = 0; id < vocab.tokens.size() && id < scores_.size(); ++id) {
      uint32_t node = 0;
      for (unsigned char c : vocab.tokens[id]) {
        auto [it, fresh] = edges_.try_emplace((uint64_t(node) << 8) | c, uint32_t(node_id_.size()));
        if (fresh) node_id_.push_back(-1);
        node = it->second;
      }
      if (node != 0 && node_id_[node] < 0) node_id_[node] = int32_t(id);
    }
  }

  void encode(std::string_view s, std::vector<int32_t>& out) const override {
    if (s.empty()) return;
    struct Node {
      int32_t id = -1;
      double score = 0;
      int64_t start = -1;  // -1: not reached
    };
    std::vector<Node> best(s.size() + 1);
    best[0].start = 0;
    for (size_t at = 0; at < s.size();) {
      size_t next = at;
      next_char(s, next);
      const size_t char_len = next - at;
      const double base = best[at].score;
      bool single = false;
      // Every vocabulary piece starting here, shortest first (the trie's common-prefix search).
      uint32_t node = 0;
      for (size_t end = at; end < s.size();) {
        const auto e = edges_.find((uint64_t(node) << 8) | static_cast<unsigned char>(s[end]));
        if (e == edges_.end()) break;
        node = e->second;
        ++end;
        const int32_t id = node_id_[node];
        if (id < 0 || (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)) continue;
        const double cand = base + scores_[id];
        Node& n = best[end];
        if (n.start < 0 || cand > n.score) n = {id, cand, int64_t(at)};
        single = single || end - at == char_len;
      }
      if (!single) {
        Node& n = best[next];
        const double cand = base + unk_score_;
        if (n.start < 0 || cand > n.score) n = {unk_.value_or(-1), cand, int64_t(at)};
      }
      at = next;
    }
    // Walk back; consecutive unknown pieces fuse into one (HF's fuse_unk, on for Unigram).
    struct Part {
      size_t start, end;
      bool unk;
    };
    std::vector<Part> parts;
    for (size_t end = s.size(); end > 0;) {
      const Node& n = best[end];
      const auto start = size_t(n.start);
      const bool is_unk = n.id < 0 || (unk_ && n.id == *unk_);
      if (is_unk && !parts.empty() && parts.back().unk)
        parts.back().start = start;
      else
        parts.push_back({start, end, is_unk});
      end = start;
    }
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      const std::string_view piece = s.substr(it->start, it->end - it->start);
      if (const auto id = vocab_.find(piece)) {
        out.push_back(*id);
      } else if (!(byte_fallback_ && append_bytes(byte_ids_, piece, out))) {
        WICK_CHECK(unk_, InvalidArgument, "tokenizer: Unigram has no piece for '", piece, "' and no unk_id");
        out.push_back(*unk_);
      }
    }
  }

 private:
  const Vocab& vocab_;
  std::vector<double> scores_;
  std::optional<int32_t> unk_;
  bool byte_fallback_;
  std::array<int32_t, 256> byte_ids_;
  double unk_score_;
  std::unordered_map<uint64_t, uint32_t> edges_;
  std::vector<int32_t> node_id_;  // the piece ending at each trie node, or -1
};

class WordPiece : public Model {
 public:
  WordPiece(const Vocab& vocab, int32_t unk, std::string prefix, size_t max_chars)
      : vocab_(vocab), unk_(unk), prefix_(std::move(prefix)), max_chars_(max_chars) {}

  void encode(std::string_view w, std::vector<int32_t>& out) const override {
    size_t chars = 0;
    for (size_t i = 0; i < w.size(); next_char(w, i)) ++chars;
    if (chars > max_chars_) return out.push_back(unk_);
    std::vector<int32_t> ids;
    std::string candidate;
    for (size_t start = 0; start < w.size();) {
      // The longest vocabulary entry from start (continuations carry the prefix).
      std::vector<size_t> ends;
      for (size_t i = start; i < w.size();) ends.push_back((next_char(w, i), i));
      std::optional<int32_t> hit;
      size_t hit_end = 0;
      for (auto e = ends.rbegin(); e != ends.rend() && !hit; ++e) {
        candidate.assign(start > 0 ? prefix_ : "");
        candidate.append(w.substr(start, *e - start));
        if ((hit = vocab_.find(candidate))) hit_end = *e;
      }
      if (!hit) return out.push_back(unk_);  // one unknown part makes the whole word unknown
      ids.push_back(*hit);
      start = hit_end;
    }
    out.insert(out.end(), ids.begin(), ids.end());
  }

 private:
  const Vocab& vocab_;
  int32_t unk_;
  std::string prefix_;
  size_t max_chars_;
};

}  // namespace

// "vocab": [[piece, score], ...] in id order, "unk_id", "byte_fallback".
std::unique_ptr<Model> make_unigram(const json& j, Pipeline& p) {
  std::vector<double> scores;
  const json& vocab = field_ref(j, "vocab", "Unigram");
  WICK_CHECK(vocab.is_array(), Format, "tokenizer.json: Unigram vocab is not an array");
  for (const json& entry : vocab) {
    WICK_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_number(), Format,
               "tokenizer.json: a Unigram vocab entry is not [piece, score]");
    p.vocab.add(entry[0].get<std::string>(), int64_t(scores.size()), "Unigram vocab");
    scores.push_back(entry[1].get<double>());
  }
  std::optional<int32_t> unk;
  if (j.contains("unk_id") && !j["unk_id"].is_null()) {
    const auto id = get_field<int64_t>(j, "unk_id", "Unigram");
    WICK_CHECK(id >= 0 && size_t(id) < scores.size(), Format, "tokenizer.json: Unigram unk_id ", id,
               " is outside the vocabulary (", scores.size(), ")");
    unk = int32_t(id);
  }
  return std::make_unique<Unigram>(p.vocab, std::move(scores), unk, get_or(j, "byte_fallback", false, "Unigram"));
}

std::unique_ptr<Model> make_wordpiece(const json& j, Pipeline& p) {
  for (const auto& [token, id] : field_ref(j, "vocab", "WordPiece").items())
    p.vocab.add(token, id.get<int64_t>(), "WordPiece vocab");
  const auto unk_name = get_or<std::string>(j, "unk_token", "[UNK]", "WordPiece");
  const auto unk = p.vocab.find(unk_name);
  WICK_CHECK(unk, Format, "tokenizer.json: WordPiece unk_token '", unk_name, "' is not in the vocabulary");
  return std::make_unique<WordPiece>(p.vocab, *unk,
                                     get_or<std::string>(j, "continuing_subword_prefix", "##", "WordPiece"),
                                     get_or(j, "max_input_chars_per_word", size_t(100), "WordPiece"));
}

}  // namespace wick::text::hf
