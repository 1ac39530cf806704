// UTF-8 repair, the PCRE2 wrapper, split behaviors and character classes.
#include "text/hf_util.h"

#include <algorithm>
#include <array>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "wick/error.h"

namespace wick::text::hf {
namespace {

// Length of the well-formed sequence at s[i], or -(bytes of its maximal invalid subpart).
int sequence_length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  int need;
  unsigned lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlong forms
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return -1;
  }
  for (int k = 1; k < need; ++k) {
    if (i + k >= s.size()) return -k;
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return -k;
  }
  return need;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int n = sequence_length(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += kReplacement;
      i += -n;
    }
  }
  return out;
}

bool ends_with_replacement(std::string_view s) { return s.ends_with(kReplacement); }

Regex::Regex(std::string_view pattern, std::string_view where) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                 &code, &offset, nullptr);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    fail(ErrorKind::Format, where, ": regex does not compile at offset ", offset, ": ", reinterpret_cast<char*>(msg));
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // best effort: the interpreter runs without it
  code_ = std::shared_ptr<void>(re, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
}

std::vector<Span> Regex::matches(std::string_view s) const {
  auto* re = static_cast<pcre2_code*>(code_.get());
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create_from_pattern(re, nullptr),
                                                                    pcre2_match_data_free);
  WICK_CHECK(md, OutOfMemory, "tokenizer: no memory for regex match data");
  std::vector<Span> out;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  for (size_t pos = 0; pos <= s.size();) {
    // PCRE2 validates the whole subject on each call unless told not to: once is enough.
    const int rc = pcre2_match(re, subject, s.size(), pos, pos ? PCRE2_NO_UTF_CHECK : 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    WICK_CHECK(rc >= 0, InvalidArgument, "tokenizer: regex match failed (PCRE2 error ", rc, ")");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (ov[1] > ov[0]) {
      out.emplace_back(ov[0], ov[1]);
      pos = ov[1];
    } else {  // empty match: step over one character
      size_t next = ov[0];
      if (next >= s.size()) break;
      next_char(s, next);
      pos = next;
    }
  }
  return out;
}

SplitBehavior split_behavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail(ErrorKind::Unsupported, "tokenizer.json: split behavior '", name, "' is not supported");
}

std::vector<Span> split_spans(std::string_view s, const std::vector<Span>& matches, SplitBehavior behavior,
                              bool invert) {
  // The whole string as alternating (span, is_match) runs, as HF's find_matches gives them.
  std::vector<std::pair<Span, bool>> runs;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (b > prev) runs.push_back({{prev, b}, invert});
    runs.push_back({{b, e}, !invert});
    prev = e;
  }
  if (prev < s.size()) runs.push_back({{prev, s.size()}, invert});

  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& [span, m] : runs)
        if (!m) out.push_back(span);
      break;
    case SplitBehavior::Isolated:
      for (const auto& r : runs) out.push_back(r.first);
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& [span, m] : runs) {
        if (m && !previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = m;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (size_t k = runs.size(); k-- > 0;) {
        const auto& [span, m] = runs[k];
        if (m && !previous_match && !out.empty())
          out.back().first = span.first;
        else
          out.push_back(span);
        previous_match = m;
      }
      std::reverse(out.begin(), out.end());
      break;
    case SplitBehavior::Contiguous:
      for (const auto& [span, m] : runs) {
        if (m == previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = m;
      }
      break;
  }
  std::erase_if(out, [](const Span& sp) { return sp.first == sp.second; });
  return out;
}

char32_t byte_char(uint8_t b) {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int v = 0; v < 256; ++v) {
      const bool printable = (v >= 33 && v <= 126) || (v >= 161 && v <= 172) || (v >= 174 && v <= 255);
      t[v] = printable ? static_cast<char32_t>(v) : next++;
    }
    return t;
  }();
  return table[b];
}

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_numeric(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
}

bool is_word_char(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_ME) || cat == UTF8PROC_CATEGORY_ND ||
         cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_PC;
}

}  // namespace wick::text::hf
