// `wick convert IN.safetensors OUT.gguf --quantize TYPE`: run the CLI on a small file and
// read the GGUF back with wick's reader (and Python's gguf package when installed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/io.h"
#include "wick/quant.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

Tensor random_tensor(Shape shape, uint32_t seed, DType dt = DType::F32) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(size_t(shape.numel()));
  for (float& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape).to(dt);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::bit_cast<uint32_t>(x[i]) != std::bit_cast<uint32_t>(y[i])) return false;
  return true;
}

class ConvertToGguf : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_convert_" + std::to_string(::getpid()) + "_" + GetParam());
    fs::create_directories(dir_);
    src_ = {{"w", random_tensor(Shape{64, 256}, 1)},               // quantized
            {"h", random_tensor(Shape{8, 512}, 2, DType::F16)},    // quantized from f16
            {"b", random_tensor(Shape{64}, 3)},                    // 1-D: f32
            {"odd", random_tensor(Shape{5, 48}, 4)},               // row not a block multiple: f32
            {"norm16", random_tensor(Shape{7}, 5, DType::F16)},    // 1-D f16: stays f16
            {"bfw", random_tensor(Shape{3, 5}, 6, DType::BF16)}};  // odd bf16: f32
    safetensors::save(dir_ / "in.safetensors", src_, {{"note", "convert test"}});
  }
  void TearDown() override { fs::remove_all(dir_); }
  int convert(const std::string& extra) {
    const std::string cmd = std::string(WICK_CLI_PATH) + " convert " + (dir_ / "in.safetensors").string() + " " +
                            (dir_ / "out.gguf").string() + " " + extra + " > /dev/null";
    return std::system(cmd.c_str());
  }
  fs::path dir_;
  std::vector<std::pair<std::string, Tensor>> src_;
};

TEST_P(ConvertToGguf, QuantizesMatricesAndKeepsTheRest) {
  const GgmlType type = ggml_type_from_name(GetParam());
  ASSERT_EQ(convert("--quantize " + GetParam()), 0);
  const gguf::File f = gguf::File::open(dir_ / "out.gguf");
  ASSERT_EQ(f.tensors().size(), src_.size());
  EXPECT_EQ(f.get("note").get<std::string>(), "convert test");
  const int64_t block = ggml_type_info(type).block_elems;
  for (const auto& [name, src] : src_) {
    SCOPED_TRACE(name);
    const QuantTensor& q = f.tensor(name);
    EXPECT_EQ(q.shape, src.shape());
    const bool quantized = src.rank() == 2 && src.dim(1) % block == 0;
    if (quantized) {
      EXPECT_EQ(q.type, type);
      EXPECT_TRUE(same_bits(dequantize(q), dequantize(quantize(src, type))));
    } else {
      EXPECT_EQ(q.type, src.dtype() == DType::F16 ? GgmlType::F16 : GgmlType::F32);
      EXPECT_TRUE(same_bits(dequantize(q), src.to(DType::F32)));
    }
  }
}

TEST_P(ConvertToGguf, PythonGgufReadsIt) {
  if (std::system("/usr/bin/python3 -c 'import gguf' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 has no gguf package; wick's own reader is checked above";
  ASSERT_EQ(convert("--quantize " + GetParam()), 0);
  const std::string type = GetParam() == "q4_k"   ? "Q4_K"
                           : GetParam() == "q6_k" ? "Q6_K"
                           : GetParam() == "q8_0" ? "Q8_0"
                                                  : "Q4_0";
  const std::string script =
      "import gguf,sys\n"
      "r=gguf.GGUFReader(sys.argv[1])\n"
      "t={x.name:x for x in r.tensors}\n"
      "assert t['w'].tensor_type.name=='" +
      type +
      "', t['w'].tensor_type\n"
      "assert t['b'].tensor_type.name=='F32'\n"
      "assert t['norm16'].tensor_type.name=='F16'\n"
      "assert list(t['w'].shape)==[256,64], t['w'].shape\n";
  const fs::path py = dir_ / "check.py";
  { std::ofstream(py) << script; }
  EXPECT_EQ(std::system(("/usr/bin/python3 " + py.string() + " " + (dir_ / "out.gguf").string()).c_str()), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, ConvertToGguf, ::testing::Values("q8_0", "q4_0", "q4_k", "q6_k"));

TEST(ConvertToGgufPlain, WithoutQuantizeEverythingIsFloat) {
  const fs::path dir = fs::temp_directory_path() / ("wick_convert_plain_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Tensor w = random_tensor(Shape{4, 256}, 9);
  safetensors::save(dir / "in.safetensors", {{"w", w}});
  const std::string cmd = std::string(WICK_CLI_PATH) + " convert " + (dir / "in.safetensors").string() + " " +
                          (dir / "out.gguf").string() + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const gguf::File f = gguf::File::open(dir / "out.gguf");
  EXPECT_EQ(f.tensor("w").type, GgmlType::F32);
  EXPECT_TRUE(same_bits(dequantize(f.tensor("w")), w));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace wick
