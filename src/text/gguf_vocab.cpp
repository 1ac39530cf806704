// GGUF-embedded vocabularies (tokenizer.ggml.*) as a Pipeline, laid out as llama.cpp's
// llama-vocab.cpp reads them: `llama` is SentencePiece (tokens + scores + token_type, a
// leading space per text segment, byte fallback), `gpt2` byte-level BPE (tokens + merges +
// token_type, split regexes chosen by tokenizer.ggml.pre). Pre-tokenizers, decoders and
// post-processors are the tokenizer.json components, built from equivalent JSON.
#include <algorithm>
#include <array>
#include <variant>

#include "text/gguf_pre.h"
#include "text/hf_components.h"
#include "wick/gguf.h"

namespace wick::text::hf {
namespace {

// llama.cpp's token types.
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// tokenizer.ggml.pre -> the regexes llama.cpp splits with (the first name of a row is what
// convert_hf_to_gguf.py writes for them, gguf_pre_name() below), in order (each Isolated; where
// llama.cpp rewrote a tokenizer.json regex for its own engine, the original, which PCRE2
// runs), whether whole pieces found in the vocabulary skip the merges (Llama 3's
// ignore_merges), and whether BOS is added when tokenizer.ggml.add_bos_token is absent.
struct PreRule {
  std::vector<std::string_view> names;
  std::vector<std::string_view> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
};
const std::vector<PreRule>& pre_rules() {
  static const std::vector<PreRule> rules = {
      // llama-vocab.cpp's LLAMA_VOCAB_PRE_TYPE_GPT2 names (convert_hf_to_gguf.py writes "gpt-2"
      // for GPT-2's own regex), and the others that split the same way.
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
        "modern-bert", "gpt2", "mpt", "olmo", "jais", "trillion", "granite-docling"},
       {kGpt2}},
      {{"default"},
       {R"([\p{P}\$\+<=>\^~\|]+)", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
        R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3},
       true,
       true},
      {{"tekken"}, {kTekken}, true, true},
      {{"gpt-4o", "minimax-m2"}, {kGpt4o}},
      {{"deepseek-v3", "hunyuan-dense"},
       {R"(\p{N}{1,3})", R"([\x{4e00}-\x{9fa5}\x{3040}-\x{309f}\x{30a0}-\x{30ff}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"deepseek-coder"},
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4e00}-\x{9fa5}\x{0800}-\x{4e00}\x{ac00}-\x{d7ff}]+)",
        R"(\p{N})"}},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}},
      {{"qwen2", "stablelm2", "hunyuan", "deepseek-r1-qwen", "megrez"}, {kQwen2}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"}},
      {{"falcon"},
       {R"([\p{P}\$\+<=>\^~\|`]+)", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
        "[0-9][0-9][0-9]"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
      {{"viking"}, {kPoro, R"(\p{N})"}},
  };
  return rules;
}

const PreRule& pre_rule(const std::string& pre) {
  for (const PreRule& r : pre_rules())
    for (std::string_view n : r.names)
      if (n == pre) return r;
  fail(ErrorKind::Unsupported, "gguf: tokenizer.ggml.pre '", pre, "' is not supported");
}

}  // namespace

std::optional<std::string> gguf_pre_name(const std::vector<std::string>& regexes, bool ignore_merges) {
  const PreRule* by_regex = nullptr;
  for (const PreRule& r : pre_rules()) {
    if (!std::equal(r.regexes.begin(), r.regexes.end(), regexes.begin(), regexes.end())) continue;
    if (r.ignore_merges == ignore_merges) return std::string(r.names.front());
    if (!by_regex) by_regex = &r;
  }
  if (by_regex) return std::string(by_regex->names.front());
  return std::nullopt;
}

std::string gpt2_split_regex() { return std::string(kGpt2); }

