// safetensors: interop with the reference implementation (fixtures written by
// tests/data/gen_safetensors.py with huggingface safetensors 0.8 and PyTorch), round
// trips through wick's writer (byte-exact against the reference crate's own tests),
// malformed files rejected with Format errors, and `wick inspect`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
namespace st = safetensors;

// ---- helpers ------------------------------------------------------------------------------

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &n, 8);
  return s;
}
// A file: 8-byte header length + header (as given, no padding) + data.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}
// Copies bytes into a fresh (aligned, writable) CPU buffer.
Buffer to_buffer(const std::string& bytes) {
  Buffer b = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(bytes.size())});
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}
st::File parse(const std::string& bytes) { return st::File::parse(to_buffer(bytes)); }

template <class T>
std::string raw_of(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}
std::string bytes_of(const Buffer& b) { return std::string(static_cast<const char*>(b.data()), b.nbytes()); }

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("wick_test_safetensors_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}
fs::path write_temp(const std::string& name, const std::string& bytes) {
  const fs::path p = temp_dir() / name;
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return p;
}

// ---- the reference file: every dtype ------------------------------------------------------

TEST(SafetensorsReference, ListsEveryTensorInDataOrder) {
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  EXPECT_EQ(f.tensors().size(), 19u);
  EXPECT_EQ(f.header_size() % 8, 0u);  // the reference writer pads to 8
  size_t expected_begin = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.begin, expected_begin) << t.name;
    expected_begin = t.end;
  }
  EXPECT_EQ(8 + f.header_size() + expected_begin, f.file_size());
  EXPECT_TRUE(f.contains("f8_e4m3"));
  EXPECT_FALSE(f.contains("nope"));
  EXPECT_WICK_ERROR(f.info("nope"), InvalidArgument, "no tensor named 'nope'");
}

TEST(SafetensorsReference, UnicodeMetadata) {
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  const std::map<std::string, std::string> expected = {
      {"greeting", "Grüße 世界 🚀"}, {"ключ", "значение"}, {"empty", ""}, {"format", "np"}};
  EXPECT_EQ(f.metadata(), expected);
}

TEST(SafetensorsReference, WickDTypesValuesAndShapes) {
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  auto check_dtype = [&](const char* name, DType dt, Shape shape) {
    const Tensor t = f.tensor(name);
    EXPECT_EQ(t.dtype(), dt) << name;
    EXPECT_EQ(t.shape(), shape) << name;
    EXPECT_EQ(f.info(name).wick_dtype, dt) << name;
    return t;
  };
  EXPECT_EQ(check_dtype("u8", DType::U8, {3}).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 255}));
  EXPECT_EQ(check_dtype("u32", DType::U32, {3}).to_vector<uint32_t>(), (std::vector<uint32_t>{0, 4294967295u, 7}));
  EXPECT_EQ(check_dtype("i64", DType::I64, {2, 3}).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX, -5, 0, 1, int64_t(1) << 40}));
  EXPECT_EQ(check_dtype("f16", DType::F16, {2, 2}).to_vector<float>(),
            (std::vector<float>{1.0f, -2.5f, 65504.0f, 0.000061035156f}));
  EXPECT_EQ(check_dtype("bf16", DType::BF16, {2, 2}).to_vector<float>(),
            (std::vector<float>{1.0f, -2.5f, 3.140625f, 0.5f}));
  std::vector<float> f32(12);
  for (int i = 0; i < 12; ++i) f32[i] = float(i) * 0.5f - 1.0f;
  EXPECT_EQ(check_dtype("f32", DType::F32, {3, 4}).to_vector<float>(), f32);
  EXPECT_EQ(check_dtype("f32_odd", DType::F32, {1, 7}).to_vector<float>(),
            (std::vector<float>{0.125f, 0.25f, 0.375f, 0.5f, 0.625f, 0.75f, 0.875f}));
  const std::vector<double> f64 = check_dtype("f64", DType::F64, {3}).to_vector<double>();
  EXPECT_EQ(f64[0], M_PI);
  EXPECT_EQ(f64[1], M_E);
  EXPECT_TRUE(f64[2] == 0.0 && std::signbit(f64[2]));
  const Tensor scalar = check_dtype("scalar", DType::F32, Shape{});
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(scalar.item<float>(), 3.5f);
  EXPECT_EQ(check_dtype("empty", DType::F32, {0}).numel(), 0);
  EXPECT_EQ(check_dtype("empty2", DType::I64, {2, 0}).to_vector<int64_t>().size(), 0u);
}

