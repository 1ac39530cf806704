// `wick convert IN.gguf OUT.safetensors [--dtype f32|f16|bf16]`: every GGUF tensor
// dequantized (bit-exact with ggml in f32; f16/bf16 rounded once from those values) into
// a safetensors file. Scalar and string GGUF metadata is kept as __metadata__ strings
// (arrays, such as tokenizer vocabularies, are left out).
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "wick/gguf.h"
#include "wick/io.h"

namespace wick::cli {

namespace {

bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

int run_convert(const std::string& in, const std::string& out, const std::string& dtype_name) {
  const DType dtype = dtype_from_name(dtype_name);
  WICK_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, InvalidArgument,
             "convert: --dtype must be f32, f16 or bf16, got '", dtype_name, "'");
  const gguf::File f = gguf::File::open(in);
  std::map<std::string, std::string> metadata{{"converted_from", "gguf v" + std::to_string(f.version())}};
  for (const auto& [key, value] : f.metadata()) {
    if (value.type() == gguf::ValueType::Array) continue;
    std::string text = value.holds<std::string>() ? value.get<std::string>() : value.to_string();
    if (valid_utf8(key) && valid_utf8(text)) metadata[key] = std::move(text);
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  tensors.reserve(f.tensors().size());
  for (const QuantTensor& t : f.tensors()) tensors.emplace_back(t.name, dequantize(t, dtype));
  safetensors::save(out, tensors, metadata);
  std::cout << "wrote " << out << ": " << tensors.size() << " tensors as " << dtype << '\n';
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand("convert", "Dequantize a GGUF file into a safetensors file");
  auto in = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>("f32");
  sub->add_option("input", *in, "the GGUF file to read")->required();
  sub->add_option("output", *out, "the safetensors file to write")->required();
  sub->add_option("--dtype", *dtype, "dtype of the written tensors: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  return [in, out, dtype]() { return run_convert(*in, *out, *dtype); };
}

}  // namespace wick::cli
