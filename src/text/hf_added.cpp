// Added tokens: leftmost-longest matching (the aho-corasick semantics HF uses) with the
// lstrip / rstrip / single_word options, and the vocabulary table.
#include <algorithm>
#include <cstdio>

#include "text/hf_components.h"
#include "text/hf_util.h"

namespace wick::text::hf {

std::array<int32_t, 256> Vocab::byte_ids(int32_t missing) const {
  std::array<int32_t, 256> out{};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);  // HF's format!("<{:#04X}>")
    out[b] = find(name).value_or(missing);
  }
  return out;
}

void Vocab::add(std::string token, int64_t id, const char* where) {
  WICK_CHECK(!token.empty(), Format, "tokenizer: ", where, " has an empty token (id ", id, ")");
  WICK_CHECK(id >= 0 && size_t(id) <= max_id, Format, "tokenizer: ", where, " id ", id, " of '", token,
             "' is out of range (the file has room for ids up to ", max_id, ")");
  if (size_t(id) >= tokens.size()) tokens.resize(size_t(id) + 1);
  WICK_CHECK(tokens[id].empty() || tokens[id] == token, Format, "tokenizer: ", where, " gives id ", id, " to both '",
             tokens[id], "' and '", token, "'");
  tokens[id] = token;
  ids.emplace(std::move(token), int32_t(id));  // a duplicate string keeps its first id
}

void AddedVocab::add(AddedToken token) {
  WICK_CHECK(!token.content.empty(), Format, "tokenizer: added token ", token.id, " is empty");
  by_id_[token.id] = tokens_.size();
  token.text = token.content;
  tokens_.push_back(std::move(token));
}

void AddedVocab::finish(const Normalizer* normalizer) {
  raw_.clear();
  normalized_.clear();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    AddedToken& t = tokens_[i];
    // A token that is not valid UTF-8 (GGUF strings are bytes) can never be typed, and
    // matching it could cut the text inside a character.
    if (to_valid_utf8(t.content) != t.content) continue;
    if (t.normalized && normalizer) {
      std::string n = t.content;
      normalizer->normalize(n);
      if (!n.empty()) t.text = n, normalized_.push_back({std::move(n), i});
    } else {
      (t.normalized ? normalized_ : raw_).push_back({t.content, i});
    }
  }
  // Grouped by first byte, longest first, so the first hit at a position is the longest.
  auto index = [](std::vector<Pattern>& pats, std::vector<uint32_t>& first) {
    std::stable_sort(pats.begin(), pats.end(), [](const Pattern& a, const Pattern& b) {
      const auto fa = static_cast<unsigned char>(a.text[0]), fb = static_cast<unsigned char>(b.text[0]);
      return fa != fb ? fa < fb : a.text.size() > b.text.size();
    });
    first.assign(257, 0);
    for (const Pattern& p : pats) ++first[static_cast<unsigned char>(p.text[0]) + 1];
    for (size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
  };
  index(raw_, raw_first_);
  index(normalized_, normalized_first_);
}

const AddedToken* AddedVocab::by_id(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::by_content(std::string_view s) const {
  for (const AddedToken& t : tokens_)
    if (t.content == s) return &t;
  return nullptr;
}

std::vector<Segment> AddedVocab::split(std::string_view s, bool normalized_pass, bool parse_special) const {
  const auto& pats = normalized_pass ? normalized_ : raw_;
  const auto& first = normalized_pass ? normalized_first_ : raw_first_;
  std::vector<Segment> out;
  size_t done = 0;  // end of the last emitted segment
  auto is_word = [](std::string_view text, size_t at, bool before) {
    if (before) {
      if (at == 0) return false;
      size_t b = at - 1;
      while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
      return is_word_char(next_char(text, b));
    }
    return at < text.size() && is_word_char(next_char(text, at));
  };
  for (size_t pos = 0; !pats.empty() && pos < s.size();) {
    const auto c = static_cast<unsigned char>(s[pos]);
    const Pattern* hit = nullptr;
    for (uint32_t k = first[c]; k < first[c + 1] && !hit; ++k)
      if (s.compare(pos, pats[k].text.size(), pats[k].text) == 0) hit = &pats[k];
    if (!hit) {
      ++pos;
      continue;
    }
    const AddedToken& tok = tokens_[hit->token];
    size_t start = pos, stop = pos + hit->text.size();
    pos = stop;
    if (tok.special && !parse_special) continue;  // consumed as text, as HF's encode_special_tokens
    if (tok.single_word && (is_word(s, start, true) || is_word(s, stop, false))) continue;
    if (tok.lstrip)
      while (start > done && static_cast<unsigned char>(s[start - 1]) < 0x80 &&
             is_whitespace(static_cast<unsigned char>(s[start - 1])))
        --start;
    if (tok.rstrip)
      for (size_t i = stop; i < s.size() && is_whitespace(next_char(s, i));) stop = i;
    if (start > done) out.push_back({-1, done, start});
    out.push_back({tok.id, start, stop});
    done = pos = stop;
  }
  if (done < s.size() || out.empty()) out.push_back({-1, done, s.size()});
  return out;
}

}  // namespace wick::text::hf
