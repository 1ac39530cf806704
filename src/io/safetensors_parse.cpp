// safetensors: reading and validating the header. The checks follow the reference
// implementation (huggingface/safetensors, tensor.rs: read_metadata + Metadata::validate)
// so that wick accepts exactly the files the reference accepts.
#include <algorithm>
#include <bit>
#include <cstring>

#include "io/json_limits.h"
#include "io/safetensors_format.h"
#include "wick/io.h"

namespace wick::safetensors {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

// A sorted object (log-time lookups); the header order, which orders tensors with equal
// offsets, comes from json::parse's list of top-level keys. (nlohmann::ordered_json keeps
// the order itself but finds keys by a linear search: opening was quadratic in the tensors.)
using Json = nlohmann::json;
using json::brief;

constexpr std::string_view kPrefix = "safetensors: ";

// Every defect of the file is a Format error starting with kPrefix.
struct Context {
  template <class... Args>
  [[noreturn]] void fail(const Args&... parts) const {
    ::wick::fail(ErrorKind::Format, kPrefix, parts...);
  }
};

// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF), as Rust's
// str::from_utf8 checks it.
bool valid_utf8(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// A name for an error message: control characters escaped so that the message stays
// on one line, and cut short.
std::string shown(const std::string& name) {
  std::string out;
  for (const unsigned char c : name.substr(0, 100)) {
    if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    } else {
      out += char(c);
    }
  }
  return name.size() > 100 ? out + "..." : out;
}

// A shape for a message: a hostile header may give it a million dimensions.
std::string shown(const Shape& shape) {
  if (shape.rank() <= 8) return ::wick::detail::cat(shape);
  return ::wick::detail::cat("[", shape[0], ", ", shape[1], ", ... (", shape.rank(), " dims)]");
}

size_t to_size(const Json& v) { return size_t(v.get<uint64_t>()); }

TensorInfo parse_entry(const Context& ctx, const std::string& name, const Json& entry) {
  if (!entry.is_object()) ctx.fail("tensor '", shown(name), "': entry is not a JSON object");
  TensorInfo info;
  info.name = name;

  const auto dt = entry.find("dtype");
  if (dt == entry.end()) ctx.fail("tensor '", shown(name), "': missing \"dtype\"");
  if (!dt->is_string()) ctx.fail("tensor '", shown(name), "': \"dtype\" is not a string");
  info.dtype = dt->get<std::string>();
  const detail::DTypeEntry* known = detail::find_dtype(info.dtype);
  if (!known) ctx.fail("tensor '", shown(name), "': unknown dtype \"", shown(info.dtype), "\"");
  info.wick_dtype = known->wick;

  const auto sh = entry.find("shape");
  if (sh == entry.end()) ctx.fail("tensor '", shown(name), "': missing \"shape\"");
  if (!sh->is_array()) ctx.fail("tensor '", shown(name), "': \"shape\" is not an array");
  // The element count in bits, overflow-checked like the reference (usize products).
  uint64_t bits = known->bits;
  std::vector<int64_t> dims;
  for (const Json& d : *sh) {
    if (!d.is_number_unsigned())
      ctx.fail("tensor '", shown(name), "': shape entry ", brief(d), " is not a non-negative integer");
    const uint64_t v = d.get<uint64_t>();
    if (v > uint64_t(INT64_MAX) || __builtin_mul_overflow(bits, v, &bits))
      ctx.fail("tensor '", shown(name), "': shape ", brief(*sh), " overflows the element count");
    dims.push_back(int64_t(v));
  }
  // bits fits in uint64 so every partial product of dims fits in int64: Shape is safe.
  info.shape = Shape(std::move(dims));

  const auto off = entry.find("data_offsets");
  if (off == entry.end()) ctx.fail("tensor '", shown(name), "': missing \"data_offsets\"");
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
    ctx.fail("tensor '", shown(name), "': \"data_offsets\" ", brief(*off),
             " is not [begin, end] of non-negative integers");
  info.begin = to_size((*off)[0]);
  info.end = to_size((*off)[1]);

  if (bits % 8 != 0)
    ctx.fail("tensor '", shown(name), "': ", info.dtype, " ", shown(info.shape), " is ", bits,
             " bits, not a whole number of bytes");
  if (info.end >= info.begin && info.end - info.begin != bits / 8)
    ctx.fail("tensor '", shown(name), "': data_offsets [", info.begin, ", ", info.end, ") hold ", info.end - info.begin,
             " bytes but ", info.dtype, " ", shown(info.shape), " needs ", bits / 8);
  return info;
}

std::map<std::string, std::string> parse_metadata(const Context& ctx, const Json& meta) {
  std::map<std::string, std::string> out;
  if (meta.is_null()) return out;  // the reference's Option<HashMap>: null means none
  if (!meta.is_object()) ctx.fail("\"__metadata__\" is not a JSON object");
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string())
      ctx.fail("\"__metadata__\" value of key '", shown(key), "' is not a string: ", brief(value));
    out[key] = value.get<std::string>();
  }
  return out;
}

}  // namespace

