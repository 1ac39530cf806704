// Pre-tokenizers: ByteLevel, Split, Digits, Metaspace, Whitespace, WhitespaceSplit,
// Punctuation, BertPreTokenizer, CharDelimiterSplit and Sequence. Each is a transform of a
// piece plus split_spans() with HF's delimiter behavior.
#include <array>

#include "text/hf_components.h"
#include "text/hf_util.h"
#include "text/unicode.h"

namespace wick::text::hf {
namespace {

// The regex HF's ByteLevel uses when use_regex is set (GPT-2's).
constexpr std::string_view kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Replaces every piece by the pieces spans_of(text) cuts out of it.
template <class F>
void split_each(std::vector<Piece>& pieces, F spans_of) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& p : pieces) {
    for (const auto& [b, e] : spans_of(std::string_view(p.text)))
      out.push_back({b == 0 && e == p.text.size() ? std::move(p.text) : p.text.substr(b, e - b), p.first && b == 0});
  }
  pieces = std::move(out);
}

// The byte alphabet's characters as UTF-8.
const std::array<std::string, 256>& byte_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (int b = 0; b < 256; ++b) unicode::append_utf8(t[b], byte_char(uint8_t(b)));
    return t;
  }();
  return table;
}

class ByteLevel : public PreTokenizer {
 public:
  explicit ByteLevel(const json& j)
      : add_prefix_space_(get_or(j, "add_prefix_space", true, "ByteLevel")),
        use_regex_(get_or(j, "use_regex", true, "ByteLevel")) {
    if (use_regex_) regex_.emplace(kGpt2Regex, "ByteLevel");
  }
  void split(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_)
      for (Piece& p : pieces)
        if (!p.text.starts_with(' ')) p.text.insert(0, 1, ' ');
    if (regex_)
      split_each(pieces,
                 [&](std::string_view s) { return split_spans(s, regex_->matches(s), SplitBehavior::Isolated); });
    const auto& chars = byte_chars();
    for (Piece& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      for (unsigned char c : p.text) mapped += chars[c];
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::optional<Regex> regex_;
};

class Split : public PreTokenizer {
 public:
  explicit Split(const json& j)
      : behavior_(split_behavior(get_field<std::string>(j, "behavior", "Split"))),
        invert_(get_or(j, "invert", false, "Split")) {
    auto [is_regex, pattern] = get_pattern(j, "Split");
    if (is_regex)
      regex_.emplace(pattern, "tokenizer.json: Split pattern");
    else
      literal_ = std::move(pattern);
  }
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](std::string_view s) { return split_spans(s, matches(s), behavior_, invert_); });
  }

 private:
  std::vector<Span> matches(std::string_view s) const {
    if (regex_) return regex_->matches(s);
    std::vector<Span> m;
    if (!literal_.empty())
      for (size_t at = s.find(literal_); at != std::string_view::npos; at = s.find(literal_, at + literal_.size()))
        m.emplace_back(at, at + literal_.size());
    return m;
  }
  SplitBehavior behavior_;
  bool invert_;
  std::string literal_;
  std::optional<Regex> regex_;
};

// Split on characters of a class: Digits, Punctuation, WhitespaceSplit, CharDelimiterSplit.
template <class Pred>
class CharSplit : public PreTokenizer {
 public:
  CharSplit(Pred pred, SplitBehavior behavior) : pred_(pred), behavior_(behavior) {}
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](std::string_view s) { return split_spans(s, char_matches(s, pred_), behavior_); });
  }

 private:
  Pred pred_;
  SplitBehavior behavior_;
};
template <class Pred>
std::unique_ptr<PreTokenizer> char_split(Pred pred, SplitBehavior behavior) {
  return std::make_unique<CharSplit<Pred>>(pred, behavior);
}

class Metaspace : public PreTokenizer {
 public:
  explicit Metaspace(const json& j) : replacement_(get_or<std::string>(j, "replacement", "\u2581", "Metaspace")) {
    WICK_CHECK(!replacement_.empty(), Format, "tokenizer.json: Metaspace replacement is empty");
    prepend_ = prepend_scheme(j);
    split_ = get_or(j, "split", true, "Metaspace");
  }
  void split(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      std::string out;
      for (char c : p.text) c == ' ' ? void(out += replacement_) : void(out += c);
      const bool prepend = prepend_ == PrependScheme::Always || (prepend_ == PrependScheme::First && p.first);
      if (prepend && !out.starts_with(replacement_)) out.insert(0, replacement_);
      p.text = std::move(out);
    }
    if (!split_) return;
    split_each(pieces, [&](std::string_view s) {
      std::vector<Span> m;
      for (size_t at = s.find(replacement_); at != std::string_view::npos; at = s.find(replacement_, at + 1))
        m.emplace_back(at, at + replacement_.size());
      return split_spans(s, m, SplitBehavior::MergedWithNext);
    });
  }

 private:
  std::string replacement_;
  PrependScheme prepend_;
  bool split_;
};

// HF's Whitespace: the matches of \w+|[^\w\s]+ (whitespace removed).
class Whitespace : public PreTokenizer {
 public:
  void split(std::vector<Piece>& pieces) const override {
    split_each(pieces, [](std::string_view s) {
      std::vector<Span> out;
      int run = 0;  // 0 whitespace, 1 word, 2 other
      for (size_t i = 0; i < s.size();) {
        const size_t b = i;
        const char32_t c = next_char(s, i);
        const int kind = is_word_char(c) ? 1 : is_whitespace(c) ? 0 : 2;
        if (kind != 0 && kind == run)
          out.back().second = i;
        else if (kind != 0)
          out.emplace_back(b, i);
        run = kind;
      }
      return out;
    });
  }
};

class PreTokenizerSequence : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void split(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->split(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  const auto type = get_field<std::string>(j, "type", "pre_tokenizer");
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(j);
  if (type == "Split") return std::make_unique<Split>(j);
  if (type == "Metaspace") return std::make_unique<Metaspace>(j);
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return char_split(is_whitespace, SplitBehavior::Removed);
  if (type == "Digits")
    return char_split(is_numeric, get_or(j, "individual_digits", false, "Digits") ? SplitBehavior::Isolated
                                                                                  : SplitBehavior::Contiguous);
  if (type == "Punctuation")
    return char_split(is_punctuation, split_behavior(get_or<std::string>(j, "behavior", "Isolated", "Punctuation")));
  if (type == "CharDelimiterSplit") {
    const auto d = get_field<std::string>(j, "delimiter", "CharDelimiterSplit");
    size_t i = 0;
    const char32_t c = d.empty() ? 0 : next_char(d, i);
    return char_split([c](char32_t x) { return x == c; }, SplitBehavior::Removed);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(char_split(is_whitespace, SplitBehavior::Removed));
    parts.push_back(char_split(is_punctuation, SplitBehavior::Isolated));
    return std::make_unique<PreTokenizerSequence>(std::move(parts));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const json& part : field_ref(j, "pretokenizers", "Sequence")) parts.push_back(make_pre_tokenizer(part));
    std::erase(parts, nullptr);
    return std::make_unique<PreTokenizerSequence>(std::move(parts));
  }
  unsupported("pre_tokenizer", j);
}

}  // namespace wick::text::hf
