#include "support/golden.h"

#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>

#include "wick/io.h"

namespace wick::test {

std::string data_path(const std::string& name) { return std::string(WICK_TEST_DATA_DIR) + "/" + name; }
std::string shared_fixture_path(const std::string& name) { return std::string(WICK_SHARED_FIXTURES_DIR) + "/" + name; }

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& expected, double rtol,
                                     double atol) {
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << expected.size();
  std::ostringstream os;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], e = expected[i];
    bool ok;
    if (std::isnan(e))
      ok = std::isnan(g);
    else if (std::isinf(e))
      ok = g == e;
    else
      ok = std::fabs(g - e) <= atol + rtol * std::fabs(e);
    if (!ok && ++bad <= 5) os << "\n  [" << i << "] got " << g << ", expected " << e;
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " values differ:" << os.str();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& got, const Tensor& expected, double rtol, double atol) {
  if (got.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape() << " != expected " << expected.shape();
  return all_close(got.to_vector<double>(), expected.to_vector<double>(), rtol, atol);
}

double default_rtol(DType dtype) {
  switch (dtype) {
    case DType::F64: return 1e-12;
    case DType::F32: return 1e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.6e-2;
    default: return 0;
  }
}

const Tensor& golden_tensor(const std::string& file, const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::string, Tensor>> files;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = files.find(file);
  if (it == files.end()) it = files.emplace(file, safetensors::load(data_path(file))).first;
  const auto t = it->second.find(name);
  if (t == it->second.end()) throw std::runtime_error("golden " + name + " missing from " + file);
  return t->second;
}

double attention_tol(DType dtype) {
  switch (dtype) {
    case DType::F64: return 1e-6;
    case DType::F32: return 2e-5;
    case DType::F16: return 3e-3;
    default: return 2e-2;
  }
}

::testing::AssertionResult bits_equal(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " vs " << want.size();
  size_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && ++bad <= 4)
      os << "\n  [" << i << "] got " << got[i] << " (0x" << std::hex << std::bit_cast<uint32_t>(got[i]) << "), want "
         << want[i] << " (0x" << std::bit_cast<uint32_t>(want[i]) << std::dec << ")";
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " differ" << os.str();
  return ::testing::AssertionSuccess();
}

}  // namespace wick::test
