// GGUF reader: validates the whole header before handing out any view. It rejects what
// ggml's gguf_init_from_file rejects, plus what ggml misses (a dimension product that
// wraps to zero, tensor data past the end of a mapped file). No count read from the file
// is trusted for an allocation until it is known to fit in the bytes that remain.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>

#include "wick/gguf.h"

namespace wick::gguf {

namespace {
constexpr int kMaxDims = 4;          // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;  // arrays of arrays: deeper than any real file, bounds recursion
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims, type, offset
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, 1-byte value
constexpr int64_t kMaxSpan = INT64_MAX / 8;              // elements, so that 8-byte strides fit

// Smallest encoding of one value of type t (0 for an invalid id): a number's or bool's
// packed size, a string's length field, an array's element type and count.
uint64_t min_value_bytes(ValueType t) {
  if (t == ValueType::String) return 8;
  if (t == ValueType::Array) return 12;
  return packed_size(t);
}
}  // namespace

class Parser {
 public:
  Parser(Buffer bytes, std::string origin)
      : bytes_(std::move(bytes)),
        p_(static_cast<const uint8_t*>(bytes_.data())),
        size_(bytes_.nbytes()),
        origin_(std::move(origin)) {}

  File parse() {
    File f;
    f.bytes_ = bytes_;
    read_header(f);
    read_metadata(f);
    read_alignment(f);
    read_tensor_infos(f);
    place_tensors(f);
    return f;
  }

 private:
  template <class... Args>
  [[noreturn]] void bad(const Args&... parts) const {
    fail(ErrorKind::Format, "gguf", origin_, ": ", parts...);
  }

