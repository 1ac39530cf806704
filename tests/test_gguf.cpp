// GGUF reader/writer and ggml block quants, against the ggml-generated fixtures in
// tests/data/gguf (spec: shared/fixtures/gguf/README.md, copied values below).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "support/golden.h"
#include "support/st_reader.h"
#include "wick/gguf.h"
#include "wick/quant.h"

namespace wick {
namespace {

using gguf::Array;
using gguf::File;
using gguf::Value;
using gguf::ValueType;

std::string fixture(const std::string& name) { return test::data_path("gguf/" + name); }

const std::map<std::string, test::StTensor>& expected() {
  static const auto e = test::read_f32_safetensors(fixture("expected.safetensors"));
  return e;
}
const test::StTensor& golden(const std::string& name) {
  auto it = expected().find(name);
  if (it == expected().end()) throw std::runtime_error("no golden " + name);
  return it->second;
}

Buffer bytes_of(const std::string& s) {
  Buffer b = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(s.size())});
  if (!s.empty()) std::memcpy(b.mutable_data(), s.data(), s.size());
  return b;
}
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

const std::vector<std::string> kTypes = {"f32",  "f16",  "bf16", "q4_0", "q4_1", "q5_0", "q5_1",
                                         "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"};

// ---- metadata ---------------------------------------------------------------------------