TEST(SafetensorsReference, OtherDTypesAreRawOnly) {
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  const std::pair<const char*, const char*> others[] = {{"bool", "BOOL"},       {"i8", "I8"},          {"u16", "U16"},
                                                        {"i16", "I16"},         {"i32", "I32"},        {"u64", "U64"},
                                                        {"f8_e4m3", "F8_E4M3"}, {"f8_e5m2", "F8_E5M2"}};
  for (const auto& [name, dtype] : others) {
    EXPECT_EQ(f.info(name).dtype, dtype);
    EXPECT_FALSE(f.info(name).wick_dtype.has_value()) << name;
    EXPECT_WICK_ERROR(f.tensor(name), Unsupported, std::string("has dtype ") + dtype);
  }
  EXPECT_EQ(bytes_of(f.raw("bool")), std::string("\x01\x00\x01", 3));
  EXPECT_EQ(bytes_of(f.raw("i8")), std::string("\x80\x00\x7f", 3));
  EXPECT_EQ(bytes_of(f.raw("u16")), raw_of<uint16_t>({0, 65535, 1234}));
  EXPECT_EQ(bytes_of(f.raw("i16")), raw_of<int16_t>({-32768, 32767, -1}));
  EXPECT_EQ(bytes_of(f.raw("i32")), raw_of<int32_t>({INT32_MIN, INT32_MAX, 5}));
  EXPECT_EQ(bytes_of(f.raw("u64")), raw_of<uint64_t>({0, UINT64_MAX, 42}));
  EXPECT_EQ(bytes_of(f.raw("f8_e4m3")), std::string("\x38\xc0\x7e\x01", 4));
  EXPECT_EQ(bytes_of(f.raw("f8_e5m2")), std::string("\x3c\xc0\x7b", 3));
  EXPECT_EQ(f.info("f8_e5m2").shape, Shape{3});
}

TEST(SafetensorsReference, ZeroCopyReadOnlyViews) {
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  const Tensor t = f.tensor("f32");
  EXPECT_TRUE(t.read_only());
  EXPECT_EQ(t.data(), f.raw("f32").data());  // no copy: it points into the mapping
  EXPECT_TRUE(t.shares_storage(f.tensor("f64")));
  Tensor w = t;
  EXPECT_WICK_ERROR(w.fill_(Scalar(1.0)), ReadOnly, "read-only");
  Tensor c = t.clone();  // the suggested way out
  c.fill_(Scalar(2.0));
  EXPECT_EQ(c.to_vector<float>()[0], 2.0f);
}

TEST(SafetensorsReference, TensorsOutliveTheFileAndItsName) {
  // Copy the fixture, map it, drop the File and delete the file: the mapping (held by
  // the tensor's Buffer) stays valid.
  const fs::path p = temp_dir() / "outlive.safetensors";
  fs::copy_file(test::data_path("reference.safetensors"), p, fs::copy_options::overwrite_existing);
  Tensor t;
  {
    const st::File f = st::File::open(p);
    t = f.tensor("f32");
  }
  fs::remove(p);
  EXPECT_EQ(t.to_vector<float>()[11], 4.5f);
  EXPECT_EQ(t.storage().allocation().use_count(), 1);  // the tensor is the last owner
}

TEST(SafetensorsReference, LoadReturnsTheWickDTypes) {
  const auto all = st::load(test::data_path("reference.safetensors"));
  EXPECT_EQ(all.size(), 11u);  // u8 u32 i64 bf16 f16 f32 f32_odd f64 scalar empty empty2
  EXPECT_EQ(all.count("i8"), 0u);
  EXPECT_EQ(all.at("u32").to_vector<uint32_t>()[1], 4294967295u);
}

