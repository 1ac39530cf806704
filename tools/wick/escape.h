// Escaping for text listings: names, keys and metadata come from the file and may hold
// anything, including terminal escape sequences and newlines.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace wick::cli {

// s with every control byte (below 0x20, and DEL) written as \xNN, so that an entry
// stays on one line and cannot drive the terminal; other bytes, UTF-8 included, pass.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

}  // namespace wick::cli
