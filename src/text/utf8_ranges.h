// Code point ranges as UTF-8 byte-range sequences: how a character class of a grammar or
// a regular expression becomes byte sets (the matcher reads bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wick::text {

struct CodeRange {
  char32_t lo, hi;  // inclusive
};
struct ByteRange {
  uint8_t lo, hi;  // inclusive
};
using Utf8Sequence = std::vector<ByteRange>;  // one byte range per byte of the encoding

// Sorted, merged, without the surrogates U+D800..U+DFFF (not characters: UTF-8 has none).
std::vector<CodeRange> normalize(std::vector<CodeRange> ranges);
// The code points U+0000..U+10FFFF not in ranges (normalized).
std::vector<CodeRange> complement(const std::vector<CodeRange>& ranges);
// Byte-range sequences whose union is exactly the UTF-8 encodings of the (normalized)
// ranges: the classic split by encoded length and then by continuation-byte alignment.
std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodeRange>& ranges);

}  // namespace wick::text