TEST(SafetensorsReference, WrittenByPyTorch) {
  const st::File f = st::File::open(test::data_path("reference_torch.safetensors"));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const Tensor w = f.tensor("w");
  EXPECT_EQ(w.shape(), (Shape{3, 5}));
  // bf16/f16 -> f32 conversion against PyTorch's own.
  EXPECT_EQ(f.tensor("w_bf16").to_vector<float>(), f.tensor("w_bf16_as_f32").to_vector<float>());
  EXPECT_EQ(f.tensor("w_f16").to_vector<float>(), f.tensor("w_f16_as_f32").to_vector<float>());
  EXPECT_EQ(f.tensor("w_t").to_vector<float>(), w.t().to_vector<float>());
  EXPECT_CLOSE(f.tensor("w_f64"), w, 0.0, 0.0);
  EXPECT_EQ(f.tensor("idx").to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 7, -1}));
  EXPECT_EQ(f.tensor("bytes").to_vector<int64_t>(), (std::vector<int64_t>{0, 50, 100, 150, 200}));
  EXPECT_EQ(f.info("mask").dtype, "BOOL");
  EXPECT_EQ(f.info("i32").dtype, "I32");
}

// ---- hand-built files ---------------------------------------------------------------------

TEST(SafetensorsParse, UnalignedDataIsCopied) {
  // A 9-byte-shifted data section (the format allows any header length): the f32
  // tensor cannot be viewed in place, so it is copied and is then writable.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header += std::string((8 - header.size() % 8) % 8 + 1, ' ');
  const std::string bytes = file_bytes(header, raw_of<float>({1.5f, -2.0f}));
  const Buffer buf = to_buffer(bytes);
  const st::File f = st::File::parse(buf);
  const Tensor t = f.tensor("a");
  EXPECT_FALSE(t.shares_storage(Tensor::from_buffer(buf)));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(bytes_of(f.raw("a")), raw_of<float>({1.5f, -2.0f}));  // raw() is still a view
}

TEST(SafetensorsParse, AcceptsWhatTheReferenceAccepts) {
  // Header order need not be data order; empty tensors share an offset; null metadata;
  // sub-byte dtypes when the bits make whole bytes; unknown keys in an entry are ignored.
  const std::string header = R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                             R"("e":{"dtype":"F32","shape":[0,7],"data_offsets":[0,0]},)"
                             R"("q":{"dtype":"F4","shape":[2,4],"data_offsets":[0,4],"extra":1},"__metadata__":null})";
  const st::File f = parse(file_bytes(header, "abcdXY"));
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "e");
  EXPECT_EQ(f.tensors()[1].name, "q");
  EXPECT_EQ(f.tensors()[2].name, "b");
  EXPECT_EQ(bytes_of(f.raw("b")), "XY");
  EXPECT_EQ(f.info("q").nbytes(), 4u);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(parse(file_bytes("{}")).tensors().size(), 0u);
}

struct Malformed {
  const char* defect;
  std::string bytes;
  const char* message;
};

std::string one(const std::string& entry_body, const std::string& data = "") {
  return file_bytes(R"({"t":{)" + entry_body + "}}", data);
}