TEST(GgufReader, HeaderAndEveryMetadataType) {
  const File f = File::open(fixture("quants.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 2336u);
  EXPECT_EQ(f.file_size(), 91616u);
  ASSERT_EQ(f.metadata().size(), 24u);
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");
  EXPECT_EQ(f.metadata()[23].first, "test.arr_empty_u32");
  EXPECT_EQ(f.get("general.architecture").get<std::string>(), "fixture");
  EXPECT_EQ(f.get("general.name").get<std::string>(), "ggml quantization fixtures (public)");
  EXPECT_EQ(f.get("fixture.seed").get<uint32_t>(), 1u);
  EXPECT_EQ(f.get("test.u8").get<uint8_t>(), 200);
  EXPECT_EQ(f.get("test.i8").get<int8_t>(), -100);
  EXPECT_EQ(f.get("test.u16").get<uint16_t>(), 65000);
  EXPECT_EQ(f.get("test.i16").get<int16_t>(), -30000);
  EXPECT_EQ(f.get("test.u32").get<uint32_t>(), 4000000000u);
  EXPECT_EQ(f.get("test.i32").get<int32_t>(), -2000000000);
  EXPECT_EQ(std::bit_cast<uint32_t>(f.get("test.f32").get<float>()), 0x40490FDBu);
  EXPECT_TRUE(f.get("test.bool_true").get<bool>());
  EXPECT_FALSE(f.get("test.bool_false").get<bool>());
  EXPECT_EQ(f.get("test.string").get<std::string>(), "hello, gguf");
  EXPECT_EQ(f.get("test.string_utf8").get<std::string>(), "Grüße, 世界 — ✓ 🚀");
  EXPECT_EQ(f.get("test.string_empty").get<std::string>(), "");
  EXPECT_EQ(f.get("test.u64").get<uint64_t>(), 18000000000000000000ull);
  EXPECT_EQ(f.get("test.i64").get<int64_t>(), -9000000000000000000ll);
  EXPECT_EQ(std::bit_cast<uint64_t>(f.get("test.f64").get<double>()), 0x4005BF0A8B145769ull);
  EXPECT_EQ(f.get("test.arr_u32").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{0, 1, 4294967295u, 123456789}));
  const auto af = f.get("test.arr_f32").get<std::vector<float>>();
  ASSERT_EQ(af.size(), 4u);
  const uint32_t af_bits[] = {0x3F000000, 0xBFA00000, 0x477FE000, 0x3A83126F};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(af[i]), af_bits[i]) << i;
  EXPECT_EQ(f.get("test.arr_str").get<std::vector<std::string>>(),
            (std::vector<std::string>{"alpha", "βήτα", "", "gamma delta"}));
  EXPECT_EQ(f.get("test.arr_i8").get<std::vector<int8_t>>(), (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(f.get("test.arr_bool").get<std::vector<bool>>(), (std::vector<bool>{true, false, true}));
  const Array& empty = f.get("test.arr_empty_u32").get<Array>();
  EXPECT_EQ(empty.elem_type(), ValueType::U32);
  EXPECT_TRUE(empty.empty());
  EXPECT_FALSE(f.has("general.alignment"));
}

TEST(GgufReader, TypedAccessErrors) {
  const File f = File::open(fixture("quants.gguf"));
  EXPECT_WICK_ERROR(f.get("test.u32").get<int32_t>(), InvalidArgument, "requested i32 but the value is u32");
  EXPECT_WICK_ERROR(f.get("test.arr_u32").get<std::vector<int64_t>>(), InvalidArgument,
                    "requested i64 but the value is array of u32");
  EXPECT_WICK_ERROR(f.get("test.string").get<Array>(), InvalidArgument, "requested array but the value is string");
  EXPECT_WICK_ERROR(f.get("no.such.key"), InvalidArgument, "no metadata key 'no.such.key'");
  EXPECT_WICK_ERROR(f.tensor("nope"), InvalidArgument, "no tensor named 'nope'");
  EXPECT_EQ(f.get("test.arr_u32").to_string(2), "[0, 1, ... (4 items)]");
  EXPECT_EQ(f.get("test.string").to_string(), "\"hello, gguf\"");
}

// ---- tensor infos -----------------------------------------------------------------------

struct TensorRow {
  const char* name;
  GgmlType type;
  Shape shape;
  uint64_t offset, bytes;
};

TEST(GgufReader, TensorListMatchesTheTable) {
  const File f = File::open(fixture("quants.gguf"));
  const Shape w{8, 512}, t3{2, 4, 256}, odd{7};
  using T = GgmlType;
  const std::vector<TensorRow> rows = {
      {"odd.f32", T::F32, odd, 0, 28},        {"odd.f16", T::F16, odd, 32, 14},
      {"w.f32", T::F32, w, 64, 16384},        {"w.f16", T::F16, w, 16448, 8192},
      {"w.bf16", T::BF16, w, 24640, 8192},    {"w.q4_0", T::Q4_0, w, 32832, 2304},
      {"w.q4_1", T::Q4_1, w, 35136, 2560},    {"w.q5_0", T::Q5_0, w, 37696, 2816},
      {"w.q5_1", T::Q5_1, w, 40512, 3072},    {"w.q8_0", T::Q8_0, w, 43584, 4352},
      {"w.q2_k", T::Q2_K, w, 47936, 1344},    {"w.q3_k", T::Q3_K, w, 49280, 1760},
      {"w.q4_k", T::Q4_K, w, 51040, 2304},    {"w.q5_k", T::Q5_K, w, 53344, 2816},
      {"w.q6_k", T::Q6_K, w, 56160, 3360},    {"t3d.f32", T::F32, t3, 59520, 8192},
      {"t3d.f16", T::F16, t3, 67712, 4096},   {"t3d.bf16", T::BF16, t3, 71808, 4096},
      {"t3d.q4_0", T::Q4_0, t3, 75904, 1152}, {"t3d.q4_1", T::Q4_1, t3, 77056, 1280},
      {"t3d.q5_0", T::Q5_0, t3, 78336, 1408}, {"t3d.q5_1", T::Q5_1, t3, 79744, 1536},
      {"t3d.q8_0", T::Q8_0, t3, 81280, 2176}, {"t3d.q2_k", T::Q2_K, t3, 83456, 672},
      {"t3d.q3_k", T::Q3_K, t3, 84128, 880},  {"t3d.q4_k", T::Q4_K, t3, 85024, 1152},
      {"t3d.q5_k", T::Q5_K, t3, 86176, 1408}, {"t3d.q6_k", T::Q6_K, t3, 87584, 1680},
  };
  ASSERT_EQ(f.tensors().size(), rows.size());
  const auto* base = static_cast<const uint8_t*>(f.tensors()[0].bytes.data()) - f.data_offset();
  for (size_t i = 0; i < rows.size(); ++i) {
    const QuantTensor& t = f.tensors()[i];
    SCOPED_TRACE(rows[i].name);
    EXPECT_EQ(t.name, rows[i].name);
    EXPECT_EQ(t.type, rows[i].type);
    EXPECT_EQ(t.shape, rows[i].shape);
    EXPECT_EQ(f.tensor_offset(t.name), rows[i].offset);
    EXPECT_EQ(t.bytes.nbytes(), rows[i].bytes);
    EXPECT_EQ(t.bytes.dtype(), DType::U8);
    EXPECT_TRUE(t.bytes.read_only());
    // A view into the one mapping: same allocation, at data_offset + offset.
    EXPECT_EQ(t.bytes.allocation(), f.tensors()[0].bytes.allocation());
    EXPECT_EQ(static_cast<const uint8_t*>(t.bytes.data()), base + f.data_offset() + rows[i].offset);
  }
  EXPECT_EQ(ggml_type_name(f.tensor("w.q4_k").type), "q4_K");
}

TEST(GgufReader, Alignment64) {
  const File f = File::open(fixture("quants_align64.gguf"));
  const File ref = File::open(fixture("quants.gguf"));
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset(), 512u);
  EXPECT_EQ(f.get("general.alignment").get<uint32_t>(), 64u);
  EXPECT_EQ(f.get("general.name").get<std::string>(), "ggml quantization fixtures (public), 64-byte alignment");
  const std::vector<std::pair<std::string, uint64_t>> offsets = {
      {"odd.f32", 0}, {"w.q4_0", 64}, {"odd.f16", 2368}, {"t3d.q6_k", 2432}, {"w.q8_0", 4160}, {"w.q4_k", 8512}};
  ASSERT_EQ(f.tensors().size(), offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const QuantTensor& t = f.tensors()[i];
    EXPECT_EQ(t.name, offsets[i].first);
    EXPECT_EQ(f.tensor_offset(t.name), offsets[i].second);
    const QuantTensor& r = ref.tensor(t.name);
    ASSERT_EQ(t.bytes.nbytes(), r.bytes.nbytes());
    EXPECT_EQ(std::memcmp(t.bytes.data(), r.bytes.data(), r.bytes.nbytes()), 0) << t.name;
  }
}

// ---- malformed files --------------------------------------------------------------------

TEST(GgufReader, ControlFileIsValid) {
  const File f = File::open(fixture("bad/control_valid.gguf"));
  EXPECT_EQ(f.data_offset(), 224u);
  EXPECT_EQ(f.get("test.arr").get<std::vector<uint32_t>>(), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(f.get("test.u32").get<uint32_t>(), 7u);
  const auto a = dequantize(f.tensor("a")).to_vector<float>();
  ASSERT_EQ(a.size(), 16u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], 0.25f * float(i));
  const auto b = dequantize(f.tensor("b")).to_vector<float>();
  ASSERT_EQ(b.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[size_t(i)], 0.5f * float(i - 16));
}

TEST(GgufReader, EveryBadFileIsRejectedNamingItsDefect) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated_header", "truncated file: tensor count"},
      {"bad_magic", "bad magic 'GGML'"},
      {"version_1", "version 1 is not supported"},
      {"version_4", "unsupported version 4"},
      {"tensor_offset_unaligned", "is not a multiple of the alignment 32"},
      {"tensor_data_past_eof", "runs past the end of the file"},
      {"n_dims_5", "has 5 dimensions"},
      {"string_length_past_eof", "declares a string length"},
      {"duplicate_tensor_name", "duplicate tensor name 'a'"},
      {"unknown_type_99", "unknown ggml type id 99"},
      {"dims_product_overflow", "product of its dimensions overflows"},
      {"dims_product_wraps_to_zero", "product of its dimensions overflows"},
      {"negative_dim", "negative dimension ne[1] = -2"},
      {"row_not_multiple_of_block", "is not a multiple of q8_0's block size 32"},
      {"alignment_not_power_of_two", "general.alignment 48 is not a power of two"},
      {"alignment_wrong_type", "general.alignment must be a u32, got u64"},
      {"kv_invalid_value_type", "'test.u32' has invalid value type id 13"},
      {"duplicate_kv_key", "duplicate metadata key 'test.u32'"},
      {"array_length_past_eof", "array of 1099511627776 u32 elements cannot fit"},
      {"tensor_count_huge", "tensor count 1099511627776 cannot fit"},
  };
  for (const auto& [file, text] : cases) {
    SCOPED_TRACE(file);
    EXPECT_WICK_ERROR(File::open(fixture("bad/" + file + ".gguf")), Format, text);
  }
}

