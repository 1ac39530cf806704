#include "text/utf8_ranges.h"

#include <algorithm>

#include "text/unicode.h"

namespace wick::text {

std::vector<CodeRange> normalize(std::vector<CodeRange> ranges) {
  std::vector<CodeRange> cut;
  for (const CodeRange& r : ranges) {
    if (r.lo > r.hi) continue;
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      cut.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) cut.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) cut.push_back({0xE000, r.hi});
  }
  std::sort(cut.begin(), cut.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  std::vector<CodeRange> out;
  for (const CodeRange& r : cut) {
    if (!out.empty() && r.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

std::vector<CodeRange> complement(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> out;
  char32_t next = 0;
  for (const CodeRange& r : normalize(ranges)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return normalize(std::move(out));
}

namespace {

int encoded_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// lo..hi of one encoded length: split until every byte position is a plain range.
void split(char32_t lo, char32_t hi, std::vector<Utf8Sequence>& out) {
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t(1) << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  unicode::append_utf8(a, lo);
  unicode::append_utf8(b, hi);
  Utf8Sequence s;
  for (size_t k = 0; k < a.size(); ++k) s.push_back({uint8_t(a[k]), uint8_t(b[k])});
  out.push_back(std::move(s));
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodeRange>& ranges) {
  std::vector<Utf8Sequence> out;
  constexpr char32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (CodeRange r : ranges) {
    for (const char32_t end : kLengthEnds) {
      if (r.lo > end) continue;
      const char32_t hi = std::min(r.hi, end);
      split(r.lo, hi, out);
      if (hi == r.hi) break;
      r.lo = hi + 1;
    }
  }
  return out;
}

}  // namespace wick::text
