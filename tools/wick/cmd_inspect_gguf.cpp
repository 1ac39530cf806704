// The GGUF half of `wick inspect`: text and JSON listings.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "escape.h"
#include "inspect_gguf.h"
#include "inspect_model.h"
#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

namespace wick::cli {

namespace {
constexpr size_t kShownItems = 16;  // array elements printed before eliding

std::string type_of(const gguf::Value& v) {
  std::string t(gguf::value_type_name(v.type()));
  if (v.type() == gguf::ValueType::Array) {
    const auto& a = v.get<gguf::Array>();
    t += "[" + std::string(gguf::value_type_name(a.elem_type())) + "; " + std::to_string(a.size()) + "]";
  }
  return t;
}

nlohmann::ordered_json to_json(const gguf::Value& v) {
  return std::visit(
      [&]<class T>(const T& x) -> nlohmann::ordered_json {
        if constexpr (std::is_same_v<T, gguf::Array>) {
          nlohmann::ordered_json items = nlohmann::ordered_json::array();
          for (size_t i = 0; i < std::min(kShownItems, x.size()); ++i) items.push_back(to_json(x[i]));
          return {{"elem_type", gguf::value_type_name(x.elem_type())},
                  {"count", x.size()},
                  {"items", items},
                  {"elided", x.size() > kShownItems}};
        } else if constexpr (std::is_floating_point_v<T>) {
          return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(std::to_string(x));
        } else {
          return nlohmann::ordered_json(x);
        }
      },
      v.storage());
}

// The tokenizer the file's tokenizer.ggml.* keys describe, in a few lines (or why it does
// not load); "" when the file has none.
std::string tokenizer_text(const gguf::File& f) {
  if (!f.has("tokenizer.ggml.model")) return "";
  try {
    return text::Tokenizer::from_gguf(f).summary().to_string();
  } catch (const Error& e) {
    return std::string("tokenizer: does not load: ") + e.what() + "\n";
  }
}

std::string shape_text(const Shape& s) {
  std::string r = "[";  // row-major, as `wick inspect` prints safetensors shapes
  for (size_t i = 0; i < s.rank(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace

bool bytes_have_gguf_magic(std::string_view bytes) { return bytes.substr(0, 4) == "GGUF"; }

bool file_has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return bytes_have_gguf_magic(std::string_view(magic, size_t(in.gcount())));
}

nlohmann::ordered_json gguf_json(const std::string& name, const gguf::File& f) {
  nlohmann::ordered_json j = {{"file", name},
                              {"format", "gguf"},
                              {"version", f.version()},
                              {"alignment", f.alignment()},
                              {"data_offset", f.data_offset()},
                              {"file_size", f.file_size()}};
  j["metadata"] = nlohmann::ordered_json::array();
  for (const auto& [k, v] : f.metadata())
    j["metadata"].push_back({{"key", k}, {"type", gguf::value_type_name(v.type())}, {"value", to_json(v)}});
  if (const std::string tok = tokenizer_text(f); !tok.empty()) j["tokenizer"] = tok;
  if (auto model = gguf_model_summary(f)) j["model"] = std::move(*model);
  j["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : f.tensors())
    j["tensors"].push_back({{"name", t.name},
                            {"type", ggml_type_name(t.type)},
                            {"shape", t.shape.dims()},
                            {"nbytes", t.bytes.nbytes()},
                            {"offset", f.tensor_offset(t.name)}});
  return j;
}

void print_gguf_text(const std::string& name, const gguf::File& f) {
  std::cout << printable(name) << ": GGUF v" << f.version() << ", alignment " << f.alignment() << ", data at byte "
            << f.data_offset() << ", " << f.file_size() << " bytes\n";
  if (const auto model = gguf_model_summary(f)) {
    std::cout << '\n';
    print_model_summary(*model);
  }
  size_t kw = 3, tw = 4;
  for (const auto& [k, v] : f.metadata()) {
    kw = std::max(kw, printable(k).size());
    tw = std::max(tw, type_of(v).size());
  }
  std::cout << "\nmetadata (" << f.metadata().size() << "):\n";
  // Value::to_string already writes control bytes in strings as \xNN.
  for (const auto& [k, v] : f.metadata())
    std::cout << "  " << std::left << std::setw(int(kw)) << printable(k) << "  " << std::setw(int(tw)) << type_of(v)
              << "  " << v.to_string(kShownItems) << '\n';
  if (const std::string tok = tokenizer_text(f); !tok.empty()) {
    std::cout << '\n';
    for (size_t at = 0, nl; at < tok.size(); at = nl + 1) {
      nl = tok.find('\n', at);
      std::cout << printable(tok.substr(at, nl - at)) << '\n';
    }
  }
  size_t nw = 4;
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    nw = std::max(nw, printable(t.name).size());
    total += t.bytes.nbytes();
  }
  std::cout << "\ntensors (" << f.tensors().size() << ", " << total << " bytes):\n";
  std::cout << "  " << std::left << std::setw(int(nw)) << "name"
            << "  " << std::setw(6) << "type"
            << "  " << std::setw(18) << "shape"
            << "  " << std::right << std::setw(12) << "bytes"
            << "  " << std::setw(12) << "offset" << '\n';
  for (const auto& t : f.tensors())
    std::cout << "  " << std::left << std::setw(int(nw)) << printable(t.name) << "  " << std::setw(6)
              << ggml_type_name(t.type) << "  " << std::setw(18) << shape_text(t.shape) << "  " << std::right
              << std::setw(12) << t.bytes.nbytes() << "  " << std::setw(12) << f.tensor_offset(t.name) << '\n';
}

}  // namespace wick::cli
