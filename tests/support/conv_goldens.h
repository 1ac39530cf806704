// Reads tests/data/conv.safetensors (written by tests/data/gen_conv.py) for test_conv and
// test_pool: a minimal safetensors reader (F32/F64 only) until wick's own loader lands.
// Case parameters are JSON strings in the file's __metadata__.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/golden.h"

namespace wick::test {

class ConvGoldens {
 public:
  static const ConvGoldens& get() {
    static const ConvGoldens g(data_path("conv.safetensors"));
    return g;
  }
  // Case name -> parameters ({"op": ..., stride, padding, ...}).
  const std::map<std::string, nlohmann::json>& cases() const { return cases_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  // A CPU tensor of the stored dtype.
  const Tensor& tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error("conv goldens: no tensor " + name);
    return it->second;
  }

 private:
  explicit ConvGoldens(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("conv goldens: cannot open " + path);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    uint64_t hlen = 0;
    std::memcpy(&hlen, bytes.data(), 8);  // little-endian host assumed (x86-64, arm64)
    const auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(hlen));
    const char* data = bytes.data() + 8 + hlen;
    for (const auto& [key, val] : header.items()) {
      if (key == "__metadata__") {
        for (const auto& [name, params] : val.items()) cases_[name] = nlohmann::json::parse(params.get<std::string>());
        continue;
      }
      const DType dt = val["dtype"] == "F32" ? DType::F32 : DType::F64;
      std::vector<int64_t> shape = val["shape"].get<std::vector<int64_t>>();
      const auto off = val["data_offsets"].get<std::vector<size_t>>();
      tensors_.emplace(
          key, Tensor::from_data(data + off[0], dt, (off[1] - off[0]) / dtype_size(dt), Shape(std::move(shape))));
    }
  }
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, nlohmann::json> cases_;
};

}  // namespace wick::test