namespace {

// Metadata readers: Format errors name the key.
const gguf::Array& array_of(const gguf::File& f, const std::string& key, gguf::ValueType elem) {
  WICK_CHECK(f.has(key), Format, "gguf: ", key, " is missing");
  const gguf::Value& v = f.get(key);
  WICK_CHECK(v.holds<gguf::Array>() && v.get<gguf::Array>().elem_type() == elem, Format, "gguf: ", key,
             " is not an array of ", gguf::value_type_name(elem));
  return std::get<gguf::Array>(v.storage());
}

std::optional<int64_t> int_of(const gguf::File& f, const std::string& key) {
  if (!f.has(key)) return std::nullopt;
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return int64_t(x);
        fail(ErrorKind::Format, "gguf: ", key, " is not an integer");
      },
      f.get(key).storage());
}

bool bool_of(const gguf::File& f, const std::string& key, bool fallback) {
  if (!f.has(key)) return fallback;
  WICK_CHECK(f.get(key).holds<bool>(), Format, "gguf: ", key, " is not a bool");
  return f.get(key).get<bool>();
}

std::optional<int32_t> id_of(const gguf::File& f, const std::string& key, size_t n) {
  const auto v = int_of(f, key);
  if (!v) return std::nullopt;
  if (*v == -1) return std::nullopt;  // some converters write -1 for "none"
  WICK_CHECK(*v >= 0 && size_t(*v) < n, Format, "gguf: ", key, " = ", *v, " is outside the vocabulary (", n,
             " tokens)");
  WICK_CHECK(!f.get("tokenizer.ggml.tokens").get<gguf::Array>().string_at(size_t(*v)).empty(), Format, "gguf: ", key,
             " = ", *v, " names an empty token");
  return int32_t(*v);
}

json template_for(std::optional<int32_t> bos, std::optional<int32_t> eos) {
  json single = json::array(), specials = json::object();
  if (bos) single.push_back({{"SpecialToken", {{"id", "BOS"}}}}), specials["BOS"] = {{"ids", {*bos}}};
  single.push_back({{"Sequence", {{"id", "A"}}}});
  if (eos) single.push_back({{"SpecialToken", {{"id", "EOS"}}}}), specials["EOS"] = {{"ids", {*eos}}};
  return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
}

}  // namespace

