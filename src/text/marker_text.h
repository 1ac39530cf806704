// Small text helpers for scanning generated output for markers (stop strings, <think>,
// <tool_call>): shared by stop_text.cpp, reasoning.cpp and tool_calls.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace wick::text {

// The whitespace models put around markers and answers (ASCII space, tab, CR, LF).
inline bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline std::string_view trim_blank(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest suffix of s that is a proper prefix of marker: text that may
// still become the marker, held back until the next piece says.
inline size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.empty() ? 0 : marker.size() - 1); n > 0; --n)
    if (s.ends_with(marker.substr(0, n))) return n;
  return 0;
}

}  // namespace wick::text
