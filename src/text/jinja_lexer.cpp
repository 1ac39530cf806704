// The chat-template lexer, after jinja2's lexer.py: text runs up to the next "{{", "{%" or
// "{#"; the text is then trimmed by the tag's markers and the environment's options
// (lstrip_blocks, trim_blocks), and the tag body is split into expression tokens, where "}}"
// or "%}" only ends the tag when the brackets opened inside it are closed.
#include "text/jinja_lexer.h"

#include <cctype>
#include <charconv>
#include <cstring>

#include "text/unicode.h"
#include "wick/error.h"

namespace wick::text::jinja {

std::string normalize_newlines(std::string_view s) {
  // Python's str.splitlines() boundaries, joined with "\n", one trailing break dropped.
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c == '\r') {
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += '\n';
    } else if (c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) {
      out += '\n';
    } else if (c == 0xc2 && i + 1 < s.size() && (unsigned char)s[i + 1] == 0x85) {
      out += '\n';
      ++i;
    } else if (c == 0xe2 && i + 2 < s.size() && (unsigned char)s[i + 1] == 0x80 &&
               ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9)) {
      out += '\n';
      i += 2;
    } else {
      out += char(c);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string location(std::string_view source, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      col = 1;
    } else if ((source[i] & 0xc0) != 0x80) {
      ++col;
    }
  }
  return detail::cat("line ", line, ":", col);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

[[noreturn]] void syntax_error(std::string_view src, size_t pos, std::string_view what) {
  fail(ErrorKind::Format, "chat template ", location(src, pos), ": ", what);
}

