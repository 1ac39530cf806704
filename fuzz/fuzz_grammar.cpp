// libFuzzer target: the grammar compilers and the matcher (wick/text/grammar.h,
// json_schema.h). The first byte picks the input's form (GBNF, a JSON Schema, a regular
// expression), the rest is its text. Compiling either succeeds or throws wick::Error
// InvalidArgument / Unsupported; nothing else may be thrown. A grammar that compiles is then
// walked: with a vocabulary of every byte and a few longer pieces, each step's mask must
// allow a token or the text must be a sentence (no dead ends), an allowed token must be
// taken, a refused one must change nothing, and Grammar::accepts must agree with the matcher.
// Bit 2 of the first byte adds a FreePrefix ("<" ... ">", or from the free text on with bit
// 3): the sentence is then the text after the first ">".
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wick/error.h"
#include "wick/text/grammar.h"
#include "wick/text/json_schema.h"

namespace {

using wick::text::Grammar;
using wick::text::GrammarMatcher;
using wick::text::TokenTable;

std::shared_ptr<const TokenTable> table() {
  static const std::shared_ptr<const TokenTable> t = [] {
    std::vector<std::string> v;
    for (int b = 0; b < 256; ++b) v.emplace_back(1, char(b));
    for (const char* s : {"{\"", "\":", "\",", "\"}", "true", "null", "12", "]]", "[[", "ab", "\xc3\xa9", "\\u00"})
      v.emplace_back(s);
    return std::make_shared<const TokenTable>(std::move(v));
  }();
  return t;
}

bool allowed(const std::vector<uint32_t>& mask, size_t id) { return (mask[id / 32] >> (id % 32)) & 1; }

// The part of text the grammar reads: all of it, or with a prefix what follows its first
// closing marker (nullopt while the prefix is open; trap when the opening is not there).
std::optional<std::string> answer(const std::optional<wick::text::FreePrefix>& p, const std::string& text) {
  if (!p) return text;
  if (text.size() < p->open.size()) {
    if (!p->open.starts_with(text)) __builtin_trap();
    return std::nullopt;
  }
  if (!text.starts_with(p->open)) __builtin_trap();
  const size_t at = text.find(p->close, p->open.size());
  if (at == std::string::npos) return std::nullopt;
  return text.substr(at + p->close.size());
}

void walk(const Grammar& g, std::string_view choices, std::optional<wick::text::FreePrefix> prefix) {
  GrammarMatcher m(g, table(), prefix);
  const size_t n = table()->vocab_size();
  std::vector<uint32_t> mask((n + 31) / 32);
  std::string text;
  for (size_t step = 0; step < 24 && !m.must_end(); ++step) {
    m.fill_mask(mask);
    std::vector<size_t> ids;
    for (size_t id = 0; id < n; ++id)
      if (allowed(mask, id)) ids.push_back(id);
    if (ids.empty()) {
      if (!m.can_end()) __builtin_trap();  // a dead end: neither a token nor the end
      break;
    }
    const uint8_t pick = step < choices.size() ? uint8_t(choices[step]) : uint8_t(step * 7);
    // A token the mask refuses changes nothing.
    for (size_t id = 0; id < n; ++id)
      if (!allowed(mask, id)) {
        if (m.accept(int32_t(id))) __builtin_trap();
        break;
      }
    const size_t id = ids[pick % ids.size()];
    if (!m.accept(int32_t(id))) __builtin_trap();
    text += table()->bytes(int32_t(id));
    const std::optional<std::string> a = answer(prefix, text);
    if (a && !g.accepts_prefix(*a)) __builtin_trap();
  }
  const std::optional<std::string> a = answer(prefix, text);
  if (m.can_end() != (a && g.accepts(*a))) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The walk's choices come from the input's last bytes, the text from the rest.
  const size_t split = in.size() > 24 ? in.size() - 24 : in.size();
  const std::string_view text = in.substr(0, split), choices = in.substr(split);
  try {
    std::string gbnf;
    switch (data[0] % 3) {
      case 0: gbnf = std::string(text); break;
      case 1: gbnf = wick::text::json_schema_to_gbnf(text); break;
      default: gbnf = wick::text::regex_to_gbnf(text); break;
    }
    std::optional<wick::text::FreePrefix> prefix;
    if (data[0] & 4) prefix = wick::text::FreePrefix{data[0] & 8 ? "" : "<", ">"};
    walk(Grammar::from_gbnf(gbnf), choices, prefix);
  } catch (const wick::Error& e) {
    if (e.kind() != wick::ErrorKind::InvalidArgument && e.kind() != wick::ErrorKind::Unsupported) __builtin_trap();
  }
  return 0;
}
