// A minimal safetensors reader for test goldens (F32 tensors only): 8-byte little-endian
// header length, JSON header, packed data. Independent of wick's own loader on purpose.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace wick::test {

struct StTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

inline std::map<std::string, StTensor> read_f32_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("st_reader: cannot open " + path);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) throw std::runtime_error("st_reader: short file " + path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) throw std::runtime_error("st_reader: bad header length in " + path);
  const auto header = nlohmann::json::parse(bytes.substr(8, size_t(n)));
  const char* data = bytes.data() + 8 + n;
  const size_t data_size = bytes.size() - 8 - size_t(n);
  std::map<std::string, StTensor> out;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (info.at("dtype") != "F32") throw std::runtime_error("st_reader: " + name + " is not F32");
    StTensor t;
    t.shape = info.at("shape").get<std::vector<int64_t>>();
    const auto begin = info.at("data_offsets")[0].get<size_t>(), end = info.at("data_offsets")[1].get<size_t>();
    if (begin > end || end > data_size || (end - begin) % 4) throw std::runtime_error("st_reader: bad offsets " + name);
    t.values.resize((end - begin) / 4);
    std::memcpy(t.values.data(), data + begin, end - begin);
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace wick::test
