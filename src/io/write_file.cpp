#include "io/write_file.h"

#include <unistd.h>

#include <fstream>

#include "wick/error.h"

namespace wick::io {

void write_file_atomically(const std::filesystem::path& path, std::string_view op,
                           const std::function<void(std::ostream&)>& write) {
  std::filesystem::path tmp = path;
  tmp += ".wick-tmp-" + std::to_string(::getpid());
  auto remove_tmp = [&] {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
  };
  {
    std::ofstream os(tmp, std::ios::binary | std::ios::trunc);
    WICK_CHECK(os, Io, op, ": cannot open '", tmp.string(), "' for writing");
    try {
      write(os);
      os.flush();
    } catch (...) {
      os.close();
      remove_tmp();
      throw;
    }
    os.close();  // close() flushes too: a full disk may only show here
    if (!os) {
      remove_tmp();
      fail(ErrorKind::Io, op, ": writing '", path.string(), "' failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    remove_tmp();
    fail(ErrorKind::Io, op, ": cannot replace '", path.string(), "': ", ec.message());
  }
}

}  // namespace wick::io
