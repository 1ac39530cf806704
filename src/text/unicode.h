// UTF-8 decoding/encoding and the Unicode properties the tokenizers ask about.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wick::text::unicode {

// One decoded unit of a UTF-8 string: a code point and the number of bytes it used. Bytes that
// do not start a well-formed sequence decode one at a time as `valid == false`, so callers can
// keep them byte-exactly (the GPT-2 tokenizer does) or drop them.
struct Decoded {
  char32_t cp;
  uint32_t length;
  bool valid;
};

// Decodes the code point starting at s[pos] (pos < s.size()).
Decoded decode_utf8(std::string_view s, size_t pos);

// Appends the UTF-8 encoding of cp.
void append_utf8(std::string& out, char32_t cp);

bool is_letter(char32_t cp);
bool is_number(char32_t cp);
bool is_white_space(char32_t cp);
bool is_mark_nonspacing(char32_t cp);
bool is_punctuation(char32_t cp);
bool is_other(char32_t cp);  // Cc, Cf, Co, Cs
uint8_t combining_class(char32_t cp);

// Appends the full canonical decomposition of cp (itself when it has none).
void append_nfd(std::u32string& out, char32_t cp);
// Sorts runs of non-starters by canonical combining class (stable), completing NFD.
void canonical_order(std::u32string& s);
// Appends the full lowercase mapping of cp (itself when it has none).
void append_lower(std::u32string& out, char32_t cp);

}  // namespace wick::text::unicode
