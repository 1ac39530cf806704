// wick::text::Tokenizer: loading entry points, encode (added tokens -> normalizer ->
// pre-tokenizer -> model -> post-processor), decode and the streaming decoder.
#include "wick/text/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include "text/hf_components.h"
#include "text/hf_util.h"
#include "text/read_text_file.h"

namespace wick::text {

using hf::json;

namespace {

namespace fs = std::filesystem;

// GPT-2's BPE files: Hugging Face's vocab.json + merges.txt, or OpenAI's original names
// for the same contents (encoder.json + vocab.bpe). Empty when the folder has neither pair.
std::optional<std::pair<fs::path, fs::path>> gpt2_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& [vocab, merges] : {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}})
    if (fs::exists(dir / vocab, ec) && fs::exists(dir / merges, ec)) return std::pair{dir / vocab, dir / merges};
  return std::nullopt;
}

// GPT-2's vocabulary and merges as the tokenizer.json HF builds from them.
json gpt2_json(std::string_view vocab, std::string_view merges) {
  json model = {{"type", "BPE"}, {"vocab", json::parse(vocab, nullptr, false)}, {"merges", json::array()}};
  // json::parse without exceptions gives a "discarded" value for malformed text.
  WICK_CHECK(model["vocab"].is_object(), Format, "vocab.json: not a JSON object of token -> id");
  std::istringstream lines{std::string(merges)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.starts_with("#version")) continue;
    model["merges"].push_back(line);
  }
  json j = {{"model", model},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"added_tokens", json::array()}};
  if (const auto it = model["vocab"].find("<|endoftext|>"); it != model["vocab"].end())
    j["added_tokens"].push_back({{"id", *it}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}});
  return j;
}

// BERT's vocab.txt as the tokenizer.json BertTokenizerFast builds from it (transformers'
// BertConverter): one token per line, id = line number (a token on two lines keeps the
// later one, as BertTokenizer's load_vocab does; trailing white space and CR are dropped);
// the special tokens by their usual names, each an added token matched literally.
json wordpiece_json(std::string_view text, bool lowercase) {
  json vocab = json::object();
  std::istringstream lines{std::string(text)};
  int64_t id = 0;
  for (std::string line; std::getline(lines, line); ++id) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    WICK_CHECK(!line.empty(), Format, "vocab.txt: line ", id + 1, " is empty");
    WICK_CHECK(hf::to_valid_utf8(line) == line, Format, "vocab.txt: line ", id + 1, " is not valid UTF-8");
    vocab[line] = id;
  }
  WICK_CHECK(!vocab.empty(), Format, "vocab.txt is empty");
  json added = json::array();
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    if (vocab.contains(special))
      added.push_back({{"id", vocab[special]}, {"content", special}, {"special", true}, {"normalized", false}});
  for (const char* required : {"[UNK]", "[CLS]", "[SEP]"})
    WICK_CHECK(vocab.contains(required), Format, "vocab.txt lacks the special token ", required);
  return {
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"lowercase", lowercase}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}},
      {"post_processor",
       {{"type", "BertProcessing"}, {"sep", {"[SEP]", vocab["[SEP]"]}}, {"cls", {"[CLS]", vocab["[CLS]"]}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"added_tokens", added}};
}

// tokenizer_config.json's do_lower_case (BertTokenizer's default: true).
bool folder_lowercase(const fs::path& dir) {
  std::error_code ec;
  const fs::path cfg = dir / "tokenizer_config.json";
  if (!fs::exists(cfg, ec)) return true;
  const json j = json::parse(read_text_file(cfg.string(), "tokenizer_config.json"), nullptr, false);
  WICK_CHECK(j.is_object(), Format, "tokenizer_config.json: not a JSON object");
  const auto it = j.find("do_lower_case");
  if (it == j.end() || it->is_null()) return true;
  WICK_CHECK(it->is_boolean(), Format, "tokenizer_config.json: do_lower_case must be true or false");
  return it->get<bool>();
}

}  // namespace