std::vector<Malformed> malformed_files() {
  const std::string f32x1 = R"("dtype":"F32","shape":[1],)";
  return {
      {"truncated header length", std::string("\x08\x00\x00", 3), "shorter than the 8-byte header length"},
      {"header length past the end", le64(100) + "{}", "header length 100 runs past the end of the 10-byte file"},
      {"header over 100 MB claimed", le64(100'000'001) + "{}", "exceeds the limit of 100000000 bytes"},
      {"header length 2^64-1", le64(UINT64_MAX) + "{}", "exceeds the limit"},
      {"invalid JSON", file_bytes(R"({"t":)"), "header is not valid JSON"},
      {"not an object", file_bytes("[1, 2]"), "header is not a JSON object"},
      {"entry not an object", file_bytes(R"({"t":1})"), "tensor 't': entry is not a JSON object"},
      {"unknown dtype", one(R"("dtype":"F33","shape":[1],"data_offsets":[0,4])", "abcd"),
       "tensor 't': unknown dtype \"F33\""},
      {"control characters in names",
       file_bytes(R"({"a\nb":{"dtype":"X\ny","shape":[1],"data_offsets":[0,4]}})", "abcd"),
       "tensor 'a\\x0ab': unknown dtype \"X\\x0ay\""},
      {"dtype not a string", one(R"("dtype":7,"shape":[1],"data_offsets":[0,4])", "abcd"), "\"dtype\" is not a string"},
      {"missing dtype", one(R"("shape":[1],"data_offsets":[0,4])", "abcd"), "tensor 't': missing \"dtype\""},
      {"missing shape", one(R"("dtype":"U8","data_offsets":[0,1])", "a"), "missing \"shape\""},
      {"missing offsets", one(R"("dtype":"U8","shape":[1])", "a"), "missing \"data_offsets\""},
      {"negative shape", one(R"("dtype":"U8","shape":[-1],"data_offsets":[0,1])", "a"),
       "shape entry -1 is not a non-negative integer"},
      {"float shape", one(R"("dtype":"U8","shape":[1.5],"data_offsets":[0,1])", "a"),
       "shape entry 1.5 is not a non-negative integer"},
      {"shape not an array", one(R"("dtype":"U8","shape":1,"data_offsets":[0,1])", "a"), "\"shape\" is not an array"},
      {"offsets not a pair", one(f32x1 + R"("data_offsets":[0,4,8])", "abcd"), "is not [begin, end]"},
      {"negative offset", one(f32x1 + R"("data_offsets":[-4,0])", "abcd"), "is not [begin, end]"},
      {"offsets reversed", one(R"("dtype":"F32","shape":[0],"data_offsets":[4,0])", "abcd"), "end before they begin"},
      {"gap",
       file_bytes(R"({"a":{)" + f32x1 + R"("data_offsets":[0,4]},"b":{)" + f32x1 + R"("data_offsets":[8,12]}})",
                  std::string(12, 'x')),
       "tensor 'b': data_offsets [8, 12) leave a gap (expected begin 4)"},
      {"overlap",
       file_bytes(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{)" + f32x1 + R"("data_offsets":[4,8]}})",
           std::string(8, 'x')),
       "tensor 'b': data_offsets [4, 8) overlap the previous tensor"},
      {"not starting at 0", one(f32x1 + R"("data_offsets":[4,8])", std::string(8, 'x')),
       "do not start the data section at 0"},
      {"size mismatch", one(R"("dtype":"F32","shape":[2],"data_offsets":[0,4])", "abcd"),
       "tensor 't': data_offsets [0, 4) hold 4 bytes but F32 [2] needs 8"},
      {"sub-byte size", one(R"("dtype":"F4","shape":[3],"data_offsets":[0,2])", "ab"), "not a whole number of bytes"},
      {"trailing bytes", one(f32x1 + R"("data_offsets":[0,4])", "abcdEXTRA"),
       "cover 4 bytes but the data section holds 9 (trailing bytes)"},
      {"truncated data", one(f32x1 + R"("data_offsets":[0,4])", "ab"), "(truncated file)"},
      {"shape product overflow", one(R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0])"),
       "overflows the element count"},
      {"shape entry beyond int64", one(R"("dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0])"),
       "overflows the element count"},
      {"metadata value not a string", file_bytes(R"({"__metadata__":{"k":1}})"),
       "\"__metadata__\" value of key 'k' is not a string"},
      {"metadata not an object", file_bytes(R"({"__metadata__":["k"]})"), "\"__metadata__\" is not a JSON object"},
      {"invalid UTF-8", file_bytes("{\"\xff\":1}"), "header is not valid UTF-8"},
      {"overlong UTF-8", file_bytes("{\"\xc0\xaf\":1}"), "header is not valid UTF-8"},
      {"UTF-16 surrogate", file_bytes("{\"\xed\xa0\x80\":1}"), "header is not valid UTF-8"},
      // nlohmann skips a byte-order mark; the reference (serde_json) rejects it.
      {"UTF-8 byte-order mark", file_bytes("\xEF\xBB\xBF{}"),
       "header is not valid JSON: it starts with a UTF-8 byte-order mark"},
  };
}

TEST(SafetensorsParse, RejectsMalformedFilesNamingTheDefect) {
  for (const Malformed& m : malformed_files()) {
    SCOPED_TRACE(m.defect);
    EXPECT_WICK_ERROR(parse(m.bytes), Format, m.message);
    try {
      parse(m.bytes);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("safetensors: ", 0), 0u) << e.what();
    }
  }
}

// n arrays nested in each other: 2n bytes.
std::string nested(size_t n) { return std::string(n, '[') + std::string(n, ']'); }