// GGUF v2 has the same layout as v3 (64-bit counts); both are read.
TEST(GgufReader, Version2IsAccepted) {
  std::string s = read_file(fixture("bad/control_valid.gguf"));
  s[4] = 2;
  const File f = File::parse(bytes_of(s));
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.tensors().size(), 2u);
  s[4] = 0;
  EXPECT_WICK_ERROR(File::parse(bytes_of(s)), Format, "unsupported version 0");
  EXPECT_WICK_ERROR(File::parse(bytes_of("")), Format, "truncated file: magic");
}

TEST(GgufTypes, NamesAndRowBytes) {
  EXPECT_EQ(ggml_type_from_name("Q4_K"), GgmlType::Q4_K);
  EXPECT_EQ(ggml_type_from_name("q6_k"), GgmlType::Q6_K);
  EXPECT_EQ(ggml_type_from_id(30), GgmlType::BF16);
  EXPECT_FALSE(ggml_type_from_id(4).has_value());  // removed q4_2
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q5_K, 512), 352u);
  EXPECT_EQ(ggml_type_from_id(39), GgmlType::MXFP4);
  EXPECT_EQ(ggml_type_from_name("MXFP4"), GgmlType::MXFP4);
  EXPECT_EQ(ggml_row_bytes(GgmlType::MXFP4, 96), 51u);  // 17-byte blocks: rows of any byte parity
  EXPECT_WICK_ERROR(ggml_row_bytes(GgmlType::MXFP4, 48), InvalidArgument, "not a multiple of mxfp4's block size 32");
  EXPECT_WICK_ERROR(ggml_type_from_name("q9_0"), InvalidArgument, "unknown ggml type 'q9_0'");
}

// Found by fuzz_gguf: a zero dimension next to a huge row gives 0 elements, but the row
// (and every stride) must still be representable.
TEST(GgufReader, HugeRowWithZeroRows) {
  std::string s = read_file(fixture("bad/control_valid.gguf"));
  auto set_ne = [&](uint64_t ne0, uint64_t ne1) {
    std::memcpy(&s[152], &ne0, 8);
    std::memcpy(&s[160], &ne1, 8);
  };
  set_ne(uint64_t(1) << 62, 0);
  EXPECT_WICK_ERROR(File::parse(bytes_of(s)), Format, "tensor 'a' has too many elements");
  set_ne(uint64_t(1) << 59, 0);
  const File f = File::parse(bytes_of(s));
  EXPECT_EQ(f.tensor("a").shape, (Shape{0, int64_t(1) << 59}));
  EXPECT_EQ(dequantize(f.tensor("a")).numel(), 0);
}

// Cut the control file at every length: everything shorter than the end of the last
// tensor's data is an error (never a crash); from there on the padding is optional.
TEST(GgufReader, EveryTruncationIsAFormatError) {
  const std::string full = read_file(fixture("bad/control_valid.gguf"));
  ASSERT_EQ(full.size(), 352u);
  const size_t data_end = 224 + 64 + 34;
  for (size_t n = 0; n < full.size(); ++n) {
    if (n >= data_end) {
      EXPECT_NO_THROW(File::parse(bytes_of(full.substr(0, n)))) << n;
    } else {
      EXPECT_THROW(
          {
            try {
              File::parse(bytes_of(full.substr(0, n)));
            } catch (const Error& e) {
              EXPECT_EQ(e.kind(), ErrorKind::Format) << n << ": " << e.what();
              throw;
            }
          },
          Error)
          << n;
    }
  }
}

// Single-byte corruptions of the control file parse or fail with a Format error.
TEST(GgufReader, ByteCorruptionsNeverEscapeAsOtherErrors) {
  const std::string full = read_file(fixture("bad/control_valid.gguf"));
  for (size_t i = 0; i < 224; ++i) {
    for (int v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string s = full;
      s[i] = char(v);
      try {
        const File f = File::parse(bytes_of(s));
        for (const auto& t : f.tensors()) (void)dequantize(t);
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Format) << i << "=" << v << ": " << e.what();
      }
    }
  }
}

// ---- dequantization: bit-exact against ggml ---------------------------------------------

