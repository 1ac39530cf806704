// `wick convert IN.safetensors OUT.gguf --quantize TYPE`: run the CLI on a small file and
// read the GGUF back with wick's reader (and Python's gguf package when installed); what
// is stored, skipped and said about it; the direction chosen by the input's magic; no
// partial output after a failed write; no progress redraws when stderr is not a tty.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/io.h"
#include "wick/quant.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

// ggml's own Python reader (PyPI gguf) as the oracle: whether /usr/bin/python3 has it, and
// the exit status of `script` (saved in dir as check.py) run on a GGUF file.
bool python_has_gguf() { return std::system("/usr/bin/python3 -c 'import gguf' > /dev/null 2>&1") == 0; }
int run_gguf_check(const fs::path& dir, const std::string& script, const fs::path& gguf_file) {
  const fs::path py = dir / "check.py";
  { std::ofstream(py) << script; }
  return std::system(("/usr/bin/python3 " + py.string() + " " + gguf_file.string()).c_str());
}

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
  if (!python_has_gguf()) GTEST_SKIP() << "python3 has no gguf package; wick's own reader is checked above";
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
  EXPECT_EQ(run_gguf_check(dir_, script, dir_ / "out.gguf"), 0);
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

// ---- the reference file: every dtype, a 0-d tensor, empty tensors ----------------------

class ConvertReference : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_convert_ref_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  test::CliResult convert(const std::string& extra) {
    return test::run_cli("convert '" + test::data_path("reference.safetensors") + "' '" + out().string() + "' " +
                         extra);
  }
  fs::path out() const { return dir_ / "ref.gguf"; }
  fs::path dir_;
};