TEST(SafetensorsParse, RejectsDeepNestingWherever) {
  // 100,000 levels (200 KB) overflowed the stack in nlohmann's dump() while the message
  // was built; now the parse stops at the nesting limit, whichever key holds the value.
  const std::string deep = nested(100'000);
  const std::string f32x1 = R"("dtype":"F32","shape":[1],"data_offsets":[0,4])";
  const std::vector<std::pair<const char*, std::string>> headers = {
      {"dtype", R"({"t":{"dtype":)" + deep + R"(,"shape":[1],"data_offsets":[0,4]}})"},
      {"shape", R"({"t":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})"},
      {"shape entry", R"({"t":{"dtype":"F32","shape":[)" + deep + R"(],"data_offsets":[0,4]}})"},
      {"data_offsets", R"({"t":{"dtype":"F32","shape":[1],"data_offsets":)" + deep + "}}"},
      {"__metadata__", R"({"__metadata__":)" + deep + R"(,"t":{)" + f32x1 + "}}"},
      {"__metadata__ value", R"({"__metadata__":{"k":)" + deep + R"(},"t":{)" + f32x1 + "}}"},
      {"ignored key", R"({"t":{)" + f32x1 + R"(,"extra":)" + deep + "}}"},
  };
  for (const auto& [where, header] : headers) {
    SCOPED_TRACE(where);
    EXPECT_WICK_ERROR(parse(file_bytes(header, "abcd")), Format,
                      "safetensors: header is not valid JSON: arrays/objects nest deeper than the JSON nesting limit "
                      "of 127 levels");
  }
}

TEST(SafetensorsParse, NestingLimitIsTheReferences) {
  // Checked with huggingface/safetensors 0.7 (serde_json, recursion limit 128): an ignored
  // key nested to 127 levels in all (header object, entry, 125 arrays) opens, 128 do not.
  auto with_extra = [](size_t arrays) {
    return file_bytes(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)" + nested(arrays) + "}}", "a");
  };
  EXPECT_EQ(parse(with_extra(125)).info("t").nbytes(), 1u);
  EXPECT_WICK_ERROR(parse(with_extra(126)), Format, "nesting limit of 127 levels");
}

TEST(SafetensorsParse, HugeValuesInMessagesAreCutShort) {
  // A 1 MB string or a 100,000-entry array in a message would make it as large as the file.
  const std::string big(1'000'000, 'x');
  try {
    parse(file_bytes(R"({"__metadata__":{"k":[")" + big + R"("]}})"));
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    // 60 characters of the value, then "...".
    EXPECT_EQ(std::string(e.what()),
              "safetensors: \"__metadata__\" value of key 'k' is not a string: [\"" + std::string(58, 'x') + "...");
  }
  std::string shape = "[1";
  for (int i = 0; i < 100'000; ++i) shape += ",1";
  EXPECT_WICK_ERROR(parse(one(R"("dtype":"U8","shape":)" + shape + R"(],"data_offsets":[0,2])", "ab")), Format,
                    "tensor 't': data_offsets [0, 2) hold 2 bytes but U8 [1, 1, ... (100001 dims)] needs 1");
  EXPECT_WICK_ERROR(
      parse(one(R"("dtype":"U8","shape":[1,"a)" + std::string(100'000, 'b') + R"("],"data_offsets":[0,1])", "a")),
      Format, "shape entry \"a" + std::string(58, 'b') + "... is not a non-negative integer");
}

// Header order is data order here, but tensor names are not in name order, and every
// third and fourth tensor are empty and share an offset with the next: they must keep
// their header order (a sorted object alone would reorder them by name).
TEST(SafetensorsParse, ManyTensorsKeepOrderAndContents) {
  const size_t n = 20'000;
  std::string header = "{", data;
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back("w" + std::to_string((i * 7919) % n));  // a permutation: gcd(7919, n) = 1
    const bool empty = i % 4 >= 2;
    const size_t begin = data.size();
    if (!empty) data += raw_of<uint16_t>({uint16_t(i)});
    header += (i ? "," : "") + ("\"" + names.back() + "\":") + R"({"dtype":"U16","shape":[)" + (empty ? "0" : "1") +
              R"(],"data_offsets":[)" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  const st::File f = parse(file_bytes(header + "}", data));
  ASSERT_EQ(f.tensors().size(), n);
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    const st::TensorInfo& t = f.tensors()[i];
    ASSERT_EQ(t.name, names[i]);
    ASSERT_EQ(&f.info(names[i]), &t);
    ASSERT_EQ(t.shape, Shape{int64_t(i % 4 >= 2 ? 0 : 1)});
    if (i % 4 < 2) {
      ASSERT_EQ(bytes_of(f.raw(t.name)), raw_of<uint16_t>({uint16_t(i)}));
    }
  }
}