TEST(GgufDequant, EveryTypeIsBitExact) {
  const File f = File::open(fixture("quants.gguf"));
  for (const std::string& set : {"w", "t3d"}) {
    for (const std::string& type : kTypes) {
      const std::string name = set + "." + type;
      SCOPED_TRACE(name);
      const test::StTensor& want = type == "f32" ? golden("src." + set) : golden("deq." + name);
      const Tensor got = dequantize(f.tensor(name));
      EXPECT_EQ(got.shape().dims(), want.shape);
      EXPECT_TRUE(test::bits_equal(got.to_vector<float>(), want.values));
    }
  }
  EXPECT_TRUE(test::bits_equal(dequantize(f.tensor("odd.f16")).to_vector<float>(), golden("deq.odd.f16").values));
  EXPECT_TRUE(test::bits_equal(dequantize(f.tensor("odd.f32")).to_vector<float>(), golden("src.odd").values));
}

TEST(GgufDequant, NegativeZerosAreKept) {
  const File f = File::open(fixture("quants.gguf"));
  auto count = [](const std::vector<float>& v) {
    return std::count_if(v.begin(), v.end(), [](float x) { return std::bit_cast<uint32_t>(x) == 0x80000000u; });
  };
  EXPECT_EQ(count(dequantize(f.tensor("w.q4_0")).to_vector<float>()), 800);
  EXPECT_EQ(count(dequantize(f.tensor("w.q6_k")).to_vector<float>()), 890);
  EXPECT_EQ(count(dequantize(f.tensor("t3d.q3_k")).to_vector<float>()), 268);
}

TEST(GgufDequant, ToHalfTypesRoundsTheExactValues) {
  const File f = File::open(fixture("quants.gguf"));
  for (DType dt : {DType::F16, DType::BF16}) {
    const Tensor got = dequantize(f.tensor("w.q4_k"), dt);
    EXPECT_EQ(got.dtype(), dt);
    const Tensor want = Tensor::from_vector(golden("deq.w.q4_k").values, Shape{8, 512}).to(dt);
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  }
  EXPECT_WICK_ERROR(dequantize(f.tensor("w.q4_k"), DType::U8), DTypeMismatch, "must be f32, f16 or bf16");
}

TEST(GgufDequant, RejectsInconsistentTensors) {
  const File f = File::open(fixture("quants.gguf"));
  QuantTensor t = f.tensor("w.q4_0");
  t.shape = Shape{8, 500};
  EXPECT_WICK_ERROR(dequantize(t), InvalidArgument, "row of 500 values is not a multiple of q4_0's block size 32");
  t.shape = Shape{9, 512};
  EXPECT_WICK_ERROR(dequantize(t), ShapeMismatch, "needs 2592 bytes but holds 2304");
}

// MXFP4 (gpt-oss's experts): tests/data/gguf/gen_mxfp4.py writes the bytes and the
// dequantization of gguf-py's numpy reference (ggml's quantize/dequantize_row_mxfp4), with
// subnormal, huge and overflowing scales and every code in t3d.
const File& mxfp4_file() {
  static const File f = File::open(fixture("mxfp4.gguf"));
  return f;
}

TEST(GgufDequant, Mxfp4IsBitExactWithTheReference) {
  for (const std::string name : {"w.mxfp4", "t3d.mxfp4"}) {
    SCOPED_TRACE(name);
    const QuantTensor& q = mxfp4_file().tensor(name);
    EXPECT_EQ(q.type, GgmlType::MXFP4);
    const Tensor want = dequantize(mxfp4_file().tensor(name + ".f32"));
    const Tensor got = dequantize(q);
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(test::bits_equal(got.to_vector<float>(), want.to_vector<float>()));
    std::vector<float> row(size_t(q.row_elems()));
    dequantize_row(GgmlType::MXFP4, q.bytes.data(), row.data(), q.row_elems());
    const std::vector<float> all = want.to_vector<float>();
    EXPECT_TRUE(test::bits_equal(row, std::vector<float>(all.begin(), all.begin() + q.row_elems())));
  }
  // Hand-derived: t3d's block 5 holds codes 0..15 twice; block 10 has e = 127 (d = 1/2).
  const std::vector<float> t = dequantize(mxfp4_file().tensor("t3d.mxfp4")).to_vector<float>();
  const std::vector<float> codes = {0, 1, 2, 3, 4, 6, 8, 12, -0.0f, -1, -2, -3, -4, -6, -8, -12};
  const float d5 = t[5 * 32 + 1] / 1.0f;  // code 1 is the scale itself
  for (int i = 0; i < 32; ++i) EXPECT_EQ(t[size_t(5 * 32 + i)], codes[size_t(i % 16)] * d5) << i;
  for (int i = 0; i < 32; ++i) EXPECT_EQ(std::fmod(std::fabs(t[size_t(10 * 32 + i)]), 0.5f), 0.0f) << i;
  // Block 19 has e = 255 (d = 2^127): its largest codes (8 or 12: the source's maximum) overflow.
  EXPECT_TRUE(std::any_of(t.begin() + 19 * 32, t.begin() + 20 * 32, [](float v) { return std::isinf(v); }));
}

