#include "storage/file_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "wick/error.h"

namespace wick {

FileMapping::FileMapping(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  WICK_CHECK(fd >= 0, Io, "open: cannot open '", path.string(), "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    fail(ErrorKind::Io, "open: '", path.string(), "' is not a regular file", err ? ": " : "",
         err ? std::strerror(err) : "");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    // MAP_PRIVATE + PROT_READ: the mapping can never write the file.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    WICK_CHECK(p != MAP_FAILED, Io, "mmap: cannot map '", path.string(), "': ", std::strerror(err));
    data_ = static_cast<unsigned char*>(p);
  } else {
    ::close(fd);
  }
}

FileMapping::~FileMapping() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace wick