namespace hf {

void finish_pipeline(Pipeline& p, const std::string& bos_name, const std::string& eos_name) {
  size_t n = p.vocab.tokens.size();
  for (const AddedToken& t : p.added.tokens()) n = std::max(n, size_t(t.id) + 1);
  p.vocab_size = n;
  auto find = [&](std::string_view s) -> std::optional<int32_t> {
    if (const AddedToken* t = p.added.by_content(s)) return t->id;
    return p.vocab.find(s);
  };
  // Without a config, the usual names of the families' BOS/EOS tokens.
  auto pick = [&](const std::string& name, std::initializer_list<std::string_view> guesses) -> std::optional<int32_t> {
    if (!name.empty()) return find(name);
    for (std::string_view g : guesses)
      if (const AddedToken* t = p.added.by_content(g); t && t->special) return t->id;
    return std::nullopt;
  };
  if (!p.bos) p.bos = pick(bos_name, {"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"});
  if (!p.eos) p.eos = pick(eos_name, {"</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>"});
  p.summary.vocab_size = n;
  auto name = [&](std::optional<int32_t> id) -> std::string {
    if (!id) return "";
    if (const AddedToken* t = p.added.by_id(*id)) return t->content;
    return size_t(*id) < p.vocab.tokens.size() ? p.vocab.tokens[*id] : "";
  };
  p.summary.bos = name(p.bos);
  p.summary.eos = name(p.eos);
  p.summary.merges = p.model ? p.model->merges() : 0;
  for (const AddedToken& t : p.added.tokens())
    if (t.special) p.summary.special_tokens.emplace_back(t.content, t.id);
}

}  // namespace hf

Tokenizer Tokenizer::from_json_string(std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  auto impl = std::make_shared<Impl>();
  impl->p = hf::pipeline_from_json(tokenizer_json, tokenizer_config_json);
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_json_file(const std::filesystem::path& path, const std::filesystem::path& config) {
  const std::string text = read_text_file(path.string(), "tokenizer.json");
  const std::string cfg = config.empty() ? std::string() : read_text_file(config.string(), "tokenizer_config.json");
  return from_json_string(text, cfg);
}

Tokenizer Tokenizer::from_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) {
    const auto cfg = dir / "tokenizer_config.json";
    return from_json_file(dir / "tokenizer.json", std::filesystem::exists(cfg, ec) ? cfg : std::filesystem::path());
  }
  if (const auto files = gpt2_files(dir))
    return from_gpt2_bpe(read_text_file(files->first.string(), "vocab.json"),
                         read_text_file(files->second.string(), "merges.txt"));
  if (std::filesystem::exists(dir / "vocab.txt", ec)) return from_wordpiece_vocab(dir);
  fail(ErrorKind::Io, "tokenizer: '", dir.string(),
       "' has neither tokenizer.json, vocab.json + merges.txt (GPT-2 BPE) nor vocab.txt (WordPiece)");
}

Tokenizer Tokenizer::from_wordpiece_vocab(const std::filesystem::path& path, std::optional<bool> lowercase) {
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  const fs::path vocab = folder ? path / "vocab.txt" : path;
  const bool lower = lowercase.value_or(folder ? folder_lowercase(path) : true);
  return from_wordpiece_text(read_text_file(vocab.string(), "vocab.txt"), lower);
}

Tokenizer Tokenizer::from_wordpiece_text(std::string_view vocab_txt, bool lowercase) {
  auto impl = std::make_shared<Impl>();
  impl->p = hf::pipeline_from_json_value(wordpiece_json(vocab_txt, lowercase), json::object());
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_gpt2_bpe(std::string_view vocab_json, std::string_view merges_txt) {
  auto impl = std::make_shared<Impl>();
  impl->p = hf::pipeline_from_json_value(gpt2_json(vocab_json, merges_txt), json::object());
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  auto impl = std::make_shared<Impl>();
  impl->p = hf::pipeline_from_gguf(file);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view raw, const EncodeOptions& options) const {
  const hf::Pipeline& p = *impl_->p;
  const std::string text = hf::to_valid_utf8(raw);
  std::vector<int32_t> ids;
  std::vector<hf::Piece> pieces;
  for (const hf::Segment& seg : p.added.split(text, false, options.parse_special)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string s = text.substr(seg.begin, seg.end - seg.begin);
    if (p.normalizer) p.normalizer->normalize(s);
    for (const hf::Segment& sub : p.added.split(s, true, options.parse_special)) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
        continue;
      }
      pieces.assign(1, {s.substr(sub.begin, sub.end - sub.begin), seg.begin == 0 && sub.begin == 0});
      if (pieces[0].text.empty()) continue;
      if (p.pre_tokenizer) p.pre_tokenizer->split(pieces);
      for (const hf::Piece& piece : pieces) p.model->encode(piece.text, ids);
    }
  }
  const bool add = options.add_special && p.post_processor;
  if (options.max_length > 0) {
    const size_t specials = add ? p.post_processor->added() : 0;
    WICK_CHECK(options.max_length >= specials, InvalidArgument, "tokenizer: encode: max_length ", options.max_length,
               " leaves no room for the ", specials, " special tokens added around the text");
    if (ids.size() > options.max_length - specials) ids.resize(options.max_length - specials);
  }
  if (add) p.post_processor->process(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const hf::Pipeline& p = *impl_->p;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (const hf::AddedToken* t = p.added.by_id(id)) {
      if (!(skip_special && t->special)) tokens.push_back(t->text);
      continue;
    }
    tokens.push_back(token(id));
  }
  if (!p.decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return hf::to_valid_utf8(out);
  }
  p.decoder->decode(tokens, hf::ByteMode::ValidUtf8);
  std::string out;
  for (const auto& t : tokens) out += t;
  // GGUF token strings are bytes: keep the result valid UTF-8 whatever the vocabulary holds.
  return hf::to_valid_utf8(out);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const hf::Pipeline& p = *impl_->p;
  if (const hf::AddedToken* t = p.added.by_id(id)) return t->text;
  const std::string& piece = token(id);
  if (!p.decoder) return piece;
  const auto raw = [&](std::vector<std::string> tokens) {
    p.decoder->decode(tokens, hf::ByteMode::Raw);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  };
  // Decoders drop a leading space of the first token only (Metaspace, Strip): decode the
  // token after itself and keep what the second copy adds.
  const std::string once = raw({piece}), twice = raw({piece, piece});
  return twice.starts_with(once) ? twice.substr(once.size()) : once;
}