// Python's unicode-escape decoding of a string literal's body (what jinja2 applies).
std::string unescape(std::string_view src, size_t at, std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t n) {
      uint32_t cp = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit((unsigned char)body[i + k]))
          syntax_error(src, at, "truncated \\x/\\u escape in a string literal");
        char h = body[i + k];
        cp = cp * 16 + uint32_t(std::isdigit((unsigned char)h) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      i += n;
      if (cp > 0x10ffff) syntax_error(src, at, "escape outside the Unicode range");
      unicode::append_utf8(out, char32_t(cp));
    };
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = uint32_t(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            cp = cp * 8 + uint32_t(body[++i] - '0');
          unicode::append_utf8(out, char32_t(cp));
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : s_(src) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      size_t m = find_tag(pos_);
      std::string_view text = s_.substr(pos_, (m == std::string_view::npos ? s_.size() : m) - pos_);
      if (m == std::string_view::npos) {
        emit_text(text, pos_);
        break;
      }
      char kind = s_[m + 1];  // '{', '%' or '#'
      char sign = m + 2 < s_.size() ? s_[m + 2] : '\0';
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop spaces/tabs before a block or comment alone at a line's start.
        size_t l = text.rfind('\n');
        size_t l_pos = l == std::string_view::npos ? 0 : l + 1;
        if (l_pos > 0 || line_starting) {
          bool blank = true;
          for (size_t i = l_pos; i < text.size(); ++i)
            if (text[i] != ' ' && text[i] != '\t') blank = false;
          if (blank) text = text.substr(0, l_pos);
        }
      }
      emit_text(text, pos_);
      size_t body = m + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        line_starting = comment(m, body);
      } else if (kind == '%' && raw_block(m, body)) {
        line_starting = false;
      } else {
        line_starting = tag(kind, m, body);
      }
    }
    out_.push_back(Token{Tok::Eof, "", s_.size()});
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string_view::npos; i = s_.find('{', i + 1))
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return std::string_view::npos;
  }
  static std::string_view rstrip(std::string_view t) {
    while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
    return t;
  }
  void emit_text(std::string_view t, size_t at) {
    if (!t.empty()) out_.push_back(Token{Tok::Text, std::string(t), at});
  }
  // After a tag's end: `-` strips all following whitespace; trim_blocks drops one newline
  // after a block or comment end unless it is marked `+`. Returns whether the next text
  // starts a line (jinja2's line_starting, which lstrip_blocks consults).
  bool after_end(size_t p, char sign, bool trim) {
    bool nl = false;
    if (sign == '-') {
      while (p < s_.size() && is_space(s_[p])) nl = s_[p++] == '\n';
    } else if (sign != '+' && trim && p < s_.size() && s_[p] == '\n') {
      ++p;
      nl = true;
    }
    pos_ = p;
    return nl;
  }
  bool comment(size_t start, size_t body) {
    size_t e = s_.find("#}", body);
    if (e == std::string_view::npos) syntax_error(s_, start, "missing end of comment tag");
    char sign = e > body && (s_[e - 1] == '-' || s_[e - 1] == '+') ? s_[e - 1] : '\0';
    return after_end(e + 2, sign, true);
  }
  // {% raw %}...{% endraw %}: the text between is output as it is.
  bool raw_block(size_t start, size_t body) {
    size_t p = body;
    while (p < s_.size() && is_space(s_[p])) ++p;
    if (s_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    size_t q = p;
    while (q < s_.size() && is_space(s_[q])) ++q;
    char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : '\0';
    if (s_.compare(q + (sign ? 1 : 0), 2, "%}") != 0) return false;
    after_end(q + (sign ? 1 : 0) + 2, sign == '-' ? '-' : '+', false);
    for (size_t e = s_.find("{%", pos_); e != std::string_view::npos; e = s_.find("{%", e + 2)) {
      size_t r = e + 2;
      char open_sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r++] : '\0';
      while (r < s_.size() && is_space(s_[r])) ++r;
      if (s_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < s_.size() && is_space(s_[r])) ++r;
      char close_sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r++] : '\0';
      if (s_.compare(r, 2, "%}") != 0) continue;
      std::string_view text = s_.substr(pos_, e - pos_);
      emit_text(open_sign == '-' ? rstrip(text) : text, pos_);
      after_end(r + 2, close_sign, true);
      return true;
    }
    syntax_error(s_, start, "missing {% endraw %} for this {% raw %}");
  }
  bool tag(char kind, size_t start, size_t p) {
    out_.push_back(Token{kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", start});
    std::vector<char> balance;
    char close = kind == '{' ? '}' : '%';
    while (true) {
      while (p < s_.size() && is_space(s_[p])) ++p;
      if (p >= s_.size())
        syntax_error(
            s_, start,
            kind == '{' ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        char sign = (s_[p] == '-' || (s_[p] == '+' && kind == '%')) ? s_[p] : '\0';
        size_t q = p + (sign ? 1 : 0);
        if (q + 1 < s_.size() && s_[q] == close && s_[q + 1] == '}') {
          out_.push_back(Token{kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", p});
          return after_end(q + 2, sign, kind == '%');
        }
      }
      p = expression_token(p, balance, start);
    }
  }
  size_t expression_token(size_t p, std::vector<char>& balance, size_t tag_start) {
    char c = s_[p];
    if (std::isalpha((unsigned char)c) || c == '_') {
      size_t e = p;
      while (e < s_.size() && (std::isalnum((unsigned char)s_[e]) || s_[e] == '_')) ++e;
      out_.push_back(Token{Tok::Name, std::string(s_.substr(p, e - p)), p});
      return e;
    }
    if (std::isdigit((unsigned char)c)) return number(p);
    if (c == '\'' || c == '"') {
      size_t e = p + 1;
      while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
      if (e >= s_.size()) syntax_error(s_, p, "unterminated string literal");
      out_.push_back(Token{Tok::String, unescape(s_, p, s_.substr(p + 1, e - p - 1)), p});
      return e + 1;
    }
    static constexpr const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two)
      if (s_.compare(p, 2, op) == 0) {
        out_.push_back(Token{Tok::Op, op, p});
        return p + 2;
      }
    if (!std::strchr("+-*/%~<>=()[]{},.:|;", c) || c == '\0')
      syntax_error(s_, p, detail::cat("unexpected character '", c, "' in a tag"));
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty() || balance.back() != c) syntax_error(s_, p, detail::cat("unexpected '", c, "'"));
      balance.pop_back();
    }
    (void)tag_start;
    out_.push_back(Token{Tok::Op, std::string(1, c), p});
    return p + 1;
  }
  size_t number(size_t p) {
    size_t e = p;
    std::string digits;
    auto run = [&] {
      while (e < s_.size() && (std::isdigit((unsigned char)s_[e]) ||
                               (s_[e] == '_' && e + 1 < s_.size() && std::isdigit((unsigned char)s_[e + 1]))))
        if (s_[e++] != '_') digits += s_[e - 1];
    };
    run();
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit((unsigned char)s_[e + 1])) {
      is_float = true;
      digits += s_[e++];
      run();
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && std::isdigit((unsigned char)s_[q])) {
        is_float = true;
        digits += 'e';
        digits += s_.substr(e + 1, q - e - 1);
        e = q;
        run();
      }
    }
    Token t{is_float ? Tok::Float : Tok::Int, digits, p};
    if (is_float) {
      std::from_chars(digits.data(), digits.data() + digits.size(), t.f);
    } else {
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.i);
      if (r.ec != std::errc()) syntax_error(s_, p, "integer literal out of the 64-bit range");
    }
    out_.push_back(std::move(t));
    return e;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace wick::text::jinja
