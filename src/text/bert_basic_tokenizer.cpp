#include "text/bert_basic_tokenizer.h"

#include "text/unicode.h"

namespace wick::text {
namespace {

// BERT counts \t \n \r as whitespace although they are control characters.
bool is_bert_whitespace(char32_t cp) {
  return cp == U'\t' || cp == U'\n' || cp == U'\r' || unicode::is_white_space(cp);
}

// clean_text drops these: NUL, U+FFFD and "control" characters, which Hugging Face extends to
// all of Cc, Cf, Co and Cs (but not \t \n \r).
bool is_dropped(char32_t cp) {
  if (cp == U'\t' || cp == U'\n' || cp == U'\r') return false;
  return cp == 0 || cp == 0xFFFD || unicode::is_other(cp);
}

// The CJK Unified Ideographs blocks BERT pads with spaces (not Hangul, kana or CJK punctuation).
// Extension E starts at U+2B820, but Hugging Face's BertNormalizer (our oracle) has 0x2B920 here,
// so U+2B820..U+2B91F are not spaced out; we follow it to give the same ids.
bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// All ASCII symbols (33-47, 58-64, 91-96, 123-126) count as punctuation, plus Unicode P*.
bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return cp >= 0x80 && unicode::is_punctuation(cp);
}

}  // namespace

std::vector<std::string> bert_basic_tokenize(std::string_view text, bool lowercase) {
  // Normalize: clean, space out ideographs.
  std::u32string s;
  s.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::decode_utf8(text, pos);
    pos += d.length;
    const char32_t cp = d.valid ? d.cp : 0xFFFD;
    if (is_dropped(cp)) continue;
    if (is_bert_whitespace(cp)) {
      s += U' ';
    } else if (is_cjk_ideograph(cp)) {
      s += U' ';
      s += cp;
      s += U' ';
    } else {
      s += cp;
    }
  }
  if (lowercase) {
    // strip_accents (NFD, then drop nonspacing marks) happens before lowercasing, as in HF.
    std::u32string nfd;
    nfd.reserve(s.size());
    for (char32_t cp : s) unicode::append_nfd(nfd, cp);
    unicode::canonical_order(nfd);
    std::u32string lowered;
    lowered.reserve(nfd.size());
    for (char32_t cp : nfd)
      if (!unicode::is_mark_nonspacing(cp)) unicode::append_lower(lowered, cp);
    s = std::move(lowered);
  }
  // Pre-tokenize: whitespace separates words, each punctuation character is a word.
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : s) {
    if (is_bert_whitespace(cp)) {
      flush();
    } else if (is_bert_punctuation(cp)) {
      flush();
      unicode::append_utf8(word, cp);
      flush();
    } else {
      unicode::append_utf8(word, cp);
    }
  }
  flush();
  return words;
}

}  // namespace wick::text
