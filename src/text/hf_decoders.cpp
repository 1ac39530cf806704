// Decoders (ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, Sequence)
// and post-processors (TemplateProcessing, Bert/RobertaProcessing, ByteLevel, Sequence).
#include <array>
#include <unordered_map>

#include "text/hf_components.h"
#include "text/hf_util.h"
#include "text/unicode.h"

namespace wick::text::hf {
namespace {

// The inverse of the ByteLevel alphabet: code point -> byte.
const std::unordered_map<char32_t, uint8_t>& char_bytes() {
  static const std::unordered_map<char32_t, uint8_t> table = [] {
    std::unordered_map<char32_t, uint8_t> t;
    for (int b = 0; b < 256; ++b) t[byte_char(uint8_t(b))] = uint8_t(b);
    return t;
  }();
  return table;
}

class ByteLevelDecoder : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, ByteMode mode) const override {
    const auto& map = char_bytes();
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token with a character outside the alphabet (an added token) is kept as it is.
      const size_t mark = bytes.size();
      bool mapped = true;
      for (size_t i = 0; i < t.size() && mapped;) {
        const auto it = map.find(next_char(t, i));
        if (it == map.end())
          mapped = false;
        else
          bytes += static_cast<char>(it->second);
      }
      if (!mapped) bytes.resize(mark), bytes += t;
    }
    tokens.assign(1, mode == ByteMode::Raw ? bytes : to_valid_utf8(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const json& j)
      : replacement_(get_or<std::string>(j, "replacement", "\u2581", "Metaspace")) {
    strip_first_ = prepend_scheme(j) != PrependScheme::Never;
  }
  void decode(std::vector<std::string>& tokens, ByteMode) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      // HF drops every replacement character of the first token, not only a leading one.
      std::string out;
      const std::string& t = tokens[i];
      for (size_t at = 0; at < t.size();) {
        if (t.compare(at, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && strip_first_)) out += ' ';
          at += replacement_.size();
        } else {
          out += t[at++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, ByteMode mode) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t n_bytes = 0;
    auto flush = [&] {
      if (!n_bytes) return;
      if (mode == ByteMode::Raw || to_valid_utf8(bytes) == bytes)
        out.push_back(bytes);
      else
        for (size_t k = 0; k < n_bytes; ++k) out.emplace_back("\xEF\xBF\xBD");
      bytes.clear();
      n_bytes = 0;
    };
    for (std::string& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') value = hex_byte(t[3], t[4]);
      if (value >= 0) {
        bytes += static_cast<char>(value);
        ++n_bytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  }
  static int hex_byte(char a, char b) {
    const int hi = hex_digit(a), lo = hex_digit(b);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens, ByteMode) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const json& j)
      : content_(get_field<std::string>(j, "content", "Strip")),
        start_(get_or(j, "start", size_t(0), "Strip")),
        stop_(get_or(j, "stop", size_t(0), "Strip")) {}
  void decode(std::vector<std::string>& tokens, ByteMode) const override {
    if (content_.empty()) return;
    for (std::string& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t k = 0; k < start_ && t.compare(b, content_.size(), content_) == 0; ++k) b += content_.size();
      for (size_t k = 0;
           k < stop_ && e >= b + content_.size() && t.compare(e - content_.size(), content_.size(), content_) == 0; ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const json& j) : replace_(make_normalizer(j)) {}  // same fields as the normalizer
  void decode(std::vector<std::string>& tokens, ByteMode) const override {
    for (std::string& t : tokens) replace_->normalize(t);
  }

 private:
  std::unique_ptr<Normalizer> replace_;
};

class WordPieceDecoder : public Decoder {
 public:
  explicit WordPieceDecoder(const json& j)
      : prefix_(get_or<std::string>(j, "prefix", "##", "WordPiece")),
        cleanup_(get_or(j, "cleanup", true, "WordPiece")) {}
  void decode(std::vector<std::string>& tokens, ByteMode) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i > 0) t = t.starts_with(prefix_) ? t.substr(prefix_.size()) : " " + t;
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  // HF's wordpiece cleanup: no space before punctuation and some contractions.
  static std::string cleanup(std::string s) {
    static const std::array<std::pair<std::string_view, std::string_view>, 10> kRules = {{{" .", "."},
                                                                                          {" ?", "?"},
                                                                                          {" !", "!"},
                                                                                          {" ,", ","},
                                                                                          {" ' ", "'"},
                                                                                          {" n't", "n't"},
                                                                                          {" 'm", "'m"},
                                                                                          {" 's", "'s"},
                                                                                          {" 've", "'ve"},
                                                                                          {" 're", "'re"}}};
    for (const auto& [from, to] : kRules)
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
  }
  std::string prefix_;
  bool cleanup_;
};

class DecoderSequence : public Decoder {
 public:
  explicit DecoderSequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode(std::vector<std::string>& tokens, ByteMode mode) const override {
    for (const auto& p : parts_) p->decode(tokens, mode);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

// ---- post-processors ----

// Adds fixed ids before and after the sequence (every single-sequence processor is that).
class Surround : public PostProcessor {
 public:
  Surround(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }
  size_t added() const override { return before_.size() + after_.size(); }

 private:
  std::vector<int32_t> before_, after_;
};

class PostSequence : public PostProcessor {
 public:
  explicit PostSequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }
  size_t added() const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->added();
    return n;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// Ids a post-processor adds must decode: in the model's vocabulary or added tokens.
int32_t known_id(const json& id, const Pipeline& p, std::string_view where) {
  const auto v = id.get<int64_t>();
  const bool known = (v >= 0 && size_t(v) < p.vocab.tokens.size() && !p.vocab.tokens[v].empty()) ||
                     (v >= 0 && v <= INT32_MAX && p.added.by_id(int32_t(v)));
  WICK_CHECK(known, Format, "tokenizer.json: ", where, " adds id ", v, ", which is not in the vocabulary");
  return int32_t(v);
}

std::unique_ptr<PostProcessor> template_processing(const json& j, const Pipeline& p) {
  const json& single = field_ref(j, "single", "TemplateProcessing");
  const json& specials = get_or(j, "special_tokens", json::object(), "TemplateProcessing");
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (const json& item : single) {
    if (item.contains("Sequence")) {
      WICK_CHECK(!seen_sequence, Unsupported, "tokenizer.json: TemplateProcessing with the sequence twice");
      seen_sequence = true;
      continue;
    }
    const auto name = get_field<std::string>(field_ref(item, "SpecialToken", "template item"), "id", "SpecialToken");
    const auto it = specials.find(name);
    WICK_CHECK(it != specials.end(), Format, "tokenizer.json: template token '", name, "' is not in special_tokens");
    for (const json& id : field_ref(*it, "ids", "special_tokens"))
      (seen_sequence ? after : before).push_back(known_id(id, p, "TemplateProcessing"));
  }
  return std::make_unique<Surround>(std::move(before), std::move(after));
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j) {
  if (j.is_null()) return nullptr;
  const auto type = get_field<std::string>(j, "type", "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(j);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") return std::make_unique<StripDecoder>(j);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(j);
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(j);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const json& part : field_ref(j, "decoders", "Sequence")) parts.push_back(make_decoder(part));
    std::erase(parts, nullptr);
    return std::make_unique<DecoderSequence>(std::move(parts));
  }
  unsupported("decoder", j);
}

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const Pipeline& p) {
  if (j.is_null()) return nullptr;
  const auto type = get_field<std::string>(j, "type", "post_processor");
  if (type == "ByteLevel") return nullptr;  // it only adjusts offsets
  if (type == "TemplateProcessing") return template_processing(j, p);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    // "cls": [token, id], "sep": [token, id]
    const auto cls = field_ref(j, "cls", type), sep = field_ref(j, "sep", type);
    WICK_CHECK(cls.is_array() && cls.size() == 2 && sep.is_array() && sep.size() == 2, Format, "tokenizer.json: ", type,
               " cls/sep are not [token, id]");
    return std::make_unique<Surround>(std::vector<int32_t>{known_id(cls[1], p, type)},
                                      std::vector<int32_t>{known_id(sep[1], p, type)});
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (const json& part : field_ref(j, "processors", "Sequence")) parts.push_back(make_post_processor(part, p));
    std::erase(parts, nullptr);
    return std::make_unique<PostSequence>(std::move(parts));
  }
  unsupported("post_processor", j);
}

}  // namespace wick::text::hf
