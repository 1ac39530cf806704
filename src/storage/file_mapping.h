// A read-only memory mapping of a whole file (POSIX mmap), unmapped on destruction.
#pragma once

#include <cstddef>
#include <filesystem>

namespace wick {

class FileMapping {
 public:
  explicit FileMapping(const std::filesystem::path& path);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace wick