TEST(SafetensorsParse, DuplicateKeyKeepsItsFirstPlaceAndLastValue) {
  // As before (ordered_json): the entry written last wins, at the place first written.
  const std::string header = R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                             R"("z":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                             R"("a":{"dtype":"I8","shape":[0],"data_offsets":[0,0]}})";
  const st::File f = parse(file_bytes(header));
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, "a");
  EXPECT_EQ(f.tensors()[0].dtype, "I8");
  EXPECT_EQ(f.tensors()[1].name, "z");
}

TEST(SafetensorsParse, OpenNamesTheFile) {
  const fs::path p = write_temp("gap.safetensors", malformed_files()[0].bytes);
  EXPECT_WICK_ERROR(st::File::open(p), Format, "safetensors: " + p.string() + ": file is 3 bytes");
  EXPECT_WICK_ERROR(st::File::open(temp_dir() / "missing.safetensors"), Io, "cannot open");
}

// ---- writing ----------------------------------------------------------------------------

TEST(SafetensorsSave, ByteExactAgainstTheReferenceCrate) {
  // Expected bytes from huggingface/safetensors tensor.rs tests (test_serialization,
  // test_serialization_forced_alignement, test_empty).
  const Tensor x = arange(Scalar(0), Scalar(6), Scalar(1), DType::F32);
  const std::string data = raw_of<float>({0, 1, 2, 3, 4, 5});
  EXPECT_EQ(st::serialize({{"attn.0", x.reshape({1, 2, 3})}}),
            file_bytes(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", data));
  EXPECT_EQ(st::serialize({{"attn0", x.reshape({1, 1, 2, 3})}}),
            file_bytes(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       )", data));
  EXPECT_EQ(st::serialize({}), file_bytes("{}      "));
  EXPECT_EQ(st::serialize({}, {{"framework", "pt"}}), file_bytes(R"({"__metadata__":{"framework":"pt"}}     )"));
}

std::vector<std::pair<std::string, Tensor>> roundtrip_tensors() {
  const Tensor m = arange(Scalar(0), Scalar(12), Scalar(1), DType::F32).reshape({3, 4});
  return {
      {"z_first", m.to(DType::F64)},  // names in caller order, not sorted
      {"transposed", m.t()},          // non-contiguous: written contiguous
      {"narrowed", m.narrow(1, 1, 2)},
      {"broadcast", Tensor::from_vector<float>({1, 2, 3}).broadcast_as({2, 3})},
      {"bf16", m.to(DType::BF16)},
      {"f16", m.to(DType::F16)},
      {"u8", Tensor::from_vector<uint8_t>({0, 7, 255})},
      {"u32", Tensor::from_vector<uint32_t>({4000000000u, 1})},
      {"i64", Tensor::from_vector<int64_t>({INT64_MIN, -1, 3})},
      {"scalar", full(Shape{}, Scalar(2.5), DType::F32)},
      {"empty", Tensor::empty({0})},
      {"empty2", Tensor::empty({2, 0}, DType::I64)},
      {"odd name \"quoted\" ü", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7})},
  };
}
const std::map<std::string, std::string> kRoundtripMetadata = {{"greeting", "Grüße 世界 🚀"}, {"n", "1"}};

TEST(SafetensorsSave, RoundTrip) {
  const auto tensors = roundtrip_tensors();
  const std::string bytes = st::serialize(tensors, kRoundtripMetadata);
  const st::File f = parse(bytes);
  EXPECT_EQ(f.header_size() % 8, 0u);
  EXPECT_EQ(f.metadata(), kRoundtripMetadata);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    SCOPED_TRACE(name);
    EXPECT_EQ(f.tensors()[i].name, name);  // data order == caller order
    const Tensor back = f.tensor(name);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>());
    // The reference writer's layout: every tensor aligned for its dtype when written
    // in descending alignment; here at least the 8-byte header keeps f64 aligned.
  }
  EXPECT_EQ(f.tensor("i64").to_vector<int64_t>()[0], INT64_MIN);

  // The same through a file; WICK_ROUNDTRIP_OUT keeps a copy for
  // tests/data/check_roundtrip.py (the Python reference reading wick's output).
  const fs::path p = temp_dir() / "roundtrip.safetensors";
  st::save(p, tensors, kRoundtripMetadata);
  EXPECT_EQ(st::load(p).size(), tensors.size());
  std::ifstream in(p, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);
  if (const char* out = std::getenv("WICK_ROUNDTRIP_OUT")) st::save(out, tensors, kRoundtripMetadata);
}

