// safetensors: writing tensors and metadata. The header lists metadata first, then the
// tensors in the caller's order with contiguous offsets, padded with spaces to a
// multiple of 8 bytes (as the reference writer does, so f64 data stays aligned).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "io/safetensors_format.h"
#include "io/write_file.h"
#include "wick/io.h"

namespace wick::safetensors {

namespace {

// Each entry keeps its keys in the reference's order (dtype, shape, data_offsets), so it is
// an ordered_json; the whole header is joined from the entries' dumps, as an ordered_json
// of every tensor would find each name by a linear search (saving was quadratic).
using OrderedJson = nlohmann::ordered_json;

// Host, contiguous versions of the tensors (copies only where needed).
std::vector<Tensor> host_contiguous(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<Tensor> out;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    WICK_CHECK(t.defined(), InvalidArgument, "safetensors save: tensor '", name, "' is undefined");
    WICK_CHECK(name != "__metadata__", InvalidArgument,
               "safetensors save: '__metadata__' is reserved, not a tensor name");
    WICK_CHECK(names.insert(name).second, InvalidArgument, "safetensors save: duplicate tensor name '", name, "'");
    out.push_back(t.to(Device::cpu()).contiguous());
  }
  return out;
}

std::string header_json(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::vector<Tensor>& host,
                        const std::map<std::string, std::string>& metadata) {
  std::string s = "{";
  auto add = [&](const std::string& key, const std::string& value_json) {
    if (s.size() > 1) s += ',';
    s += OrderedJson(key).dump();
    s += ':';
    s += value_json;
  };
  try {
    if (!metadata.empty()) add("__metadata__", nlohmann::json(metadata).dump());  // sorted by key, as the map
    size_t offset = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      const Tensor& t = host[i];
      const std::string_view dt = detail::dtype_name(t.dtype());
      WICK_CHECK(!dt.empty(), Unsupported, "safetensors save: no safetensors dtype for ", t.dtype());
      const OrderedJson entry = {
          {"dtype", std::string(dt)}, {"shape", t.shape().dims()}, {"data_offsets", {offset, offset + t.nbytes()}}};
      add(tensors[i].first, entry.dump());
      offset += t.nbytes();
    }
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8 in a name or metadata string
    fail(ErrorKind::InvalidArgument, "safetensors save: ", e.what());
  }
  s += '}';
  s.append((8 - s.size() % 8) % 8, ' ');
  return s;
}

// Everything that can be checked before a byte is written: host copies and the header.
struct Prepared {
  std::vector<Tensor> host;
  std::string header;
};
Prepared prepare(const std::vector<std::pair<std::string, Tensor>>& tensors,
                 const std::map<std::string, std::string>& metadata) {
  Prepared p;
  p.host = host_contiguous(tensors);
  p.header = header_json(tensors, p.host, metadata);
  return p;
}

void write(std::ostream& os, const Prepared& p) {
  const uint64_t n = p.header.size();  // little-endian host (checked in safetensors_parse.cpp)
  os.write(reinterpret_cast<const char*>(&n), 8);
  os.write(p.header.data(), std::streamsize(p.header.size()));
  for (const Tensor& t : p.host)
    if (t.nbytes()) os.write(static_cast<const char*>(t.data()), std::streamsize(t.nbytes()));
}

}  // namespace

void save(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata) {
  const Prepared p = prepare(tensors, metadata);  // bad input leaves no file behind
  io::write_file_atomically(path, "safetensors save", [&](std::ostream& os) { write(os, p); });
}

std::string serialize(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::ostringstream os;
  write(os, prepare(tensors, metadata));
  return std::move(os).str();
}

}  // namespace wick::safetensors