std::string Tokenizer::DecodeStream::push(int32_t id) {
  // HF's DecodeStream: decode a window of ids twice (with and without the new one) and
  // return what was added, once it no longer ends in an incomplete character. The window
  // keeps the previous tokens so that first-token space rules apply only at the start.
  const Tokenizer tok(impl_);
  (void)tok.token(id);  // IndexOutOfRange before any state changes
  if (prefix_.empty() && !ids_.empty()) {
    std::string p = tok.decode(ids_, skip_special_);
    if (!hf::ends_with_replacement(p)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  std::string all = tok.decode(ids_, skip_special_);
  if (all.size() <= prefix_.size() || hf::ends_with_replacement(all)) return "";
  WICK_CHECK(all.starts_with(prefix_), Internal, "DecodeStream: the decoded text changed its prefix");
  std::string delta = all.substr(prefix_.size());
  ids_.erase(ids_.begin(), ids_.begin() + prefix_index_);
  prefix_ = tok.decode(ids_, skip_special_);
  prefix_index_ = ids_.size();
  return delta;
}

size_t Tokenizer::vocab_size() const { return impl_->p->vocab_size; }

const std::string& Tokenizer::token(int32_t id) const {
  const hf::Pipeline& p = *impl_->p;
  if (const hf::AddedToken* t = p.added.by_id(id)) return t->text;
  WICK_CHECK(id >= 0 && size_t(id) < p.vocab.tokens.size() && !p.vocab.tokens[id].empty(), IndexOutOfRange,
             "tokenizer: id ", id, " is not in the vocabulary (size ", p.vocab_size, ")");
  return p.vocab.tokens[id];
}

std::optional<int32_t> Tokenizer::token_id(std::string_view s) const {
  if (const hf::AddedToken* t = impl_->p->added.by_content(s)) return t->id;
  return impl_->p->vocab.find(s);
}

bool Tokenizer::is_special(int32_t id) const {
  const hf::AddedToken* t = impl_->p->added.by_id(id);
  return t && t->special;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->p->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->p->eos; }
std::string Tokenizer::bos_token() const { return bos_id() ? token(*bos_id()) : ""; }
std::string Tokenizer::eos_token() const { return eos_id() ? token(*eos_id()) : ""; }

std::vector<int32_t> Tokenizer::end_of_generation_ids() const {
  std::vector<int32_t> out = impl_->p->extra_eog;
  if (eos_id()) out.push_back(*eos_id());
  for (std::string_view name : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|endoftext|>"})
    if (const auto id = token_id(name)) out.push_back(*id);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TokenizerSummary Tokenizer::summary() const { return impl_->p->summary; }

std::string TokenizerSummary::to_string() const {
  std::ostringstream os;
  os << "tokenizer: " << model << " (" << source << "), vocab " << vocab_size;
  if (merges) os << ", " << merges << " merges";
  os << "\n  bos: " << (bos.empty() ? "none" : bos) << ", eos: " << (eos.empty() ? "none" : eos);
  os << "\n  normalizer: " << normalizer << "\n  pre-tokenizer: " << pre_tokenizer << "\n  decoder: " << decoder
     << "\n  special tokens (" << special_tokens.size() << "):";
  for (size_t i = 0; i < special_tokens.size() && i < 16; ++i)
    os << " " << special_tokens[i].first << "=" << special_tokens[i].second;
  if (special_tokens.size() > 16) os << " ...";
  os << "\n";
  return os.str();
}

}  // namespace wick::text
