// The chat-template lexer: splits a template into text and tag tokens with jinja2's
// whitespace rules (trim_blocks, lstrip_blocks, `-`/`+` markers) applied to the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text::jinja {

enum class Tok : uint8_t {
  Text,        // literal output
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,  // text holds the decoded literal
  Int,     // i holds the value
  Float,   // f holds the value
  Op,      // text holds the operator ("+", "//", "(", ...)
  Eof,
};

struct Token {
  Tok kind;
  std::string text;
  size_t pos = 0;  // byte offset in the normalized source, for line:column
  int64_t i = 0;
  double f = 0;
};

// jinja2 reads templates with universal newlines and drops one trailing newline
// (keep_trailing_newline=False); the lexer works on the result.
std::string normalize_newlines(std::string_view source);
// "line L:C" of a byte offset.
std::string location(std::string_view source, size_t pos);
// Throws wick::Error Format naming line:column on an unterminated tag, comment or string.
std::vector<Token> tokenize(std::string_view source);

}  // namespace wick::text::jinja