TEST(SafetensorsSave, ManyTensorsRoundTripInTheGivenOrder) {
  // Not in name order, with empty tensors sharing offsets, so that any reordering shows.
  const size_t n = 20'000;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < n; ++i) {
    const float v = float(i);
    tensors.emplace_back("w" + std::to_string((i * 7919) % n), i % 4 >= 2
                                                                   ? Tensor::from_data(&v, DType::F32, 0, Shape{0})
                                                                   : Tensor::from_data(&v, DType::F32, 1, Shape{1}));
  }
  const st::File f = parse(st::serialize(tensors, {{"b", "2"}, {"a", "1"}}));
  ASSERT_EQ(f.tensors().size(), n);
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(f.tensors()[i].name, tensors[i].first);
    ASSERT_EQ(bytes_of(f.raw(tensors[i].first)), i % 4 >= 2 ? "" : raw_of<float>({float(i)}));
  }
}

TEST(SafetensorsSave, RejectsBadInput) {
  const Tensor x = ones({2});
  EXPECT_WICK_ERROR(st::serialize({{"a", x}, {"a", x}}), InvalidArgument, "duplicate tensor name 'a'");
  EXPECT_WICK_ERROR(st::serialize({{"__metadata__", x}}), InvalidArgument, "reserved");
  EXPECT_WICK_ERROR(st::serialize({{"u", Tensor()}}), InvalidArgument, "tensor 'u' is undefined");
  EXPECT_WICK_ERROR(st::serialize({{"bad\xff", x}}), InvalidArgument, "safetensors save");
  EXPECT_WICK_ERROR(st::save("/nonexistent-dir/x.safetensors", {{"a", x}}), Io, "cannot open");
}

// ---- wick inspect -------------------------------------------------------------------------

using test::CliResult;
using test::run_cli;

TEST(SafetensorsInspect, ListsTheReferenceFile) {
  const CliResult r = run_cli("inspect '" + test::data_path("reference.safetensors") + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("header 1256 bytes, 19 tensors"), std::string::npos) << r.out;
  const st::File f = st::File::open(test::data_path("reference.safetensors"));
  for (const auto& t : f.tensors()) EXPECT_NE(r.out.find("  " + t.name + " "), std::string::npos) << t.name;
  EXPECT_NE(r.out.find("F8_E4M3  [4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[2, 0]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("greeting = Grüße 世界 🚀\n"), std::string::npos) << r.out;
}

TEST(SafetensorsInspect, Json) {
  const CliResult r = run_cli("inspect --json '" + test::data_path("reference.safetensors") + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["header_size"], 1256);
  ASSERT_EQ(j["tensors"].size(), 19u);
  EXPECT_EQ(j["tensors"][0]["name"], "u64");
  EXPECT_EQ(j["tensors"][0]["data_offsets"], nlohmann::json::array({0, 24}));
  EXPECT_EQ(j["metadata"]["ключ"], "значение");
}

TEST(SafetensorsInspect, MalformedFilesExitOneWithOneLine) {
  const std::set<std::string> chosen = {"truncated header length", "header over 100 MB claimed", "invalid JSON", "gap",
                                        "trailing bytes",          "control characters in names"};
  int n = 0;
  for (const Malformed& m : malformed_files()) {
    if (!chosen.count(m.defect)) continue;
    SCOPED_TRACE(m.defect);
    ++n;
    const fs::path p = write_temp("bad" + std::to_string(n) + ".safetensors", m.bytes);
    const CliResult r = run_cli("inspect '" + p.string() + "'");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err.rfind("wick: error: safetensors: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(m.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(n, int(chosen.size()));
  const CliResult missing = run_cli("inspect '" + (temp_dir() / "missing").string() + "'");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
  // A GGUF file is recognised by its magic; a 4-byte one is malformed whatever reads it.
  const CliResult gguf = run_cli("inspect '" + write_temp("x.gguf", "GGUF").string() + "'");
  EXPECT_EQ(gguf.code, 1);
  EXPECT_EQ(gguf.err.find('\n'), gguf.err.size() - 1) << gguf.err;
}

}  // namespace
}  // namespace wick
