// `wick convert IN.gguf OUT.safetensors [--dtype f32|f16|bf16]`: every GGUF tensor
// dequantized (bit-exact with ggml in f32; f16/bf16 rounded once from those values) into
// a safetensors file. Scalar and string GGUF metadata is kept as __metadata__ strings
// (arrays, such as tokenizer vocabularies, are left out).
//
// `wick convert IN.safetensors OUT.gguf [--quantize q8_0|q4_0|q4_k|q6_k]`: the other way.
// 2-D float tensors whose row length is a multiple of the block size are quantized with
// ggml's reference algorithms; the rest (biases, norms, odd shapes, and everything when
// --quantize is absent) are stored as F32, or F16 if the source was f16. Names are kept,
// safetensors __metadata__ becomes GGUF string metadata, non-float tensors are skipped.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "progress.h"
#include "wick/gguf.h"
#include "wick/io.h"
#include "wick/quant.h"

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

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int run_to_gguf(const std::string& in, const std::string& out, const std::string& quant_name) {
  std::optional<GgmlType> qtype;
  if (!quant_name.empty()) qtype = ggml_type_from_name(quant_name);
  const safetensors::File f = safetensors::File::open(in);
  gguf::Writer w;
  w.set("general.architecture", gguf::Value(std::string("safetensors")));
  for (const auto& [key, value] : f.metadata()) w.set(key, gguf::Value(value));
  const bool show_progress = f.file_size() > (size_t(64) << 20);
  size_t quantized = 0, plain = 0, done = 0;
  for (const safetensors::TensorInfo& info : f.tensors()) {
    if (show_progress) progress(done, f.tensors().size(), info.name);
    ++done;
    if (!info.wick_dtype || !is_float(*info.wick_dtype)) {
      std::cerr << "convert: skipping '" << info.name << "' (" << info.dtype << ", not floating point)\n";
      continue;
    }
    const Tensor t = f.tensor(info.name);
    const bool quantize_it =
        qtype && t.rank() == 2 && t.numel() > 0 && t.dim(1) % ggml_type_info(*qtype).block_elems == 0;
    if (quantize_it) {
      w.add_tensor(quantize(t, *qtype, info.name));
      ++quantized;
    } else {
      w.add_tensor(info.name, t.dtype() == DType::F16 ? t : t.to(DType::F32));
      ++plain;
    }
  }
  if (show_progress) progress(done, f.tensors().size(), "");
  w.write(out);
  std::cout << "wrote " << out << ": " << quantized << " tensors as " << (qtype ? ggml_type_name(*qtype) : "-") << ", "
            << plain << " as f32/f16\n";
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "convert", "Dequantize a GGUF file into safetensors, or write a safetensors file as (quantized) GGUF");
  auto in = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>("f32"), quant = std::make_shared<std::string>();
  sub->add_option("input", *in, "the file to read: .gguf, or .safetensors (with a .gguf output)")->required();
  sub->add_option("output", *out, "the file to write: .safetensors, or .gguf")->required();
  sub->add_option("--dtype", *dtype, "gguf -> safetensors: dtype of the written tensors: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--quantize", *quant, "safetensors -> gguf: quantize 2-D float tensors to q8_0, q4_0, q4_k or q6_k")
      ->check(CLI::IsMember({"q8_0", "q4_0", "q4_k", "q6_k", "q4_K", "q6_K"}));
  return [in, out, dtype, quant]() {
    if (ends_with(*out, ".gguf")) return run_to_gguf(*in, *out, *quant);
    WICK_CHECK(quant->empty(), InvalidArgument, "convert: --quantize needs a .gguf output, got '", *out, "'");
    return run_convert(*in, *out, *dtype);
  };
}

}  // namespace wick::cli