File File::open(const std::filesystem::path& path) {
  Buffer bytes = Buffer::map_file(path);
  try {
    return parse(std::move(bytes));
  } catch (const Error& e) {
    // Name the file: "safetensors: model.safetensors: header is not valid JSON ...".
    std::string_view msg = e.what();
    if (e.kind() != ErrorKind::Format || !msg.starts_with(kPrefix)) throw;
    msg.remove_prefix(kPrefix.size());
    throw Error(ErrorKind::Format, ::wick::detail::cat(kPrefix, path.string(), ": ", msg));
  }
}

File File::parse(Buffer bytes) {
  const Context ctx;
  WICK_CHECK(bytes.defined(), InvalidArgument, "safetensors: parse of an undefined buffer");
  WICK_CHECK(bytes.device().is_cpu(), DeviceMismatch, "safetensors: parse needs bytes on the cpu, got ",
             bytes.device());
  const size_t size = bytes.nbytes();
  const auto* p = static_cast<const unsigned char*>(bytes.data());
  if (size < 8) ctx.fail("file is ", size, " bytes, shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, p, 8);
  if (n > detail::kMaxHeaderSize)
    ctx.fail("header length ", n, " exceeds the limit of ", detail::kMaxHeaderSize, " bytes");
  if (n > size - 8) ctx.fail("header length ", n, " runs past the end of the ", size, "-byte file");
  if (!valid_utf8(p + 8, n)) ctx.fail("header is not valid UTF-8");

  std::vector<std::string> names;  // in header order
  const Json header = json::parse(std::string_view(reinterpret_cast<const char*>(p + 8), size_t(n)),
                                  "safetensors: header is not valid JSON", names);
  if (!header.is_object()) ctx.fail("header is not a JSON object");

  File f;
  f.tensors_.reserve(names.size());
  for (const std::string& name : names) {
    const Json& entry = header.find(name).value();
    if (name == "__metadata__") {
      f.metadata_ = parse_metadata(ctx, entry);
      continue;
    }
    f.tensors_.push_back(parse_entry(ctx, name, entry));
  }
  std::stable_sort(f.tensors_.begin(), f.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  size_t expected = 0;
  for (const TensorInfo& t : f.tensors_) {
    if (t.end < t.begin)
      ctx.fail("tensor '", shown(t.name), "': data_offsets [", t.begin, ", ", t.end, "] end before they begin");
    if (t.begin != expected) {
      const char* what = t.begin > expected ? "leave a gap" : "overlap the previous tensor";
      if (expected == 0) what = "do not start the data section at 0";
      ctx.fail("tensor '", shown(t.name), "': data_offsets [", t.begin, ", ", t.end, ") ", what, " (expected begin ",
               expected, ")");
    }
    expected = t.end;
  }
  const size_t data_size = size - 8 - size_t(n);
  if (expected != data_size)
    ctx.fail("the tensors cover ", expected, " bytes but the data section holds ", data_size,
             expected < data_size ? " (trailing bytes)" : " (truncated file)");

  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  f.header_size_ = size_t(n);
  f.bytes_ = std::move(bytes);
  return f;
}

bool File::contains(const std::string& name) const { return index_.count(name) != 0; }

const TensorInfo& File::info(const std::string& name) const {
  const auto it = index_.find(name);
  WICK_CHECK(it != index_.end(), InvalidArgument, "safetensors: no tensor named '", name, "' in the file");
  return tensors_[it->second];
}

}  // namespace wick::safetensors
