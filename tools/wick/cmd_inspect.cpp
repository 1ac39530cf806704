// `wick inspect FILE [--json]`: list a checkpoint's tensors and metadata. The format is
// chosen by the file's magic bytes: "GGUF" files go to run_inspect_gguf, everything else
// is read as safetensors (which has no magic: it starts with its header length).
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "wick/io.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

bool has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

// Names and metadata are arbitrary strings: escape control characters so that one
// entry stays on one line.
std::string printable(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int print_text(const std::string& path, const safetensors::File& f) {
  std::cout << path << ": safetensors, " << f.file_size() << " bytes, header " << f.header_size() << " bytes, "
            << f.tensors().size() << " tensors\n";
  size_t name_w = 4, shape_w = 5;
  for (const auto& t : f.tensors()) {
    name_w = std::max(name_w, printable(t.name).size());
    shape_w = std::max(shape_w, shape_text(t.shape).size());
  }
  std::printf("  %-*s  %-7s  %-*s  %12s  %s\n", int(name_w), "name", "dtype", int(shape_w), "shape", "bytes",
              "offsets");
  std::fflush(stdout);
  for (const auto& t : f.tensors()) {
    std::printf("  %-*s  %-7s  %-*s  %12zu  [%zu, %zu)\n", int(name_w), printable(t.name).c_str(), t.dtype.c_str(),
                int(shape_w), shape_text(t.shape).c_str(), t.nbytes(), t.begin, t.end);
  }
  std::fflush(stdout);
  if (!f.metadata().empty()) {
    std::cout << "metadata:\n";
    for (const auto& [k, v] : f.metadata()) std::cout << "  " << printable(k) << " = " << printable(v) << '\n';
  }
  return 0;
}

int print_json(const std::string& path, const safetensors::File& f) {
  nlohmann::ordered_json j;
  j["file"] = path;
  j["format"] = "safetensors";
  j["file_size"] = f.file_size();
  j["header_size"] = f.header_size();
  j["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : f.tensors()) {
    j["tensors"].push_back({{"name", t.name},
                            {"dtype", t.dtype},
                            {"shape", t.shape.dims()},
                            {"nbytes", t.nbytes()},
                            {"data_offsets", {t.begin, t.end}}});
  }
  j["metadata"] = f.metadata();
  // Replace rather than throw on bytes that are not UTF-8 (names come from the file).
  std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  return 0;
}

}  // namespace

// Replaced by the GGUF reader's strong definition once it lands (cmd_inspect_gguf.cpp).
__attribute__((weak)) int run_inspect_gguf(const std::string& path, bool json) {
  fail(ErrorKind::Unsupported, "inspect: '", path, "' is a GGUF file, which this build cannot read yet");
}

int run_inspect(const std::string& path, bool json) {
  if (has_gguf_magic(path)) return run_inspect_gguf(path, json);
  const safetensors::File f = safetensors::File::open(path);
  return json ? print_json(path, f) : print_text(path, f);
}

Runner add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "List the tensors and metadata of a safetensors file");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("file", *path, "the file to inspect")->required();
  sub->add_flag("--json", *json, "print the listing as JSON");
  return [path, json] { return run_inspect(*path, *json); };
}

}  // namespace wick::cli