  size_t remaining() const { return size_ - pos_; }
  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      bad("truncated file: ", what, " at byte ", pos_, " needs ", n, " bytes but only ", remaining(), " remain");
  }
  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // A length-prefixed string, viewed in place.
  std::string_view read_string_view(const char* what) {
    const auto len = read<uint64_t>(what);
    if (len > remaining())
      bad(what, " at byte ", pos_ - 8, " declares a string length of ", len, " bytes but only ", remaining(),
          " bytes remain in the file");
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), size_t(len));
    pos_ += size_t(len);
    return s;
  }
  std::string read_string(const char* what) { return std::string(read_string_view(what)); }

  void read_header(File& f) {
    need(4, "magic");
    if (std::memcmp(p_, "GGUF", 4) != 0) {
      std::string m(reinterpret_cast<const char*>(p_), 4);
      for (char& c : m)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      bad("bad magic '", m, "' (expected 'GGUF')");
    }
    pos_ = 4;
    f.version_ = read<uint32_t>("version");
    if (f.version_ == 1)
      bad("version 1 is not supported (obsolete format with 32-bit counts); wick reads versions 2 and 3");
    if (f.version_ == 0 || f.version_ > 3) bad("unsupported version ", f.version_, " (wick reads versions 2 and 3)");
    n_tensors_ = read<uint64_t>("tensor count");
    n_kv_ = read<uint64_t>("metadata count");
    // Each entry takes at least a few bytes, so absurd counts are rejected before any loop.
    if (n_kv_ > remaining() / kMinKvBytes)
      bad("metadata count ", n_kv_, " cannot fit in the ", remaining(), " bytes after the header");
    if (n_tensors_ > remaining() / kMinTensorInfoBytes)
      bad("tensor count ", n_tensors_, " cannot fit in the ", remaining(), " bytes after the header");
  }

  Value read_value(ValueType t, const std::string& key, int depth) {
    switch (t) {
      case ValueType::U8: return Value(read<uint8_t>("u8 value"));
      case ValueType::I8: return Value(read<int8_t>("i8 value"));
      case ValueType::U16: return Value(read<uint16_t>("u16 value"));
      case ValueType::I16: return Value(read<int16_t>("i16 value"));
      case ValueType::U32: return Value(read<uint32_t>("u32 value"));
      case ValueType::I32: return Value(read<int32_t>("i32 value"));
      case ValueType::F32: return Value(read<float>("f32 value"));
      case ValueType::U64: return Value(read<uint64_t>("u64 value"));
      case ValueType::I64: return Value(read<int64_t>("i64 value"));
      case ValueType::F64: return Value(read<double>("f64 value"));
      case ValueType::Bool: {
        const auto b = read<uint8_t>("bool value");
        if (b > 1) bad("metadata key '", key, "': bool value ", int(b), " is neither 0 nor 1");
        return Value(b == 1);
      }
      case ValueType::String: return Value(read_string("string value"));
      case ValueType::Array: return Value(read_array(key, depth));
    }
    bad("metadata key '", key, "': invalid value type id ", uint32_t(t), " (valid ids are 0..12)");
  }

  Array read_array(const std::string& key, int depth) {
    if (depth >= kMaxArrayNesting) bad("metadata key '", key, "': arrays nested deeper than ", kMaxArrayNesting);
    Array a;
    const auto et = read<uint32_t>("array element type");
    if (et > uint32_t(ValueType::F64) || min_value_bytes(ValueType(et)) == 0)
      bad("metadata key '", key, "': invalid array element type id ", et, " (valid ids are 0..12)");
    a.elem_type_ = ValueType(et);
    const auto count = read<uint64_t>("array length");
    if (count > remaining() / min_value_bytes(a.elem_type_))
      bad("metadata key '", key, "': array of ", count, " ", value_type_name(a.elem_type_),
          " elements cannot fit in the ", remaining(), " bytes that remain in the file");
    // Numbers and bools are copied as one block (the file is little-endian, as is the host).
    if (const size_t elem = packed_size(a.elem_type_)) {
      const size_t n = size_t(count) * elem;  // fits: checked against remaining() above
      a.bytes_.assign(reinterpret_cast<const char*>(p_ + pos_), n);
      if (a.elem_type_ == ValueType::Bool)
        for (size_t i = 0; i < n; ++i)
          if (uint8_t(a.bytes_[i]) > 1)
            bad("metadata key '", key, "': bool array element ", i, " is ", int(uint8_t(a.bytes_[i])),
                ", neither 0 nor 1");
      pos_ += n;
      a.size_ = size_t(count);
      return a;
    }
    // count fits in the remaining bytes (checked above), so reserving it is bounded.
    if (a.elem_type_ == ValueType::String)
      a.ends_.reserve(size_t(count));
    else
      a.nested_.reserve(size_t(count));
    for (uint64_t i = 0; i < count; ++i) {
      if (a.elem_type_ == ValueType::String) {
        a.bytes_ += read_string_view("string value");
        a.ends_.push_back(a.bytes_.size());
      } else {
        a.nested_.push_back(read_array(key, depth + 1));
      }
      ++a.size_;
    }
    a.bytes_.shrink_to_fit();  // appending may have doubled the capacity
    return a;
  }

  void read_metadata(File& f) {
    f.metadata_.reserve(size_t(n_kv_));
    for (uint64_t i = 0; i < n_kv_; ++i) {
      std::string key = read_string("metadata key");
      if (f.key_index_.count(key)) bad("duplicate metadata key '", key, "'");
      const auto t = read<uint32_t>("metadata value type");
      if (t > uint32_t(ValueType::F64))
        bad("metadata key '", key, "' has invalid value type id ", t, " (valid ids are 0..12)");
      Value v = read_value(ValueType(t), key, 0);
      f.key_index_[key] = f.metadata_.size();
      f.metadata_.emplace_back(std::move(key), std::move(v));
    }
  }

  void read_alignment(File& f) {
    auto it = f.key_index_.find("general.alignment");
    if (it == f.key_index_.end()) return;
    const Value& v = f.metadata_[it->second].second;
    if (v.type() != ValueType::U32) bad("general.alignment must be a u32, got ", value_type_name(v.type()));
    const uint32_t a = v.get<uint32_t>();
    if (a == 0 || !std::has_single_bit(a)) bad("general.alignment ", a, " is not a power of two");
    f.alignment_ = a;
  }

  void read_tensor_infos(File& f) {
    f.tensors_.reserve(size_t(n_tensors_));
    f.offsets_.reserve(size_t(n_tensors_));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      QuantTensor t;
      t.name = read_string("tensor name");
      if (f.tensor_index_.count(t.name)) bad("duplicate tensor name '", t.name, "'");
      const auto n_dims = read<uint32_t>("tensor n_dims");
      if (n_dims > kMaxDims) bad("tensor '", t.name, "' has ", n_dims, " dimensions (at most ", kMaxDims, ")");
      std::vector<int64_t> ne(n_dims);
      // The product of the non-zero dimensions bounds every stride of the tensor and of
      // its dequantized (up to 8-byte) form; checked per step, so a product that wraps
      // (even to exactly 0) is caught, and so is a huge row next to a zero dimension.
      int64_t span = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = int64_t(read<uint64_t>("tensor dimension"));
        if (ne[d] < 0) bad("tensor '", t.name, "' has a negative dimension ne[", d, "] = ", ne[d]);
        if (__builtin_mul_overflow(span, std::max<int64_t>(ne[d], 1), &span) || span > kMaxSpan)
          bad("tensor '", t.name, "' has too many elements: the product of its dimensions overflows int64");
      }
      const auto type_id = read<uint32_t>("tensor type");
      const auto type = ggml_type_from_id(type_id);
      if (!type) bad("tensor '", t.name, "' has unknown ggml type id ", type_id);
      t.type = *type;
      const GgmlTypeInfo& info = ggml_type_info(t.type);
      const int64_t row = n_dims ? ne[0] : 1;
      if (row % info.block_elems != 0)
        bad("tensor '", t.name, "': row length ne[0] = ", row, " is not a multiple of ", info.name, "'s block size ",
            info.block_elems);
      t.shape = Shape(std::vector<int64_t>(ne.rbegin(), ne.rend()));
      f.offsets_.push_back(read<uint64_t>("tensor offset"));
      f.tensor_index_[t.name] = f.tensors_.size();
      f.tensors_.push_back(std::move(t));
    }
  }

  void place_tensors(File& f) {
    const size_t a = f.alignment_;
    f.data_offset_ = (pos_ + a - 1) / a * a;  // pos_ <= file size, so no overflow
    for (size_t i = 0; i < f.tensors_.size(); ++i) {
      QuantTensor& t = f.tensors_[i];
      const uint64_t off = f.offsets_[i];
      if (off % a != 0) bad("tensor '", t.name, "' offset ", off, " is not a multiple of the alignment ", a);
      const GgmlTypeInfo& info = ggml_type_info(t.type);
      // numel fits in int64 and is a multiple of block_elems; blocks * block_bytes may not fit.
      const uint64_t blocks = uint64_t(t.shape.numel()) / uint64_t(info.block_elems);
      uint64_t nbytes, begin, end;
      if (__builtin_mul_overflow(blocks, uint64_t(info.block_bytes), &nbytes) ||
          __builtin_add_overflow(uint64_t(f.data_offset_), off, &begin) ||
          __builtin_add_overflow(begin, nbytes, &end) || end > size_)
        bad("tensor '", t.name, "' data (offset ", off, ", ", nbytes, " bytes, data section at byte ", f.data_offset_,
            ") runs past the end of the file (", size_, " bytes)");
      t.bytes = bytes_.slice(size_t(begin), size_t(nbytes));
    }
  }

  Buffer bytes_;
  const uint8_t* p_;
  size_t size_;
  std::string origin_;
  size_t pos_ = 0;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
};

File File::open(const std::filesystem::path& path) {
  return Parser(Buffer::map_file(path), " '" + path.string() + "'").parse();
}

File File::parse(Buffer bytes) {
  WICK_CHECK(bytes.defined() && bytes.device().is_cpu(), InvalidArgument, "gguf: parse needs a CPU buffer");
  return Parser(std::move(bytes), "").parse();
}

const Value& File::get(const std::string& key) const {
  auto it = key_index_.find(key);
  WICK_CHECK(it != key_index_.end(), InvalidArgument, "gguf: no metadata key '", key, "'");
  return metadata_[it->second].second;
}

const QuantTensor& File::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  WICK_CHECK(it != tensor_index_.end(), InvalidArgument, "gguf: no tensor named '", name, "'");
  return tensors_[it->second];
}

uint64_t File::tensor_offset(const std::string& name) const {
  (void)tensor(name);
  return offsets_[tensor_index_.at(name)];
}

}  // namespace wick::gguf
