// `wick convert DIR OUT.gguf [--outtype ...]`: a Hugging Face folder of a Llama-family
// model written as llama.cpp's GGUF (models::convert_to_gguf, wick/models/convert.h).
//
// `wick convert IN OUT`: for files, the direction is chosen by IN's first bytes ("GGUF", or else a
// safetensors header); OUT must be a file of the other format (.safetensors / .gguf,
// any case). Same-format conversion is refused with a message saying so.
//
// GGUF -> safetensors [--dtype f32|f16|bf16]: every float or block-quantized tensor is
// dequantized (bit-exact with ggml in f32; f16/bf16 rounded once from those values) to
// --dtype (default f32); i8/i16/i32/i64 tensors become exact i64 (wick's signed integer
// type) and f64 tensors are rounded to --dtype. Scalar and string GGUF metadata is kept as
// __metadata__ strings (arrays, such as tokenizer vocabularies, are left out).
//
// safetensors -> GGUF [--quantize q8_0|q4_0|q4_k|q6_k] [--dtype f32|f16|bf16]: 2-D float
// tensors whose row length is a multiple of the block size are quantized with ggml's
// reference algorithms; the other float tensors (any rank 0 to 4) are stored as --dtype,
// or without it f16 as f16 and the rest as f32. I8/I16/I32/I64 tensors are stored as
// GGUF's integer types of the same width; U8/U16/U32/U64, BOOL and F8 tensors have no
// GGUF type and are skipped, as are tensors of more than 4 dimensions. Each skipped tensor, and with --quantize each
// tensor stored unquantized, gets one line on stderr saying why. safetensors __metadata__ becomes GGUF string metadata.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "inspect_gguf.h"
#include "progress.h"
#include "wick/gguf.h"
#include "wick/io.h"
#include "wick/models/convert.h"
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

// A GGUF tensor as a wick tensor of dtype, or exactly (i64) for the integer types.
Tensor to_wick(const QuantTensor& t, DType dtype) {
  if (gguf::dequantizable(t.type)) return dequantize(t, dtype);
  const Tensor plain = gguf::plain_tensor(t);
  return is_float(plain.dtype()) ? plain.to(dtype) : plain;
}

