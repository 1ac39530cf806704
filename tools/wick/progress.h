// A progress bar on stderr for the commands that work through many tensors.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace wick::cli {

// "[#####     ] 12/40 name" on stderr, redrawn in place; a newline once done == total.
inline void progress(size_t done, size_t total, const std::string& name) {
  constexpr int kWidth = 30;
  const int filled = total ? int(double(done) / double(total) * kWidth) : kWidth;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40.40s", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(kWidth - filled), ' ').c_str(), done, total, name.c_str());
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace wick::cli
