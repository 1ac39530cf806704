// A minimal reader of the golden safetensors files written by tests/data/gen_*.py, for
// tests that run before wick's own safetensors loader exists: 8-byte little-endian
// header length, JSON header {name: {dtype, shape, data_offsets}}, raw data.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "wick/wick.h"

namespace wick::test {

class GoldenFile {
 public:
  explicit GoldenFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("golden file missing: " + path + " (run its tests/data/gen_*.py)");
    uint64_t header_len = 0;
    f.read(reinterpret_cast<char*>(&header_len), 8);
    std::string header(header_len, '\0');
    f.read(header.data(), std::streamsize(header_len));
    data_.assign(std::istreambuf_iterator<char>(f), {});
    const nlohmann::json index = nlohmann::json::parse(header);  // outlives the loop below
    for (const auto& item : index.items()) {
      const std::string& name = item.key();
      const nlohmann::json& info = item.value();
      if (name == "__metadata__") continue;
      Entry e;
      e.dtype = dtype_of_code(info["dtype"].get<std::string>());
      for (auto d : info["shape"]) e.shape.push_back(d.get<int64_t>());
      e.begin = info["data_offsets"][0].get<size_t>();
      e.end = info["data_offsets"][1].get<size_t>();
      entries_[name] = e;
    }
  }

  // The named tensor on the CPU in its stored dtype; throws if absent.
  Tensor get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw std::runtime_error("golden tensor missing: " + name);
    const Entry& e = it->second;
    const size_t count = (e.end - e.begin) / dtype_size(e.dtype);
    return Tensor::from_data(data_.data() + e.begin, e.dtype, count, Shape(e.shape));
  }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    size_t begin, end;
  };
  static DType dtype_of_code(const std::string& code) {
    static const std::map<std::string, DType> codes = {{"U8", DType::U8},     {"U32", DType::U32}, {"I64", DType::I64},
                                                       {"BF16", DType::BF16}, {"F16", DType::F16}, {"F32", DType::F32},
                                                       {"F64", DType::F64}};
    return codes.at(code);
  }
  std::vector<char> data_;
  std::map<std::string, Entry> entries_;
};

}  // namespace wick::test