TEST(GgufQuantize, Mxfp4ReproducesTheReferenceBytes) {
  for (const std::string name : {"w.mxfp4", "t3d.mxfp4"}) {
    SCOPED_TRACE(name);
    const QuantTensor& ref = mxfp4_file().tensor(name);
    const QuantTensor q = quantize(dequantize(mxfp4_file().tensor(name + ".source")), GgmlType::MXFP4);
    ASSERT_EQ(q.bytes.nbytes(), ref.bytes.nbytes());
    const auto* a = static_cast<const uint8_t*>(q.bytes.data());
    const auto* b = static_cast<const uint8_t*>(ref.bytes.data());
    // t3d's edited blocks (gen_mxfp4.py: scales of blocks 1, 4, ..., 19 and the codes of 5)
    // differ from the quantization of its source by construction.
    std::set<size_t> edited;
    if (name == "t3d.mxfp4") edited = {1, 4, 5, 7, 10, 13, 16, 19};
    int differing = 0;
    for (size_t blk = 0; blk < ref.bytes.nbytes() / 17; ++blk)
      if (!edited.count(blk) && std::memcmp(a + blk * 17, b + blk * 17, 17) != 0) ++differing;
    EXPECT_EQ(differing, 0);
  }
  // Hand-derived: e = floor(log2 3) - 2 + 127 = 126, d = 2^(126 - 128), and -3 = -12 * d is
  // code 15 in both nibbles.
  const QuantTensor threes = quantize(full(Shape{1, 32}, -3.0), GgmlType::MXFP4);
  const auto* o = static_cast<const uint8_t*>(threes.bytes.data());
  EXPECT_EQ(o[0], 126);
  EXPECT_EQ(o[1], 0xFF);
  const QuantTensor z = quantize(Tensor::empty(Shape{1, 64}).fill_(0.0), GgmlType::MXFP4);
  EXPECT_EQ(static_cast<const uint8_t*>(z.bytes.data())[0], 0);
  for (float v : dequantize(z).to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

// ---- quantization -----------------------------------------------------------------------

double rel_rms(const std::vector<float>& got, const std::vector<float>& src) {
  double num = 0, den = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    num += (double(got[i]) - src[i]) * (double(got[i]) - src[i]);
    den += double(src[i]) * src[i];
  }
  return std::sqrt(num / den);
}

TEST(GgufQuantize, ErrorMatchesGgmlReference) {
  const test::StTensor& src = golden("src.w");
  const Tensor x = Tensor::from_vector(src.values, Shape{8, 512});
  // README table: rms(deq - src) / rms(src) of ggml's reference quantizers over w.
  const std::vector<std::pair<GgmlType, double>> table = {{GgmlType::Q8_0, 5.48e-03}, {GgmlType::Q4_0, 8.55e-02},
                                                          {GgmlType::Q4_K, 7.33e-02}, {GgmlType::Q6_K, 1.76e-02},
                                                          {GgmlType::F16, 2.00e-04},  {GgmlType::BF16, 1.65e-03}};
  for (const auto& [type, ref] : table) {
    SCOPED_TRACE(std::string(ggml_type_name(type)));
    const QuantTensor q = quantize(x, type, "w");
    EXPECT_EQ(q.shape, (Shape{8, 512}));
    const double err = rel_rms(dequantize(q).to_vector<float>(), src.values);
    EXPECT_LE(err, ref * 1.02);
    EXPECT_GE(err, ref * 0.9);
  }
}

TEST(GgufQuantize, ReferenceQuantizersReproduceGgmlBytes) {
  // q8_0 and q4_0 are ggml's deterministic reference algorithms: same bytes as the file.
  const File f = File::open(fixture("quants.gguf"));
  const Tensor x = dequantize(f.tensor("w.f32"));
  for (const char* name : {"w.q8_0", "w.q4_0", "w.f16", "w.bf16"}) {
    const QuantTensor& ref = f.tensor(name);
    const QuantTensor q = quantize(x, ref.type);
    ASSERT_EQ(q.bytes.nbytes(), ref.bytes.nbytes());
    EXPECT_EQ(std::memcmp(q.bytes.data(), ref.bytes.data(), ref.bytes.nbytes()), 0) << name;
  }
}

TEST(GgufQuantize, ZerosAndErrors) {
  const Tensor z = Tensor::empty(Shape{2, 256}).fill_(0.0);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    const auto v = dequantize(quantize(z, t)).to_vector<float>();
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; }));
  }
  EXPECT_WICK_ERROR(quantize(Tensor::empty(Shape{2, 100}), GgmlType::Q8_0), InvalidArgument,
                    "row of 100 values is not a multiple of q8_0's block size 32");
  EXPECT_WICK_ERROR(quantize(Tensor::empty(Shape{256}), GgmlType::Q2_K), Unsupported, "no quantizer for q2_K");
}

// ---- quantized matmul -------------------------------------------------------------------

TEST(GgufMatmul, MatchesExactProductOfDequantizedWeights) {
  const File f = File::open(fixture("quants.gguf"));
  const test::StTensor& xs = golden("x");
  const Tensor x = Tensor::from_vector(xs.values, Shape{3, 512});
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    const QuantTensor& w = f.tensor("w." + type);
    const Tensor y = quant_matmul(x, w);
    ASSERT_EQ(y.shape(), (Shape{3, 8}));
    const auto got = y.to_vector<float>();
    const auto& want = golden("mm_dequant." + type).values;
    const auto wd = dequantize(w).to_vector<float>();
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 8; ++n) {
        double S = 0;
        for (int k = 0; k < 512; ++k)
          S += std::fabs(wd[size_t(n * 512 + k)]) * std::fabs(xs.values[size_t(m * 512 + k)]);
        EXPECT_LE(std::fabs(double(got[size_t(m * 8 + n)]) - want[size_t(m * 8 + n)]), 1e-5 * S) << m << "," << n;
      }
    for (int m = 0; m < 3; ++m) EXPECT_EQ(got[size_t(m * 8 + 2)], 0.0f);  // the zero row of w
  }
}

