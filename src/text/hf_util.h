// Shared pieces of the tokenizer pipeline: UTF-8 repair, PCRE2 regexes, and HF's
// "split by matches with a delimiter behavior" that Split, Punctuation, Digits, Metaspace
// and WhitespaceSplit are all made of.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::text::hf {

using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

// s with every ill-formed UTF-8 sequence replaced by U+FFFD, one per maximal invalid
// subpart (Rust's String::from_utf8_lossy, which HF's decoders use).
std::string to_valid_utf8(std::string_view s);
// Whether s ends inside a character (a truncated multi-byte sequence).
bool ends_with_replacement(std::string_view s);

// A PCRE2 pattern compiled once (UTF + UCP, JIT when available); safe to share across threads.
class Regex {
 public:
  // Format error naming `where` and PCRE2's message when the pattern does not compile.
  Regex(std::string_view pattern, std::string_view where);
  // Non-overlapping matches, left to right (an empty match advances one character).
  // InvalidArgument if s is not valid UTF-8 or the match exceeds PCRE2's limits.
  std::vector<Span> matches(std::string_view s) const;

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior split_behavior(std::string_view name);  // Unsupported for other names

// HF's NormalizedString::split: the matches and the text between them, combined per
// behavior (invert swaps which is which); empty spans dropped.
std::vector<Span> split_spans(std::string_view s, const std::vector<Span>& matches, SplitBehavior behavior,
                              bool invert = false);

// Every character for which pred(code point) holds, as a one-character match.
template <class Pred>
std::vector<Span> char_matches(std::string_view s, Pred pred);

// Decodes the code point at s[i] of valid UTF-8, returning it and advancing i.
inline char32_t next_char(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return ++i, b;
  const int n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
  char32_t cp = b & (0x7F >> n);
  for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

template <class Pred>
std::vector<Span> char_matches(std::string_view s, Pred pred) {
  std::vector<Span> out;
  for (size_t i = 0; i < s.size();) {
    const size_t b = i;
    if (pred(next_char(s, i))) out.emplace_back(b, i);
  }
  return out;
}

// GPT-2's bytes_to_unicode(): the character that stands for byte b in byte-level
// vocabularies (printable bytes stand for themselves, the others are shifted to U+0100.. in
// byte order, so that every byte is a visible character).
char32_t byte_char(uint8_t b);

// Rust's char::is_whitespace (White_Space), HF's is_punc, char::is_numeric, regex \w.
bool is_whitespace(char32_t c);
bool is_punctuation(char32_t c);
bool is_numeric(char32_t c);
bool is_word_char(char32_t c);

}  // namespace wick::text::hf
