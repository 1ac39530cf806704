// Lookups over the generated tables (binary search) and a strict UTF-8 decoder.
#include "text/unicode.h"

#include <algorithm>

#include "text/unicode_tables.h"

namespace wick::text::unicode {
namespace {

bool in_ranges(std::span<const Range> table, char32_t cp) {
  auto it = std::upper_bound(table.begin(), table.end(), cp, [](char32_t c, const Range& r) { return c < r.lo; });
  return it != table.begin() && cp <= std::prev(it)->hi;
}

const Mapping* find_mapping(std::span<const Mapping> table, char32_t cp) {
  auto it = std::lower_bound(table.begin(), table.end(), cp, [](const Mapping& m, char32_t c) { return m.cp < c; });
  return it != table.end() && it->cp == cp ? &*it : nullptr;
}

// Hangul syllable decomposition constants (Unicode chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = 19 * kNCount;

}  // namespace

Decoded decode_utf8(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  uint32_t len;
  char32_t cp, min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {b0, 1, false};
  }
  if (pos + len > s.size()) return {b0, 1, false};
  for (uint32_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return {b0, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not well-formed UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {b0, 1, false};
  return {cp, len, true};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(letter_ranges(), cp);
}
bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(number_ranges(), cp);
}
bool is_white_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return in_ranges(white_space_ranges(), cp);
}
bool is_mark_nonspacing(char32_t cp) { return cp >= 0x300 && in_ranges(mark_nonspacing_ranges(), cp); }
bool is_punctuation(char32_t cp) { return in_ranges(punctuation_ranges(), cp); }
bool is_other(char32_t cp) { return in_ranges(other_ranges(), cp); }

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  auto table = combining_class_ranges();
  auto it = std::upper_bound(table.begin(), table.end(), cp, [](char32_t c, const ClassRange& r) { return c < r.lo; });
  return it != table.begin() && cp <= std::prev(it)->hi ? std::prev(it)->ccc : 0;
}

void append_nfd(std::u32string& out, char32_t cp) {
  if (cp < 0xC0) {
    out += cp;
    return;
  }
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out += kLBase + s / kNCount;
    out += kVBase + (s % kNCount) / kTCount;
    if (s % kTCount != 0) out += kTBase + s % kTCount;
    return;
  }
  if (const Mapping* m = find_mapping(decomposition_map(), cp)) {
    auto pool = decomposition_pool().subspan(m->offset, m->length);
    out.append(pool.begin(), pool.end());
  } else {
    out += cp;
  }
}

void canonical_order(std::u32string& s) {
  size_t i = 0;
  while (i < s.size()) {
    if (combining_class(s[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && combining_class(s[j]) != 0) ++j;
    if (j - i > 1)
      std::stable_sort(s.begin() + i, s.begin() + j,
                       [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

void append_lower(std::u32string& out, char32_t cp) {
  if (cp < 0x80) {
    out += (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return;
  }
  if (const Mapping* m = find_mapping(lowercase_map(), cp)) {
    auto pool = lowercase_pool().subspan(m->offset, m->length);
    out.append(pool.begin(), pool.end());
  } else {
    out += cp;
  }
}

}  // namespace wick::text::unicode
