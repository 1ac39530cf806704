// File formats: safetensors (load by memory mapping, save).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wick/storage.h"
#include "wick/tensor.h"

namespace wick::safetensors {

// One tensor entry of a safetensors header.
struct TensorInfo {
  std::string name;
  std::string dtype;                // as written in the file: "F32", "BF16", "F8_E4M3", ...
  std::optional<DType> wick_dtype;  // the dtype wick computes with, if any
  Shape shape;
  size_t begin = 0, end = 0;  // byte range inside the data section
  size_t nbytes() const { return end - begin; }
};

// A parsed and validated safetensors file. Validation follows the format's reference
// implementation: 8-byte little-endian header length; header <= 100,000,000 bytes of
// UTF-8 JSON object; known dtypes; offsets sorted, contiguous, without gaps or overlap;
// byte sizes equal to dtype size x shape (overflow-checked); no trailing bytes;
// __metadata__ a string-to-string map. Any violation raises ErrorKind::Format.
class File {
 public:
  // Memory-maps path (read-only) and validates it.
  static File open(const std::filesystem::path& path);
  // Validates bytes already in memory (a CPU buffer); the File keeps the buffer alive.
  static File parse(Buffer bytes);

  // Tensors in data order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t header_size() const { return header_size_; }
  size_t file_size() const { return bytes_.nbytes(); }
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;

  // A CPU tensor viewing the file's bytes without a copy (copied into fresh memory only
  // when the data is not aligned for its dtype); read-only when the bytes are, as a file
  // mapping is. Unsupported for dtypes wick does not compute on; use raw() for those.
  Tensor tensor(const std::string& name) const;
  // The tensor's bytes, whatever its dtype.
  Buffer raw(const std::string& name) const;

 private:
  Buffer bytes_;
  size_t header_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a file (those of dtypes wick computes on), by name.
std::map<std::string, Tensor> load(const std::filesystem::path& path);

// Writes tensors (in the given order) and metadata; tensors on any device.
void save(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata = {});
// The same as an in-memory byte string.
std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace wick::safetensors