TEST_F(ConvertReference, StoresWhatGgufCanHoldAndNamesWhatItSkips) {
  const test::CliResult r = convert("");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"u64", "u32", "u16", "u8"})
    EXPECT_NE(r.err.find("convert: '" + std::string(name) + "' skipped: GGUF has no tensor type for " +
                         std::string(name).replace(0, 1, "U") + "\n"),
              std::string::npos)
        << r.err;
  EXPECT_NE(r.err.find("convert: 'bool' skipped: GGUF has no tensor type for BOOL\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("convert: 'f8_e4m3' skipped: GGUF has no tensor type for F8_E4M3\n"), std::string::npos);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 7) << r.err;  // no lines about the stored ones
  EXPECT_NE(r.out.find("0 tensors as -, 12 unquantized, 7 skipped"), std::string::npos) << r.out;

  const gguf::File f = gguf::File::open(out());
  EXPECT_EQ(f.get("greeting").get<std::string>(), "Grüße 世界 🚀");
  ASSERT_EQ(f.tensors().size(), 12u);
  const safetensors::File src = safetensors::File::open(test::data_path("reference.safetensors"));
  EXPECT_EQ(f.tensor("scalar").shape, Shape{});
  EXPECT_EQ(dequantize(f.tensor("scalar")).to_vector<float>(), std::vector<float>{3.5f});
  EXPECT_EQ(f.tensor("f32").type, GgmlType::F32);
  EXPECT_EQ(dequantize(f.tensor("f32")).to_vector<float>(), src.tensor("f32").to_vector<float>());
  EXPECT_EQ(f.tensor("f16").type, GgmlType::F16);  // f16 stays f16 without --dtype
  EXPECT_EQ(dequantize(f.tensor("f16")).to_vector<float>(),
            (std::vector<float>{1.0f, -2.5f, 65504.0f, 6.103515625e-05f}));
  EXPECT_EQ(f.tensor("bf16").type, GgmlType::F32);
  EXPECT_EQ(dequantize(f.tensor("bf16")).to_vector<float>(), (std::vector<float>{1.0f, -2.5f, 3.140625f, 0.5f}));
  EXPECT_EQ(f.tensor("f64").type, GgmlType::F32);
  EXPECT_EQ(dequantize(f.tensor("f64")).to_vector<float>(),
            (std::vector<float>{float(3.141592653589793), float(2.718281828459045), -0.0f}));
  EXPECT_EQ(f.tensor("i64").type, GgmlType::I64);
  EXPECT_EQ(f.tensor("i64").shape, (Shape{2, 3}));
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i64")).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX, -5, 0, 1, int64_t(1) << 40}));
  EXPECT_EQ(f.tensor("i32").type, GgmlType::I32);
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i32")).to_vector<int64_t>(), (std::vector<int64_t>{INT32_MIN, INT32_MAX, 5}));
  EXPECT_EQ(f.tensor("i16").type, GgmlType::I16);
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i16")).to_vector<int64_t>(), (std::vector<int64_t>{-32768, 32767, -1}));
  EXPECT_EQ(f.tensor("i8").type, GgmlType::I8);
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i8")).to_vector<int64_t>(), (std::vector<int64_t>{-128, 0, 127}));
  EXPECT_EQ(f.tensor("empty").shape, Shape{0});
  EXPECT_EQ(f.tensor("empty2").shape, (Shape{2, 0}));
  EXPECT_EQ(f.tensor("empty2").type, GgmlType::I64);
}

TEST_F(ConvertReference, DtypeIsHonoured) {
  const test::CliResult r = convert("--dtype bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  const gguf::File f = gguf::File::open(out());
  for (const char* name : {"f32", "f16", "bf16", "f64", "scalar", "f32_odd"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(f.tensor(name).type, GgmlType::BF16);
  }
  EXPECT_EQ(dequantize(f.tensor("bf16")).to_vector<float>(), (std::vector<float>{1.0f, -2.5f, 3.140625f, 0.5f}));
  EXPECT_EQ(dequantize(f.tensor("f32")).to_vector<float>()[5], 1.5f);
  EXPECT_EQ(f.tensor("i64").type, GgmlType::I64);  // integers are not floats: kept
}

TEST_F(ConvertReference, QuantizeSaysWhatItLeavesUnquantized) {
  const test::CliResult r = convert("--quantize q4_k");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("convert: 'f32' stored as f32, not quantized: its rows of 4 values are not a multiple of "
                       "q4_K's block of 256\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("convert: 'scalar' stored as f32, not quantized: only 2-D tensors are quantized and this one "
                       "is 0-D\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("convert: 'f16' stored as f16, not quantized:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("convert: 'empty' stored as f32, not quantized: only 2-D"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("0 tensors as q4_K, 12 unquantized, 7 skipped"), std::string::npos) << r.out;
}

TEST_F(ConvertReference, PythonGgufReadsTheValues) {
  if (!python_has_gguf()) GTEST_SKIP() << "python3 has no gguf package; wick's own reader is checked above";
  ASSERT_EQ(convert("").code, 0);
  const std::string script =
      "import gguf,sys\n"
      "r=gguf.GGUFReader(sys.argv[1])\n"
      "t={x.name:x for x in r.tensors}\n"
      "assert len(t)==12, sorted(t)\n"
      "assert t['i64'].tensor_type.name=='I64' and t['i64'].data.flatten().tolist()=="
      "[-2**63,2**63-1,-5,0,1,2**40], t['i64'].data\n"
      "assert t['i32'].tensor_type.name=='I32' and t['i32'].data.tolist()==[-2**31,2**31-1,5]\n"
      "assert t['i16'].data.tolist()==[-32768,32767,-1] and t['i8'].data.tolist()==[-128,0,127]\n"
      "assert t['f32'].data.flatten().tolist()==[x/2 for x in range(-2,10)], t['f32'].data\n"
      "assert t['f16'].tensor_type.name=='F16' and t['f16'].data.flatten().tolist()==[1,-2.5,65504,2**-14]\n"
      "assert float(t['scalar'].data.flatten()[0])==3.5 and t['scalar'].n_elements==1\n"
      "assert t['empty'].n_elements==0 and t['empty2'].n_elements==0\n";
  EXPECT_EQ(run_gguf_check(dir_, script, out()), 0);
}

// ---- the direction comes from the input's first bytes ----------------------------------

TEST_F(ConvertReference, DirectionIsChosenByTheInputNotTheExtension) {
  const std::string st = test::data_path("reference.safetensors");
  // An upper-case extension is still GGUF.
  const fs::path upper = dir_ / "ref.GGUF";
  test::CliResult r = test::run_cli("convert '" + st + "' '" + upper.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(gguf::File::open(upper).tensors().size(), 12u);
  r = test::run_cli("convert '" + upper.string() + "' '" + (dir_ / "again.gguf").string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "wick: error: convert: GGUF -> GGUF is not supported; the output must be .safetensors\n");
  r = test::run_cli("convert '" + st + "' '" + (dir_ / "copy.SafeTensors").string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "wick: error: convert: safetensors -> safetensors is not supported; the output must be .gguf\n");
  r = test::run_cli("convert '" + st + "' '" + (dir_ / "out.bin").string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is not a GGUF file, so it is read as safetensors and converted to GGUF; the output must be "
                       ".gguf, got '"),
            std::string::npos)
      << r.err;
  r = test::run_cli("convert '" + upper.string() + "' '" + (dir_ / "back.safetensors").string() + "' --quantize q8_0");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("convert: --quantize applies to safetensors -> GGUF, but '"), std::string::npos) << r.err;
  // GGUF -> safetensors: integer tensors come back exactly (as i64), floats as --dtype.
  r = test::run_cli("convert '" + upper.string() + "' '" + (dir_ / "back.safetensors").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const safetensors::File back = safetensors::File::open(dir_ / "back.safetensors");
  EXPECT_EQ(back.tensor("i32").to_vector<int64_t>(), (std::vector<int64_t>{INT32_MIN, INT32_MAX, 5}));
  EXPECT_EQ(back.tensor("scalar").to_vector<float>(), std::vector<float>{3.5f});
  EXPECT_FALSE(fs::exists(dir_ / "again.gguf"));
  EXPECT_FALSE(fs::exists(dir_ / "copy.SafeTensors"));
}

// ---- a failed write leaves nothing behind -----------------------------------------------

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ConvertToGgufFailure, AFailedWriteLeavesNoPartialFile) {
  const fs::path dir = fs::temp_directory_path() / ("wick_convert_fail_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  safetensors::save(dir / "in.safetensors", {{"w", random_tensor(Shape{64, 256}, 3)}});  // 64 KiB
  // A file size limit of 16 blocks (8 or 16 KiB, depending on the shell) makes the write
  // fail part-way, deterministically; SIGXFSZ is ignored so that write() reports EFBIG.
  const test::CliResult r =
      test::run_cli("convert '" + (dir / "in.safetensors").string() + "' '" + (dir / "out.gguf").string() + "'",
                    {.shell_prefix = "trap '' XFSZ; ulimit -f 16; exec"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("gguf writer: writing '"), std::string::npos) << r.err;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"in.safetensors"});
  // An output inside a path component that is a file fails before writing anything.
  const test::CliResult r2 = test::run_cli("convert '" + (dir / "in.safetensors").string() + "' '" +
                                           (dir / "in.safetensors" / "out.gguf").string() + "'");
  EXPECT_EQ(r2.code, 1);
  EXPECT_NE(r2.err.find("gguf writer: cannot open"), std::string::npos) << r2.err;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"in.safetensors"});
  fs::remove_all(dir);
}

// ---- progress bars only on a terminal ---------------------------------------------------

// Over 64 MiB the converter shows a progress bar; with stderr a file it must not draw one.
// A u8 tensor keeps the test fast: it is skipped (GGUF has no u8 type), not converted.
TEST(ConvertToGgufProgress, NoCarriageReturnsWhenStderrIsNotATerminal) {
  const fs::path dir = fs::temp_directory_path() / ("wick_convert_progress_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  safetensors::save(dir / "in.safetensors",
                    {{"bytes", zeros(Shape{int64_t(65) << 20}, DType::U8)}, {"b", random_tensor(Shape{4}, 1)}});
  const test::CliResult r =
      test::run_cli("convert '" + (dir / "in.safetensors").string() + "' '" + (dir / "out.gguf").string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "convert: 'bytes' skipped: GGUF has no tensor type for U8\n");
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  // On a terminal (a pty from util-linux's `script`) the bar is drawn, and the line it
  // leaves open is ended before the message, so the message starts a line of its own.
  if (std::system("command -v script > /dev/null 2>&1") == 0) {
    const std::string cmd = "script -qec \"'" + std::string(WICK_CLI_PATH) + "' convert '" +
                            (dir / "in.safetensors").string() + "' '" + (dir / "tty.gguf").string() + "'\" /dev/null";
    std::string tty;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) tty.append(buf, n);
      ::pclose(p);
    }
    EXPECT_NE(tty.find("\r["), std::string::npos) << tty;
    const size_t at = tty.find("convert: 'bytes' skipped");
    ASSERT_NE(at, std::string::npos) << tty;
    ASSERT_GT(at, 0u);
    EXPECT_EQ(tty[at - 1], '\n') << tty;  // not glued to the bar
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace wick
