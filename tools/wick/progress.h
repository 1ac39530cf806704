// A progress bar on stderr for the commands that work through many tensors. It is drawn
// only when stderr is a terminal (a log file or a pipe gets no '\r' redraws), and a line
// it leaves open is ended before anything else goes to stderr (ProgressGuard).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string>

namespace wick::cli {

namespace detail {
inline bool progress_line_open = false;  // a bar is drawn and its line not yet ended
}

inline bool stderr_is_terminal() {
  static const bool tty = ::isatty(::fileno(stderr)) == 1;
  return tty;
}

// "[#####     ] 12/40 name" on stderr, redrawn in place; a newline once done == total.
inline void progress(size_t done, size_t total, const std::string& name) {
  if (!stderr_is_terminal()) return;
  constexpr int kWidth = 30;
  const int filled = total ? int(double(done) / double(total) * kWidth) : kWidth;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40.40s", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(kWidth - filled), ' ').c_str(), done, total, name.c_str());
  detail::progress_line_open = done != total;
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

// Ends the bar's line if one is open, so that a message printed next starts a line of
// its own (the next progress() call redraws the bar below it).
inline void end_progress_line() {
  if (!detail::progress_line_open) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  detail::progress_line_open = false;
}

// Ends an open bar's line when the scope is left, also by an exception, so that the
// error message main() prints is not glued to the bar.
struct ProgressGuard {
  ProgressGuard() = default;
  ProgressGuard(const ProgressGuard&) = delete;
  ProgressGuard& operator=(const ProgressGuard&) = delete;
  ~ProgressGuard() { end_progress_line(); }
};

}  // namespace wick::cli
