// `wick inspect FILE... [--file LIST] [--json]`: list checkpoints' tensors and metadata
// (inputs.h: FILE, - for a file piped into standard input, --file for one path per line);
// a Llama-family model (a GGUF of a supported architecture, or a Hugging Face folder given
// as FILE) also gets its summary (inspect_model.h).
// The format is chosen by each file's magic bytes: "GGUF" files go to inspect_gguf.h,
// everything else is read as safetensors (which has no magic: it starts with its header length). Several
// files are listed in order; one that cannot be read gets its error on stderr and the
// others are still listed (exit code 1). --json prints one object for one file and an
// array of objects for several.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "escape.h"
#include "inputs.h"
#include "inspect_gguf.h"
#include "inspect_model.h"
#include "wick/io.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void print_text(const std::string& path, const safetensors::File& f) {
  std::cout << printable(path) << ": safetensors, " << f.file_size() << " bytes, header " << f.header_size()
            << " bytes, " << f.tensors().size() << " tensors\n";
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
}

nlohmann::ordered_json to_json(const std::string& path, const safetensors::File& f) {
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
  return j;
}

// The listing of one parsed file: printed (text) or returned (JSON).
template <class F>
std::optional<nlohmann::ordered_json> list(const std::string& name, const F& f, bool json) {
  if constexpr (std::is_same_v<F, gguf::File>) {
    if (json) return gguf_json(name, f);
    print_gguf_text(name, f);
  } else {
    if (json) return to_json(name, f);
    print_text(name, f);
  }
  return std::nullopt;
}

// A file named on the command line is mapped by its reader (whose errors name the path);
// one piped in ("-") is parsed from memory, its errors prefixed with "standard input".
std::optional<nlohmann::ordered_json> inspect_one(const Input& input, bool json) {
  if (!input.from_stdin) {
    const std::string& path = input.value;
    if (std::filesystem::is_directory(path)) {  // a Hugging Face model folder
      nlohmann::ordered_json summary = folder_model_summary(path);
      if (json) return nlohmann::ordered_json{{"file", path}, {"format", "model folder"}, {"model", summary}};
      std::cout << printable(path) << ": model folder\n";
      print_model_summary(summary);
      return std::nullopt;
    }
    if (file_has_gguf_magic(path)) return list(path, gguf::File::open(path), json);
    return list(path, safetensors::File::open(path), json);
  }
  const auto bytes = std::make_shared<std::string>(input.value);
  const Buffer buf = Buffer::wrap_host(bytes->data(), bytes->size(), /*read_only=*/true, bytes);
  const std::string name = "standard input";
  try {
    if (bytes_have_gguf_magic(*bytes)) return list(name, gguf::File::parse(buf), json);
    return list(name, safetensors::File::parse(buf), json);
  } catch (const Error& e) {
    throw Error(e.kind(), name + ": " + e.what());
  }
}

}  // namespace

static int run_inspect(const TextInputs& inputs, bool json) {
  const std::vector<Input> files = collect_inputs(inputs, "inspect", "files", std::cin);
  int rc = 0;
  nlohmann::ordered_json listings = nlohmann::ordered_json::array();
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      if (!json && i) std::cout << '\n';
      std::cout.flush();
      if (auto j = inspect_one(files[i], json)) listings.push_back(std::move(*j));
    } catch (const Error& e) {
      if (files.size() == 1) throw;
      std::cout.flush();
      std::cerr << "wick: error: " << e.what() << '\n';
      rc = 1;
    }
  }
  if (json) {
    const nlohmann::ordered_json& out = files.size() == 1 && listings.size() == 1 ? listings[0] : listings;
    // Replace rather than throw on bytes that are not UTF-8 (names come from the file).
    std::cout << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  }
  return rc;
}

Runner add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "inspect",
      "List the tensors and metadata of safetensors and GGUF files (told apart by their first bytes), with a "
      "summary of Llama-family models (GGUF files or Hugging Face folders); a file that "
      "cannot be read is reported on stderr, the others are still listed, and the exit code is 1");
  auto inputs = std::make_shared<TextInputs>();
  add_path_inputs(*sub, *inputs);
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print the listing as JSON: one object for one file, an array of objects for several");
  return [inputs, json] { return run_inspect(*inputs, *json); };
}

}  // namespace wick::cli
