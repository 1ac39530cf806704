// convert_to_gguf: a Hugging Face folder of the Llama family as llama.cpp's GGUF. The
// metadata follows convert_hf_to_gguf.py's TextModel.set_gguf_parameters and the per-arch
// overrides (the table's gguf_* fields); the tensors are renamed through llama_names.h,
// the table the loader reads them with, and converted one at a time.
#include "llama_convert.h"

#include <cmath>

#include "config_json.h"
#include "llama_config.h"
#include "llama_names.h"
#include "llama_weights.h"
#include "wick/error.h"
#include "wick/models/convert.h"
#include "wick/ops.h"

namespace wick::models {

namespace fs = std::filesystem;

namespace {

void set_u32(gguf::Writer& w, const std::string& key, int64_t v) { w.set(key, gguf::Value(uint32_t(v))); }
void set_f32(gguf::Writer& w, const std::string& key, double v) { w.set(key, gguf::Value(float(v))); }
void set_str(gguf::Writer& w, const std::string& key, std::string v) { w.set(key, gguf::Value(std::move(v))); }

// llama.cpp's LLAMA_FTYPE of a uniform output type.
uint32_t file_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q4_K: return 14;  // MOSTLY_Q4_K_S: every matrix q4_K
    case GgmlType::Q6_K: return 18;
    case GgmlType::BF16: return 32;
    case GgmlType::MXFP4: return 38;  // MOSTLY_MXFP4_MOE
    default: fail(ErrorKind::InvalidArgument, kConvertOp, ": cannot write ", ggml_type_name(t));
  }
}

// gguf-py's model_weight_count_rounded_notation: "66K", "1.2B".
std::string size_label(size_t params) {
  const double n = double(params);
  const auto [scale, suffix] = n > 1e12  ? std::pair{1e-12, "T"}
                               : n > 1e9 ? std::pair{1e-9, "B"}
                               : n > 1e6 ? std::pair{1e-6, "M"}
                                         : std::pair{1e-3, "K"};
  const double scaled = n * scale;
  std::string whole = std::to_string(int64_t(std::llround(scaled)));
  whole.erase(0, whole.find_first_not_of('0'));
  const int decimals = std::max(2 - int(whole.size()), 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, scaled, suffix);
  return buf;
}

void add_hyperparameters(gguf::Writer& w, const LlamaConfig& c, const LlamaArch& arch, const nlohmann::json& raw,
                         GgmlType outtype) {
  const std::string a(arch.gguf_name);
  auto key = [&](const char* suffix) { return a + "." + suffix; };
  set_str(w, "general.architecture", a);
  set_str(w, "general.type", "model");
  set_u32(w, key("context_length"), c.context_length);
  set_u32(w, key("embedding_length"), c.hidden_size);
  set_u32(w, key("block_count"), c.n_layer);
  set_u32(w, key("feed_forward_length"), c.intermediate_size);
  set_u32(w, key("attention.head_count"), c.n_head);
  set_u32(w, key("attention.head_count_kv"), c.n_kv_head);
  set_f32(w, key("attention.layer_norm_rms_epsilon"), c.rms_norm_eps);
  // Gemma 2's writer leaves the base out (llama.cpp's default 10000 is Gemma 2's).
  if (!arch.gemma || c.rope.theta != 10000.0) set_f32(w, key("rope.freq_base"), c.rope.theta);
  if (raw.contains("head_dim") || c.head_dim * c.n_head != c.hidden_size) {
    set_u32(w, key("attention.key_length"), c.head_dim);
    set_u32(w, key("attention.value_length"), c.head_dim);
  }
  set_u32(w, "general.file_type", file_type(outtype));
  set_u32(w, "general.quantization_version", 2);
  if (arch.gguf_vocab_size) set_u32(w, key("vocab_size"), c.vocab_size);
  if (arch.gguf_rope_dims) set_u32(w, key("rope.dimension_count"), c.rope.dims);
  if (arch.gguf_sliding_window) set_u32(w, key("attention.sliding_window"), c.sliding_window);
  if (arch.softcaps) {
    set_f32(w, key("attn_logit_softcapping"), c.attn_logit_softcap);
    set_f32(w, key("final_logit_softcapping"), c.final_logit_softcap);
  }
  // Gemma 3 softcaps only the final logits, when its config.json says so.
  if (arch.local_rope && c.final_logit_softcap > 0) set_f32(w, key("final_logit_softcapping"), c.final_logit_softcap);
  // convert_hf_to_gguf.py drops query_pre_attn_scalar and llama.cpp guesses it from the
  // model size; the scale itself keeps the model exact (llama.cpp reads it too).
  if (arch.gemma) set_f32(w, key("attention.scale"), c.attention_scale);
  // Gemma 3's sliding layers' rotary base.
  if (arch.local_rope) set_f32(w, key("rope.freq_base_swa"), c.rope_local_theta);
  const RopeConfig& r = c.rope;
  switch (r.scaling) {
    case RopeScaling::Linear:
      set_str(w, key("rope.scaling.type"), "linear");
      set_f32(w, key("rope.scaling.factor"), r.factor);
      break;
    case RopeScaling::Yarn:
      set_str(w, key("rope.scaling.type"), "yarn");
      set_f32(w, key("rope.scaling.factor"), r.factor);
      set_u32(w, key("rope.scaling.original_context_length"), r.original_context);
      if (r.attention_factor) set_f32(w, key("rope.scaling.attn_factor"), *r.attention_factor);
      break;
    case RopeScaling::LongRope:
      set_u32(w, key("rope.scaling.original_context_length"), r.original_context);
      set_f32(w, key("rope.scaling.attn_factor"), rope_attention_factor(r));
      break;
    case RopeScaling::Llama3:  // the rope_freqs tensor carries it
    case RopeScaling::None: break;
  }
}

