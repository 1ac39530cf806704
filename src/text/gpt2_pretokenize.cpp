// GPT-2's pre-tokenization regex, hand-coded:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// At each position the alternatives are tried in order and the first that matches wins, as a
// backtracking regex engine does. Bytes that are not valid UTF-8 count as one "other" unit
// each, so every byte of the input lands in exactly one piece.
#include "text/unicode.h"
#include "wick/text/gpt2_tokenizer.h"

namespace wick::text {
namespace {

enum class Class : uint8_t { Letter, Number, Space, Other };

struct Unit {
  char32_t cp;  // 0xFFFFFFFF for an invalid byte
  Class cls;
  size_t begin;  // byte offset
};

Class classify(char32_t cp) {
  if (unicode::is_letter(cp)) return Class::Letter;
  if (unicode::is_number(cp)) return Class::Number;
  if (unicode::is_white_space(cp)) return Class::Space;
  return Class::Other;
}

// Length in units of a contraction ('s 't 're 've 'm 'll 'd; lowercase only) at i, or 0.
size_t contraction_at(const std::vector<Unit>& u, size_t i) {
  if (u[i].cp != U'\'' || i + 1 >= u.size()) return 0;
  const char32_t a = u[i + 1].cp;
  if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
  if (i + 2 >= u.size()) return 0;
  const char32_t b = u[i + 2].cp;
  if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
  return 0;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> Gpt2Tokenizer::pretokenize(std::string_view text) {
  std::vector<Unit> units;
  units.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Decoded d = unicode::decode_utf8(text, pos);
    units.push_back(d.valid ? Unit{d.cp, classify(d.cp), pos} : Unit{0xFFFFFFFFu, Class::Other, pos});
    pos += d.length;
  }
  const size_t n = units.size();
  auto byte_at = [&](size_t unit) { return unit < n ? units[unit].begin : text.size(); };

  std::vector<std::pair<size_t, size_t>> pieces;
  size_t i = 0;
  while (i < n) {
    size_t end;
    if (size_t c = contraction_at(units, i)) {
      end = i + c;
    } else {
      // ` ?X+` for X in L, N, other: an optional single U+0020 before a run of one class.
      size_t start = i;
      if (units[i].cp == U' ' && i + 1 < n && units[i + 1].cls != Class::Space) start = i + 1;
      const Class cls = units[start].cls;
      if (cls != Class::Space) {
        end = start + 1;
        while (end < n && units[end].cls == cls) ++end;
      } else {
        // Whitespace run. `\s+(?!\S)` backtracks to leave the last space before a non-space
        // (it can then prefix the next piece); a lone space there falls through to `\s+`.
        end = i + 1;
        while (end < n && units[end].cls == Class::Space) ++end;
        if (end < n && end - i >= 2) --end;
      }
    }
    pieces.emplace_back(byte_at(i), byte_at(end));
    i = end;
  }
  return pieces;
}

}  // namespace wick::text