// With q8 activations the result is ggml's quantized formula (mm_xq), and close to what
// ggml's own kernels computed (mm_ggml): q8_0 / q4_0 through the integer block dot
// products, q5_0 (whose ggml activation type is q8_0 too) through the f32 product of
// the rounded x.
TEST(GgufMatmul, Q8ActivationsMatchGgml) {
  const File f = File::open(fixture("quants.gguf"));
  const test::StTensor& xs = golden("x");
  const Tensor x = Tensor::from_vector(xs.values, Shape{3, 512});
  for (const std::string& type : {"q8_0", "q4_0", "q5_0"}) {
    SCOPED_TRACE(type);
    const QuantTensor& w = f.tensor("w." + type);
    const auto got = quant_matmul(x, w, QuantActivation::Q8).to_vector<float>();
    const auto wd = dequantize(w).to_vector<float>();
    for (const std::string& ref : {"mm_xq.", "mm_ggml."}) {
      const auto& want = golden(ref + type).values;
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 8; ++n) {
          double S = 0;
          for (int k = 0; k < 512; ++k)
            S += std::fabs(wd[size_t(n * 512 + k)]) * std::fabs(xs.values[size_t(m * 512 + k)]);
          EXPECT_LE(std::fabs(double(got[size_t(m * 8 + n)]) - want[size_t(m * 8 + n)]), 1e-6 * S)
              << ref << m << "," << n;
        }
    }
  }
  // K not a multiple of 32 (possible for the float types) cannot be rounded per 32 values.
  const QuantTensor w40 = quantize(Tensor::from_vector(std::vector<float>(2 * 40, 1.0f), Shape{2, 40}), GgmlType::F16);
  EXPECT_WICK_ERROR(quant_matmul(ones(Shape{1, 40}), w40, QuantActivation::Q8), ShapeMismatch,
                    "K must be a multiple of 32, got K = 40");
}

TEST(GgufMatmul, StridedActivationAndErrors) {
  const File f = File::open(fixture("quants.gguf"));
  const Tensor x = Tensor::from_vector(golden("x").values, Shape{3, 512});
  const Tensor xt = x.t().contiguous().t();  // same values, transposed strides
  const QuantTensor& w = f.tensor("w.q6_k");
  EXPECT_EQ(quant_matmul(xt, w).to_vector<float>(), quant_matmul(x, w).to_vector<float>());
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{3, 256}), w), ShapeMismatch, "disagree on K");
  EXPECT_WICK_ERROR(quant_matmul(Tensor::empty(Shape{512}), w), ShapeMismatch, "expected x (M, K) and W (N, K)");
}

// ---- writer -----------------------------------------------------------------------------

