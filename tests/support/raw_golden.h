// A tiny safetensors reader for test goldens (F64/F32/I64 only), used until the wick
// safetensors loader lands on main. Loads the whole file once; tensors come back on the
// CPU as fresh contiguous copies.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/golden.h"
#include "wick/wick.h"

namespace wick::test {

class RawGolden {
 public:
  explicit RawGolden(const std::string& file) {
    std::ifstream f(data_path(file), std::ios::binary);
    if (!f) throw std::runtime_error("raw_golden: cannot open " + data_path(file));
    uint64_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    f.read(header.data(), std::streamsize(n));
    header_ = nlohmann::json::parse(header);
    data_.assign(std::istreambuf_iterator<char>(f), {});
  }

  Tensor get(const std::string& name) const {
    if (!header_.contains(name)) throw std::runtime_error("raw_golden: no tensor " + name);
    const auto& e = header_[name];
    const std::string dt = e["dtype"];
    const DType dtype = dt == "F64" ? DType::F64 : dt == "F32" ? DType::F32 : DType::I64;
    std::vector<int64_t> shape = e["shape"].get<std::vector<int64_t>>();
    const size_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    Shape s(shape);
    std::vector<char> bytes(data_.begin() + long(begin), data_.begin() + long(end));
    return Tensor::from_data(bytes.data(), dtype, size_t(s.numel()), s);
  }

 private:
  nlohmann::json header_;
  std::vector<char> data_;
};

inline const RawGolden& red_golden() {
  static const RawGolden g("red.safetensors");
  return g;
}

}  // namespace wick::test
