// llama.cpp's SentencePiece tokenizer (llm_tokenizer_spm) over a GGUF `llama` vocabulary:
// characters as symbols, repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring vocabulary piece (ties: leftmost), then pieces that are no token become
// their <0xNN> byte tokens.
#include <array>
#include <cstdio>
#include <queue>

#include "text/hf_components.h"
#include "text/hf_util.h"

namespace wick::text::hf {
namespace {

class Spm : public Model {
 public:
  Spm(const Vocab& vocab, std::vector<float> scores, std::vector<bool> mergeable, std::optional<int32_t> unk)
      : vocab_(vocab),
        scores_(std::move(scores)),
        mergeable_(std::move(mergeable)),
        unk_(unk),
        byte_ids_(vocab.byte_ids(unk.value_or(-1))) {}

  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    struct Symbol {
      size_t begin, n;
      int32_t prev, next;
    };
    struct Bigram {
      float score;
      int32_t left, right;
      size_t size;
      bool operator<(const Bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
    };
    std::vector<Symbol> sym;
    for (size_t i = 0; i < text.size();) {
      const size_t b = i;
      next_char(text, i);
      sym.push_back({b, i - b, int32_t(sym.size()) - 1, i == text.size() ? -1 : int32_t(sym.size()) + 1});
    }
    std::priority_queue<Bigram> queue;
    auto try_add = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const size_t size = sym[left].n + sym[right].n;
      const auto id = vocab_.find(text.substr(sym[left].begin, size));
      if (!id || !mergeable_[*id]) return;
      queue.push({scores_[*id], left, right, size});
    };
    for (int32_t i = 1; i < int32_t(sym.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      const Bigram top = queue.top();
      queue.pop();
      Symbol &l = sym[top.left], &r = sym[top.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != top.size) continue;  // stale: a side merged since
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = top.left;
      try_add(l.prev, top.left);
      try_add(top.left, l.next);
    }
    for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) {
      const std::string_view piece = text.substr(sym[i].begin, sym[i].n);
      if (const auto id = vocab_.find(piece)) {
        out.push_back(*id);
        continue;
      }
      for (unsigned char c : piece) {
        WICK_CHECK(byte_ids_[c] >= 0, InvalidArgument, "tokenizer: no byte token <0x", std::hex, int(c),
                   "> and no unknown token for text outside the vocabulary");
        out.push_back(byte_ids_[c]);
      }
    }
  }

 private:
  const Vocab& vocab_;
  std::vector<float> scores_;
  std::vector<bool> mergeable_;
  std::optional<int32_t> unk_;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace

std::unique_ptr<Model> make_spm(const Vocab& vocab, std::vector<float> scores, std::vector<bool> mergeable,
                                std::optional<int32_t> unk) {
  return std::make_unique<Spm>(vocab, std::move(scores), std::move(mergeable), unk);
}

}  // namespace wick::text::hf