int gguf_to_safetensors(const std::string& in, const std::string& out, DType dtype) {
  const gguf::File f = gguf::File::open(in);
  std::map<std::string, std::string> metadata{{"converted_from", "gguf v" + std::to_string(f.version())}};
  for (const auto& [key, value] : f.metadata()) {
    if (value.type() == gguf::ValueType::Array) continue;
    std::string text = value.holds<std::string>() ? value.get<std::string>() : value.to_string();
    if (valid_utf8(key) && valid_utf8(text)) metadata[key] = std::move(text);
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  tensors.reserve(f.tensors().size());
  for (const QuantTensor& t : f.tensors()) tensors.emplace_back(t.name, to_wick(t, dtype));
  safetensors::save(out, tensors, metadata);
  std::cout << "wrote " << out << ": " << tensors.size() << " tensors as " << dtype << '\n';
  return 0;
}

// GGUF's integer tensor type of the same width as a safetensors integer dtype, if any.
std::optional<GgmlType> gguf_integer_type(std::string_view st_dtype) {
  if (st_dtype == "I8") return GgmlType::I8;
  if (st_dtype == "I16") return GgmlType::I16;
  if (st_dtype == "I32") return GgmlType::I32;
  if (st_dtype == "I64") return GgmlType::I64;
  return std::nullopt;
}

// Why float tensor t is not quantized to type; empty when it is.
std::string why_not_quantized(const Tensor& t, GgmlType type) {
  if (t.rank() != 2) return "only 2-D tensors are quantized and this one is " + std::to_string(t.rank()) + "-D";
  if (t.numel() == 0) return "it has no elements";
  const int64_t block = ggml_type_info(type).block_elems;
  if (t.dim(1) % block != 0)
    return "its rows of " + std::to_string(t.dim(1)) + " values are not a multiple of " +
           std::string(ggml_type_name(type)) + "'s block of " + std::to_string(block);
  return {};
}

int safetensors_to_gguf(const std::string& in, const std::string& out, std::optional<GgmlType> qtype,
                        std::optional<DType> dtype) {
  const safetensors::File f = safetensors::File::open(in);
  gguf::Writer w;
  w.set("general.architecture", gguf::Value(std::string("safetensors")));
  for (const auto& [key, value] : f.metadata()) w.set(key, gguf::Value(value));
  const bool show_progress = f.file_size() > (size_t(64) << 20);
  ProgressGuard guard;
  // One line on stderr, on a line of its own even while the bar is drawn.
  auto note = [](const std::string& name, const std::string& what) {
    end_progress_line();
    std::cerr << "convert: '" << name << "' " << what << '\n';
  };
  size_t quantized = 0, plain = 0, skipped = 0, done = 0;
  for (const safetensors::TensorInfo& info : f.tensors()) {
    if (show_progress) progress(done, f.tensors().size(), info.name);
    ++done;
    if (info.shape.rank() > 4) {
      note(info.name, "skipped: GGUF stores at most 4 dimensions and it has " + std::to_string(info.shape.rank()));
      ++skipped;
      continue;
    }
    if (const auto itype = gguf_integer_type(info.dtype)) {
      w.add_tensor(QuantTensor{info.name, *itype, info.shape, f.raw(info.name)});
      ++plain;
      continue;
    }
    if (!info.wick_dtype || !is_float(*info.wick_dtype)) {
      note(info.name, "skipped: GGUF has no tensor type for " + info.dtype);
      ++skipped;
      continue;
    }
    const Tensor t = f.tensor(info.name);
    const std::string why_not = qtype ? why_not_quantized(t, *qtype) : std::string();
    if (qtype && why_not.empty()) {
      w.add_tensor(quantize(t, *qtype, info.name));
      ++quantized;
      continue;
    }
    const DType to = dtype ? *dtype : t.dtype() == DType::F16 ? DType::F16 : DType::F32;
    if (qtype) note(info.name, "stored as " + std::string(dtype_name(to)) + ", not quantized: " + why_not);
    w.add_tensor(info.name, t.to(to));
    ++plain;
  }
  if (show_progress) progress(done, f.tensors().size(), "");
  w.write(out);
  std::cout << "wrote " << out << ": " << quantized << " tensors as " << (qtype ? ggml_type_name(*qtype) : "-") << ", "
            << plain << " unquantized, " << skipped << " skipped\n";
  return 0;
}

// The output's format from its extension, in any case.
std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

int convert_model(const std::string& dir, const std::string& out, const std::string& outtype) {
  WICK_CHECK(extension_of(out) == ".gguf", InvalidArgument, "convert: a model folder is written as .gguf, got '", out,
             "'");
  models::ConvertOptions opt;
  opt.outtype = ggml_type_from_name(outtype.empty() ? "f32" : outtype);
  ProgressGuard guard;
  opt.on_tensor = [&](size_t done, size_t total) { progress(done, total, ""); };
  const models::ConvertResult r = models::convert_to_gguf(dir, out, opt);
  end_progress_line();
  std::cout << "wrote " << out << ": " << r.arch << ", " << r.parameters << " parameters in " << r.tensors
            << " tensors (";
  for (auto it = r.tensors_by_type.begin(); it != r.tensors_by_type.end(); ++it)
    std::cout << (it == r.tensors_by_type.begin() ? "" : ", ") << it->second << " " << ggml_type_name(it->first);
  std::cout << ")\n";
  return 0;
}

int run_convert(const std::string& in, const std::string& out, const std::string& dtype_name,
                const std::string& quant_name, const std::string& outtype) {
  if (std::filesystem::is_directory(in)) {
    WICK_CHECK(dtype_name.empty() && quant_name.empty(), InvalidArgument,
               "convert: a model folder takes --outtype, not --dtype or --quantize");
    return convert_model(in, out, outtype);
  }
  WICK_CHECK(outtype.empty(), InvalidArgument, "convert: --outtype applies to a model folder, but '", in,
             "' is a file");
  std::optional<DType> dtype;
  if (!dtype_name.empty()) {
    dtype = dtype_from_name(dtype_name);
    WICK_CHECK(*dtype == DType::F32 || *dtype == DType::F16 || *dtype == DType::BF16, InvalidArgument,
               "convert: --dtype must be f32, f16 or bf16, got '", dtype_name, "'");
  }
  const std::string ext = extension_of(out);
  if (file_has_gguf_magic(in)) {
    WICK_CHECK(ext != ".gguf", Unsupported, "convert: GGUF -> GGUF is not supported; the output must be .safetensors");
    WICK_CHECK(quant_name.empty(), InvalidArgument, "convert: --quantize applies to safetensors -> GGUF, but '", in,
               "' is a GGUF file");
    return gguf_to_safetensors(in, out, dtype.value_or(DType::F32));
  }
  WICK_CHECK(ext != ".safetensors", Unsupported,
             "convert: safetensors -> safetensors is not supported; the output must be .gguf");
  WICK_CHECK(
      ext == ".gguf", InvalidArgument, "convert: '", in,
      "' is not a GGUF file, so it is read as safetensors and converted to GGUF; the output must be .gguf, got '", out,
      "'");
  std::optional<GgmlType> qtype;
  if (!quant_name.empty()) qtype = ggml_type_from_name(quant_name);
  return safetensors_to_gguf(in, out, qtype, dtype);
}

}  // namespace

Runner add_convert(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "convert",
      "Convert a Hugging Face model folder to GGUF, dequantize a GGUF file into safetensors, or write a "
      "safetensors file as (quantized) GGUF");
  auto in = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>(), quant = std::make_shared<std::string>();
  auto outtype = std::make_shared<std::string>();
  sub->add_option("input", *in,
                  "the file to read: GGUF or safetensors (told apart by its first bytes), or a Hugging Face model "
                  "folder (Llama family) to write as llama.cpp's GGUF")
      ->required();
  sub->add_option("output", *out, "the file to write: .safetensors for a GGUF input, .gguf for a safetensors input")
      ->required();
  sub->add_option("--dtype", *dtype,
                  "dtype of the unquantized float tensors written: f32, f16 or bf16 (default: f32 into safetensors; "
                  "into GGUF f16 stays f16 and the rest become f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--quantize", *quant, "safetensors -> gguf: quantize 2-D float tensors to q8_0, q4_0, q4_k or q6_k")
      ->check(CLI::IsMember({"q8_0", "q4_0", "q4_k", "q6_k", "q4_K", "q6_K"}));
  sub->add_option("--outtype", *outtype,
                  "model folder -> gguf: type of the weight matrices, f32 (default), f16, bf16, q8_0, q4_0, q4_k or "
                  "q6_k (norms stay f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k", "q4_K", "q6_K"}));
  return [in, out, dtype, quant, outtype]() { return run_convert(*in, *out, *dtype, *quant, *outtype); };
}

}  // namespace wick::cli
