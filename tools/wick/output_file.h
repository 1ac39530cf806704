// An output file named on the command line (`bench --json F`): opened when the command
// starts, so an unwritable path fails at once instead of after a run of minutes, and
// checked after writing, so a full disk is an error rather than a truncated file.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "wick/error.h"

namespace wick::cli {

class OutputFile {
 public:
  // path "": no file is wanted; write() does nothing.
  OutputFile(std::string path, std::string command) : path_(std::move(path)), command_(std::move(command)) {
    if (path_.empty()) return;
    f_.open(path_, std::ios::binary | std::ios::trunc);
    WICK_CHECK(f_.is_open(), Io, command_, ": cannot write '", path_, "': ", std::strerror(errno));
  }
  // Writes `text`, then closes the file; throws ErrorKind::Io if any of it failed.
  void write(const std::string& text) {
    if (path_.empty()) return;
    errno = 0;
    f_ << text;
    f_.close();
    WICK_CHECK(!f_.fail(), Io, command_, ": writing '", path_, "' failed", errno ? ": " : "",
               errno ? std::strerror(errno) : "");
  }

 private:
  std::string path_, command_;
  std::ofstream f_;
};

}  // namespace wick::cli