TEST(GgufWriter, RoundTripsMetadataAndTensors) {
  gguf::Writer w;
  w.set("general.architecture", Value(std::string("wick")));
  w.set("a.u8", Value(uint8_t(200)));
  w.set("a.i8", Value(int8_t(-3)));
  w.set("a.u16", Value(uint16_t(65000)));
  w.set("a.i16", Value(int16_t(-30000)));
  w.set("a.u32", Value(uint32_t(4000000000u)));
  w.set("a.i32", Value(int32_t(-7)));
  w.set("a.f32", Value(1.5f));
  w.set("a.bool", Value(true));
  w.set("a.u64", Value(uint64_t(1) << 63));
  w.set("a.i64", Value(int64_t(-1)));
  w.set("a.f64", Value(0.1));
  w.set("a.arr", Value(Array{ValueType::String, {Value(std::string("x")), Value(std::string("yz"))}}));
  w.set("a.nested", Value(Array{ValueType::Array, {Value(Array{ValueType::I32, {Value(int32_t(5))}})}}));
  w.set("general.alignment", Value(uint32_t(64)));
  const Tensor src = Tensor::from_vector(golden("src.w").values, Shape{8, 512});
  w.add_tensor("w.f32", src);
  w.add_tensor("w.f16", src.to(DType::F16));
  w.add_tensor(quantize(src, GgmlType::Q4_K, "w.q4_k"));
  w.add_tensor("odd", Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{3}));
  const std::string bytes = w.serialize();
  const File f = File::parse(bytes_of(bytes));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(bytes.size() % 64, 0u);
  ASSERT_EQ(f.metadata().size(), 15u);
  EXPECT_EQ(f.get("a.u8").get<uint8_t>(), 200);
  EXPECT_EQ(f.get("a.i16").get<int16_t>(), -30000);
  EXPECT_EQ(f.get("a.u64").get<uint64_t>(), uint64_t(1) << 63);
  EXPECT_EQ(f.get("a.f64").get<double>(), 0.1);
  EXPECT_EQ(f.get("a.arr").get<std::vector<std::string>>(), (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(f.get("a.nested").get<Array>()[0].get<std::vector<int32_t>>(), std::vector<int32_t>{5});
  EXPECT_EQ(f.tensor("w.f32").type, GgmlType::F32);
  EXPECT_EQ(f.tensor("w.f16").type, GgmlType::F16);
  EXPECT_EQ(f.tensor("w.q4_k").shape, (Shape{8, 512}));
  EXPECT_EQ(dequantize(f.tensor("w.f32")).to_vector<float>(), src.to_vector<float>());
  EXPECT_EQ(dequantize(f.tensor("w.q4_k")).to_vector<float>(),
            dequantize(quantize(src, GgmlType::Q4_K)).to_vector<float>());
  EXPECT_EQ(dequantize(f.tensor("odd")).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_WICK_ERROR(w.add_tensor("odd", src), InvalidArgument, "duplicate tensor name 'odd'");
}

// ---- metadata arrays stay compact -------------------------------------------------------

// Resident memory of this process in bytes (Linux).
int64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

TEST(GgufArrays, LargeArraysCostAboutTheirFileBytes) {
  constexpr size_t kBytes = 10'000'000, kStrings = 1'000'000;
  std::vector<uint8_t> u8(kBytes);
  for (size_t i = 0; i < kBytes; ++i) u8[i] = uint8_t(i * 7 + i / 256);
  std::vector<std::string> strings(kStrings);
  for (size_t i = 0; i < kStrings; ++i) strings[i] = "tok" + std::to_string(i);
  gguf::Writer w;
  w.set("big.u8", Value(Array::of(u8)));
  w.set("big.strings", Value(Array::of(strings)));
  const Buffer bytes = bytes_of(w.serialize());
  const int64_t before = resident_bytes();
  const File f = File::parse(bytes);
  const int64_t growth = resident_bytes() - before;
  // A Value per element took ~40 bytes per u8 (400 MB here); packed, the two arrays
  // hold their 10 MB and ~15 MB of file bytes plus 8 bytes of offset per string.
  EXPECT_LT(growth, int64_t(64) << 20) << "parsing grew the resident set by " << growth << " bytes";
  const Array& a = f.get("big.u8").get<Array>();
  EXPECT_EQ(a.elem_type(), ValueType::U8);
  EXPECT_EQ(a.size(), kBytes);
  EXPECT_EQ(a.packed_bytes().size(), kBytes);
  EXPECT_EQ(a[12345].get<uint8_t>(), u8[12345]);
  EXPECT_EQ(f.get("big.u8").get<std::vector<uint8_t>>(), u8);
  const Array& s = f.get("big.strings").get<Array>();
  EXPECT_EQ(s.size(), kStrings);
  EXPECT_EQ(s.string_at(999'999), "tok999999");
  EXPECT_EQ(s[0].get<std::string>(), "tok0");
  EXPECT_EQ(f.get("big.strings").get<std::vector<std::string>>(), strings);
  EXPECT_EQ(f.get("big.u8").to_string(3), "[" + std::to_string(u8[0]) + ", " + std::to_string(u8[1]) + ", " +
                                              std::to_string(u8[2]) + ", ... (10000000 items)]");
}

TEST(GgufArrays, EveryElementTypeRoundTripsAndMismatchesAreNamed) {
  gguf::Writer w;
  w.set("i16", Value(Array::of(std::vector<int16_t>{-32768, 0, 32767})));
  w.set("f64", Value(Array::of(std::vector<double>{0.1, -2.5})));
  w.set("bool", Value(Array::of(std::vector<bool>{true, false})));
  w.set("u64", Value(Array::of(std::vector<uint64_t>{uint64_t(1) << 63})));
  w.set("empty", Value(Array::of(std::vector<float>{})));
  w.set("nested", Value(Array::of(std::vector<Array>{Array::of(std::vector<std::string>{"a", ""}),
                                                     Array::of(std::vector<std::string>{"\n"})})));
  const File f = File::parse(bytes_of(w.serialize()));
  EXPECT_EQ(f.get("i16").get<std::vector<int16_t>>(), (std::vector<int16_t>{-32768, 0, 32767}));
  EXPECT_EQ(f.get("f64").get<std::vector<double>>(), (std::vector<double>{0.1, -2.5}));
  EXPECT_EQ(f.get("bool").get<std::vector<bool>>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(f.get("bool").get<Array>()[1].get<bool>(), false);
  EXPECT_EQ(f.get("u64").get<std::vector<uint64_t>>(), (std::vector<uint64_t>{uint64_t(1) << 63}));
  EXPECT_TRUE(f.get("empty").get<std::vector<float>>().empty());
  const auto nested = f.get("nested").get<std::vector<std::vector<std::string>>>();
  EXPECT_EQ(nested, (std::vector<std::vector<std::string>>{{"a", ""}, {"\n"}}));
  EXPECT_EQ(f.get("nested").to_string(), "[[\"a\", \"\"], [\"\\x0a\"]]");
  EXPECT_WICK_ERROR(f.get("i16").get<std::vector<uint16_t>>(), InvalidArgument,
                    "requested u16 but the value is array of i16");
  EXPECT_WICK_ERROR(f.get("empty").get<std::vector<int32_t>>(), InvalidArgument,
                    "requested i32 but the value is array of f32");
  EXPECT_WICK_ERROR(f.get("i16").get<Array>()[3], InvalidArgument, "index 3 is out of range for 3 elements");
  EXPECT_WICK_ERROR(f.get("i16").get<Array>().string_at(0), InvalidArgument, "array of i16");
  EXPECT_WICK_ERROR(Array(ValueType::U8, {Value(int8_t(1))}), InvalidArgument, "an array of u8 cannot hold a i8");
}

// A bool array element that is neither 0 nor 1 is a format error, as a bool value is.
TEST(GgufArrays, BoolArrayElementsAreChecked) {
  gguf::Writer w;
  w.set("b", Value(Array::of(std::vector<bool>{true, false, true})));
  std::string bytes = w.serialize();
  const size_t at = bytes.find(std::string("\x01\x00\x01", 3));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2] = 2;
  EXPECT_WICK_ERROR(File::parse(bytes_of(bytes)), Format, "bool array element 2 is 2, neither 0 nor 1");
}

// ---- plain tensor types (ids 24-28) and rank 0 ------------------------------------------

TEST(GgufPlainTypes, IntegerAndF64TensorsReadExactly) {
  EXPECT_EQ(ggml_type_from_id(24), GgmlType::I8);
  EXPECT_EQ(ggml_type_from_id(28), GgmlType::F64);
  EXPECT_EQ(ggml_type_from_id(29), std::nullopt);
  EXPECT_EQ(ggml_type_name(GgmlType::I32), "i32");
  EXPECT_EQ(ggml_type_from_name("I16"), GgmlType::I16);
  auto raw = [](const std::string& name, GgmlType type, Shape shape, const void* p, size_t n) {
    QuantTensor q{name, type, shape, Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(n)})};
    std::memcpy(q.bytes.mutable_data(), p, n);
    return q;
  };
  const int8_t i8[] = {-128, 0, 127};
  const int16_t i16[] = {-32768, 1, 32767};
  const int32_t i32[] = {INT32_MIN, -1, INT32_MAX, 7};
  const int64_t i64[] = {INT64_MIN, INT64_MAX};
  const double f64[] = {0.1, -1e300};
  gguf::Writer w;
  w.add_tensor(raw("i8", GgmlType::I8, Shape{3}, i8, sizeof i8));
  w.add_tensor(raw("i16", GgmlType::I16, Shape{3}, i16, sizeof i16));
  w.add_tensor(raw("i32", GgmlType::I32, Shape{2, 2}, i32, sizeof i32));
  w.add_tensor(raw("i64", GgmlType::I64, Shape{2}, i64, sizeof i64));
  w.add_tensor(raw("f64", GgmlType::F64, Shape{2}, f64, sizeof f64));
  w.add_tensor("scalar", Tensor::from_vector(std::vector<float>{2.5f}, Shape{}));
  w.add_tensor("long", Tensor::from_vector(std::vector<int64_t>{-5, 1LL << 40}, Shape{2}));
  const File f = File::parse(bytes_of(w.serialize()));
  EXPECT_EQ(f.tensor("i8").type, GgmlType::I8);
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i8")).to_vector<int64_t>(), (std::vector<int64_t>{-128, 0, 127}));
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i16")).to_vector<int64_t>(), (std::vector<int64_t>{-32768, 1, 32767}));
  const Tensor t32 = gguf::plain_tensor(f.tensor("i32"));
  EXPECT_EQ(t32.dtype(), DType::I64);
  EXPECT_EQ(t32.shape(), (Shape{2, 2}));
  EXPECT_EQ(t32.to_vector<int64_t>(), (std::vector<int64_t>{INT32_MIN, -1, INT32_MAX, 7}));
  EXPECT_EQ(gguf::plain_tensor(f.tensor("i64")).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(gguf::plain_tensor(f.tensor("f64")).to_vector<double>(), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(f.tensor("long").type, GgmlType::I64);
  EXPECT_EQ(gguf::plain_tensor(f.tensor("long")).to_vector<int64_t>(), (std::vector<int64_t>{-5, 1LL << 40}));
  EXPECT_EQ(f.tensor("scalar").shape, Shape{});
  EXPECT_EQ(dequantize(f.tensor("scalar")).to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_EQ(gguf::plain_tensor(f.tensor("scalar")).to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_FALSE(gguf::dequantizable(GgmlType::I32));
  EXPECT_TRUE(gguf::dequantizable(GgmlType::Q4_K));
  EXPECT_WICK_ERROR(dequantize(f.tensor("i32")), Unsupported, "i32 tensors are plain values");
  EXPECT_WICK_ERROR(gguf::plain_tensor(quantize(zeros(Shape{32}), GgmlType::Q8_0, "q")), Unsupported,
                    "tensor 'q' is block-quantized (q8_0)");
  EXPECT_WICK_ERROR(w.add_tensor("u8", zeros(Shape{2}, DType::U8)), DTypeMismatch, "GGUF has no u8 tensor type");
}

// A failed write leaves neither the target nor a temporary behind.
TEST(GgufWriter, FailedWriteLeavesNoFile) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "wick_gguf_write_fail";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "file") << "x"; }
  gguf::Writer w;
  w.add_tensor("t", zeros(Shape{4}));
  EXPECT_WICK_ERROR(w.write(dir / "file" / "out.gguf"), Io, "gguf writer: cannot open");
  w.write(dir / "ok.gguf");
  EXPECT_EQ(File::open(dir / "ok.gguf").tensors().size(), 1u);
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.exists();
  EXPECT_EQ(entries, 2u);  // "file" and "ok.gguf": no temporary left
  std::filesystem::remove_all(dir);
}

// Writing the fixture's own content back gives a file ggml's layout rules accept and
// that reads back identically (offsets are the running padded sums, as in ggml).
TEST(GgufWriter, RewritesTheFixtureLayout) {
  const File f = File::open(fixture("quants.gguf"));
  gguf::Writer w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const auto& t : f.tensors()) w.add_tensor(t);
  const std::string out = w.serialize();
  EXPECT_EQ(out, read_file(fixture("quants.gguf")));
}

}  // namespace
}  // namespace wick

namespace wick {
namespace {

// ---- wick convert -----------------------------------------------------------------------

TEST(GgufConvert, WritesEveryTensorDequantized) {
  const std::string out = ::testing::TempDir() + "wick_gguf_convert.safetensors";
  const std::string cmd =
      std::string(WICK_CLI_PATH) + " convert " + fixture("quants.gguf") + " " + out + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto st = test::read_f32_safetensors(out);
  EXPECT_EQ(st.size(), 28u);
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    const std::string want = type == "f32" ? "src.w" : "deq.w." + type;
    EXPECT_TRUE(test::bits_equal(st.at("w." + type).values, golden(want).values));
    EXPECT_EQ(st.at("t3d." + type).shape, (std::vector<int64_t>{2, 4, 256}));
  }
  const std::string bad =
      std::string(WICK_CLI_PATH) + " convert " + fixture("bad/n_dims_5.gguf") + " " + out + " 2> /dev/null";
  EXPECT_NE(std::system(bad.c_str()), 0);
  std::remove(out.c_str());
}

}  // namespace
}  // namespace wick
