// gguf::Writer's tensors made late (add_tensor with a maker): the file is byte-identical to
// one written from stored tensors, makers run once each and in order while the file is
// written (so a converter holds one converted tensor at a time), and a maker that breaks
// its declaration fails the write with no file left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/ops.h"
#include "wick/quant.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Tensor ramp(int64_t rows, int64_t cols) {
  std::vector<float> v(size_t(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 97) * 0.125f - 3.0f;
  return Tensor::from_vector(v, Shape{rows, cols});
}

TEST(GgufWriterStream, MadeLateTensorsWriteTheSameBytes) {
  const fs::path dir = fs::path(::testing::TempDir()) / "wick_gguf_stream";
  fs::create_directories(dir);
  const Tensor a = ramp(4, 64), b = ramp(3, 32);
  gguf::Writer eager, late;
  for (gguf::Writer* w : {&eager, &late}) w->set("general.architecture", gguf::Value(std::string("test")));
  eager.add_tensor(quantize(a, GgmlType::Q8_0, "a"));
  eager.add_tensor("b", b);
  std::vector<std::string> order;
  late.add_tensor("a", GgmlType::Q8_0, a.shape(), [&] {
    order.push_back("a");
    return quantize(a, GgmlType::Q8_0, "a");
  });
  late.add_tensor("b", GgmlType::F32, b.shape(), [&] {
    order.push_back("b");
    return quantize(b, GgmlType::F32, "b");
  });
  eager.write(dir / "eager.gguf");
  late.write(dir / "late.gguf");
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(slurp(dir / "eager.gguf"), slurp(dir / "late.gguf"));
  EXPECT_EQ(late.serialize(), eager.serialize());
  fs::remove_all(dir);
}

TEST(GgufWriterStream, AMakerThatBreaksItsDeclarationLeavesNoFile) {
  const fs::path dir = fs::path(::testing::TempDir()) / "wick_gguf_stream_bad";
  fs::create_directories(dir);
  gguf::Writer w;
  w.add_tensor("a", GgmlType::Q8_0, Shape{4, 64}, [] { return quantize(ramp(4, 32), GgmlType::Q8_0, "a"); });
  EXPECT_WICK_ERROR(w.write(dir / "out.gguf"), ShapeMismatch, "tensor 'a' was declared q8_0 [4, 64]");
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_WICK_ERROR(w.add_tensor("a", GgmlType::F32, Shape{1}, [] { return QuantTensor{}; }), InvalidArgument,
                    "duplicate tensor name 'a'");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace wick