// convert_hf_to_gguf.py's LlamaModel.permute: each head's rows from halves (i, i + D/2) to
// pairs (2i, 2i + 1), for ggml's rope that rotates adjacent values.
Tensor permute_heads(const Tensor& t, int64_t heads) {
  const int64_t rows = t.dim(0);
  std::vector<int64_t> split{heads, 2, rows / heads / 2};
  for (int64_t d = 1; d < t.rank(); ++d) split.push_back(t.dim(d));
  return t.reshape(split).transpose(1, 2).contiguous().reshape(t.shape());
}

// The per-frequency tensors of the rope scalings llama.cpp stores as data.
// They are counted among the tensors written, not among the model's parameters.
void add_rope_tensors(gguf::Writer& w, const LlamaConfig& c, ConvertResult& result) {
  const RopeConfig& r = c.rope;
  auto add = [&](const char* name, const std::vector<double>& v) {
    w.add_tensor(name, Tensor::from_vector(v).to(DType::F32));
    ++result.tensors;
    ++result.tensors_by_type[GgmlType::F32];
  };
  if (r.scaling == RopeScaling::Llama3) {
    // The divisor of each frequency: the plain inverse frequency over llama3's.
    RopeConfig plain = r;
    plain.scaling = RopeScaling::None;
    const std::vector<double> base = rope_inv_freq(plain), scaled = rope_inv_freq(r);
    std::vector<double> factors(base.size());
    for (size_t i = 0; i < base.size(); ++i) factors[i] = base[i] / scaled[i];
    add("rope_freqs.weight", factors);
  } else if (r.scaling == RopeScaling::LongRope) {
    add("rope_factors_long.weight", r.long_factor);
    add("rope_factors_short.weight", r.short_factor);
  }
}

// Each tensor is declared with its output type and shape, and converted only when the
// writer streams it to the file (gguf::Writer's made-late tensors): one converted tensor in
// memory at a time, beside the mapped input.
struct TensorWriter {
  gguf::Writer& w;
  const SafetensorsFolder& src;
  const LlamaConfig& c;
  const LlamaArch& arch;
  GgmlType outtype;
  ConvertResult& result;

  // The stored type of a tensor: 1-D f32; 2-D outtype, a quantized type falling back as the
  // loader's quant_type_for does, and to f16 where no block fits (as convert_hf_to_gguf.py).
  GgmlType type_for(const Shape& shape) const {
    if (shape.rank() != 2 || outtype == GgmlType::F32 || outtype == GgmlType::F16 || outtype == GgmlType::BF16)
      return shape.rank() == 2 ? outtype : GgmlType::F32;
    return quant_type_for(outtype, shape[1]).value_or(GgmlType::F16);
  }

  Tensor converted(const std::string& hf_name, const std::string& gguf_name, std::optional<Part> part) const {
    Tensor t = src.get(hf_name).dense.to(DType::F32);
    if (arch.gguf_interleaved_rope && (part == Part::Q || part == Part::K))
      t = permute_heads(t, part == Part::Q ? c.n_head : c.n_kv_head);
    // HF Gemma stores w of (1 + w); GGUF stores 1 + w.
    if (arch.gemma && t.rank() == 1 && gguf_name.ends_with("norm.weight")) t = t + Scalar(1.0);
    return t.contiguous();
  }