std::unique_ptr<Pipeline> pipeline_from_gguf(const gguf::File& f) {
  WICK_CHECK(f.has("tokenizer.ggml.model") && f.get("tokenizer.ggml.model").holds<std::string>(), Format,
             "gguf: tokenizer.ggml.model is missing or not a string");
  const std::string model = f.get("tokenizer.ggml.model").get<std::string>();
  WICK_CHECK(model == "llama" || model == "gpt2", Unsupported, "gguf: tokenizer.ggml.model '", model,
             "' is not supported (llama, gpt2)");
  const gguf::Array& tokens = array_of(f, "tokenizer.ggml.tokens", gguf::ValueType::String);
  const size_t n = tokens.size();
  WICK_CHECK(n > 0, Format, "gguf: tokenizer.ggml.tokens is empty");
  std::vector<int32_t> types(n, kNormal);
  if (f.has("tokenizer.ggml.token_type")) {
    types = array_of(f, "tokenizer.ggml.token_type", gguf::ValueType::I32).to_vector<int32_t>();
    WICK_CHECK(types.size() == n, Format, "gguf: tokenizer.ggml.token_type has ", types.size(), " entries for ", n,
               " tokens");
  }

  auto p = std::make_unique<Pipeline>();
  for (size_t i = 0; i < n; ++i) {
    std::string t(tokens.string_at(i));
    if (t.empty()) continue;  // llama.cpp allows empty (unused) entries
    p->vocab.add(t, int64_t(i), "tokenizer.ggml.tokens");
    // Control and user-defined tokens are matched in the text (llama.cpp's special cache).
    if (types[i] == kControl || types[i] == kUserDefined || types[i] == kUnknown)
      p->added.add({t, int32_t(i), types[i] != kUserDefined, false, false, false, false});
  }
  p->bos = id_of(f, "tokenizer.ggml.bos_token_id", n);
  p->eos = id_of(f, "tokenizer.ggml.eos_token_id", n);
  const auto unk = id_of(f, "tokenizer.ggml.unknown_token_id", n);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const auto id = id_of(f, key, n)) p->extra_eog.push_back(*id);

  const bool spm = model == "llama";
  const std::string pre_name = f.has("tokenizer.ggml.pre") && f.get("tokenizer.ggml.pre").holds<std::string>()
                                   ? f.get("tokenizer.ggml.pre").get<std::string>()
                                   : "default";
  const PreRule* rule = spm ? nullptr : &pre_rule(pre_name);
  const bool add_bos = bool_of(f, "tokenizer.ggml.add_bos_token", spm || rule->add_bos);
  const bool add_eos = bool_of(f, "tokenizer.ggml.add_eos_token", false);
  WICK_CHECK(!add_bos || p->bos, Format,
             "gguf: tokenizer.ggml.add_bos_token is set but tokenizer.ggml.bos_token_id is missing");
  WICK_CHECK(!add_eos || p->eos, Format,
             "gguf: tokenizer.ggml.add_eos_token is set but tokenizer.ggml.eos_token_id is missing");
  if (add_bos || add_eos)
    p->post_processor =
        make_post_processor(template_for(add_bos ? p->bos : std::nullopt, add_eos ? p->eos : std::nullopt), *p);
  json normalizer, pre, decoder;
  if (spm) {
    const auto scores = array_of(f, "tokenizer.ggml.scores", gguf::ValueType::F32).to_vector<float>();
    WICK_CHECK(scores.size() == n, Format, "gguf: tokenizer.ggml.scores has ", scores.size(), " entries for ", n,
               " tokens");
    std::vector<bool> mergeable(n);
    for (size_t i = 0; i < n; ++i) mergeable[i] = types[i] == kNormal || types[i] == kUserDefined;
    p->model = make_spm(p->vocab, scores, std::move(mergeable), unk);
    // A space before every text segment (llama.cpp: the first, and each after a special
    // token), spaces as U+2581; decoding undoes both.
    const bool space_prefix = bool_of(f, "tokenizer.ggml.add_space_prefix", true);
    const json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
    normalizer = {{"type", "Sequence"}, {"normalizers", json::array()}};
    if (space_prefix) normalizer["normalizers"].push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    normalizer["normalizers"].push_back(replace);
    decoder = {{"type", "Sequence"},
               {"decoders",
                {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                 {{"type", "ByteFallback"}},
                 {{"type", "Fuse"}}}}};
    if (space_prefix) decoder["decoders"].push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    p->summary.model = "SentencePiece (llama)";
    p->summary.pre_tokenizer = "none";
  } else {
    const gguf::Array& list = array_of(f, "tokenizer.ggml.merges", gguf::ValueType::String);
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string_view m = list.string_at(i);
      const size_t sp = m.find(' ', 1);  // as llama.cpp: a merge's left side is never empty
      WICK_CHECK(sp != std::string_view::npos, Format, "gguf: tokenizer.ggml.merges[", i, "] '", m, "' is not 'a b'");
      merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
    BpeOptions o;
    o.ignore_merges = rule->ignore_merges;
    o.unk = unk;
    p->model = make_bpe(p->vocab, merges, o);
    pre = {{"type", "Sequence"}, {"pretokenizers", json::array()}};
    for (std::string_view re : rule->regexes)
      pre["pretokenizers"].push_back(
          {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    pre["pretokenizers"].push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
    decoder = {{"type", "ByteLevel"}};
    p->summary.model = "BPE (gpt2)";
    p->summary.pre_tokenizer = pre_name;
  }
  p->normalizer = make_normalizer(normalizer);
  p->pre_tokenizer = make_pre_tokenizer(pre);
  p->decoder = make_decoder(decoder);
  p->added.finish(p->normalizer.get());
  p->summary.source = "gguf";
  p->summary.normalizer = describe(normalizer);
  p->summary.decoder = describe(decoder);
  finish_pipeline(*p, "", "");
  return p;
}

}  // namespace wick::text::hf
