#include "text/read_text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "wick/error.h"

namespace wick::text {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  WICK_CHECK(in.good(), Io, what, ": cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream os;
  os << in.rdbuf();
  WICK_CHECK(!in.bad(), Io, what, ": cannot read '", path, "'");
  return std::move(os).str();
}

}  // namespace wick::text