  void add(const std::string& hf_name, const std::string& gguf_name, std::optional<Part> part,
           std::function<void()> done) {
    const Shape shape = src.get(hf_name).shape();
    const GgmlType type = type_for(shape);
    result.parameters += size_t(shape.numel());
    ++result.tensors;
    ++result.tensors_by_type[type];
    result.quantized += type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::BF16;
    w.add_tensor(gguf_name, type, shape, [=, this] {
      const Tensor t = converted(hf_name, gguf_name, part);
      QuantTensor q = quantize(t, type, gguf_name);  // f32 / f16 / bf16 too: a plain copy
      done();
      return q;
    });
  }
};

std::string model_name(const fs::path& dir) {
  const fs::path p = dir.lexically_normal();
  return (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
}

}  // namespace

ConvertResult convert_to_gguf(const fs::path& dir, const fs::path& out, const ConvertOptions& opt) {
  const GgmlType t = opt.outtype;
  WICK_CHECK(t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 || t == GgmlType::Q8_0 ||
                 t == GgmlType::Q4_0 || t == GgmlType::Q4_K || t == GgmlType::Q6_K,
             InvalidArgument, kConvertOp, ": cannot write ", ggml_type_name(t),
             " (f32, f16, bf16, q8_0, q4_0, q4_K, q6_K)");
  WICK_CHECK(fs::is_directory(dir), Io, kConvertOp, ": '", dir.string(), "' is not a folder");
  const fs::path config_path = dir / "config.json";
  const std::string config_text = read_config_text(config_path, kConvertOp);
  const LlamaConfig c = LlamaConfig::from_hf_json(config_text, config_path.string());
  const nlohmann::json raw = parse_config_object(config_text, kConvertOp, config_path.string());
  const LlamaArch& arch = arch_by_name(c.arch);
  WICK_CHECK(!arch.gpt2, Unsupported, kConvertOp,
             ": GPT-2 folders are not written as GGUF yet (wick loads the folder itself, and the GGUF "
             "that llama.cpp's convert_hf_to_gguf.py writes of it)");
  WICK_CHECK(c.n_expert == 0, Unsupported, kConvertOp, ": Mixture-of-Experts folders (", c.arch,
             ") are not written as GGUF yet: wick loads the folder itself, and the GGUF that llama.cpp's "
             "convert_hf_to_gguf.py writes of it");
  const SafetensorsFolder src(dir);
  WICK_CHECK(src.layer_count() == c.n_layer, Format, kConvertOp, ": config.json has ", c.n_layer,
             " layers but the checkpoint holds ", src.layer_count());

  // The embedding holds vocab_size rows, so the vocabulary's padding is bounded by the input.
  const std::string embd(global_name(Global::Embedding, false));
  WICK_CHECK(src.contains(embd), Format, kConvertOp, ": the checkpoint has no tensor '", embd, "'");
  const Shape embd_shape = src.get(embd).shape();
  WICK_CHECK(embd_shape == Shape({c.vocab_size, c.hidden_size}), ShapeMismatch, kConvertOp, ": tensor '", embd,
             "' has shape ", embd_shape, ", config.json implies ", Shape({c.vocab_size, c.hidden_size}));

  ConvertResult result;
  result.arch = c.arch;
  gguf::Writer w;
  add_hyperparameters(w, c, arch, raw, t);
  set_str(w, "general.name", model_name(dir));
  add_vocab_metadata(w, dir, c.vocab_size);

  add_rope_tensors(w, c, result);
  const std::vector<std::string> names = src.names();
  TensorWriter tw{w, src, c, arch, t, result};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    // transformers' rotary buffers (older checkpoints save them); the tied head's copy.
    if (name.ends_with("rotary_emb.inv_freq")) continue;
    if (c.tie_embeddings && name == global_name(Global::LmHead, false)) continue;
    const auto g = gguf_name_of(name, name_style(c));
    WICK_CHECK(g, Unsupported, kConvertOp, ": tensor '", name, "' has no GGUF name for ", c.arch);
    tw.add(name, g->name, g->part, [&opt, i, n = names.size()] {
      if (opt.on_tensor) opt.on_tensor(i + 1, n);
    });
  }
  set_str(w, "general.size_label", size_label(result.parameters));
  w.write(out);
  return result;
}

}  // namespace wick::models
