// Normalizers: Unicode forms through utf8proc, Lowercase (full case mapping), Strip,
// Replace, Prepend, StripAccents, BertNormalizer and Sequence.
#include <utf8proc.h>

#include <cstdlib>

#include "text/hf_components.h"
#include "text/hf_util.h"
#include "text/unicode.h"

namespace wick::text::hf {
namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(int options) : options_(options) {}
  void normalize(std::string& s) const override {
    if (s.empty()) return;
    utf8proc_uint8_t* out = nullptr;
    const auto n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &out,
                     static_cast<utf8proc_option_t>(options_));
    WICK_CHECK(n >= 0, InvalidArgument, "tokenizer: Unicode normalization failed: ", utf8proc_errmsg(n));
    s.assign(reinterpret_cast<char*>(out), static_cast<size_t>(n));
    std::free(out);
  }

 private:
  int options_;
};

// Applies f(code point, out) to every character.
template <class F>
void map_chars(std::string& s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) f(next_char(s, i), out);
  s = std::move(out);
}

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::u32string low;
    map_chars(s, [&](char32_t c, std::string& out) {
      if (c < 0x80) {
        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
        return;
      }
      low.clear();
      unicode::append_lower(low, c);
      for (char32_t l : low) unicode::append_utf8(out, l);
    });
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t b = 0, e = s.size();
    if (left_)
      for (size_t i = 0; i < e && is_whitespace(next_char(s, i));) b = i;
    if (right_) {
      // Walk back over whole characters.
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!is_whitespace(next_char(s, i))) break;
        e = start;
      }
    }
    s = s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class Replace : public Normalizer {
 public:
  Replace(const json& j) {
    auto [is_regex, pattern] = get_pattern(j, "Replace");
    content_ = get_field<std::string>(j, "content", "Replace");
    if (is_regex)
      regex_.emplace(pattern, "tokenizer.json: Replace pattern");
    else
      literal_ = std::move(pattern);
  }
  void normalize(std::string& s) const override { s = apply(s); }
  std::string apply(std::string_view s) const {
    std::vector<Span> m;
    if (regex_) {
      m = regex_->matches(s);
    } else if (!literal_.empty()) {
      for (size_t at = s.find(literal_); at != std::string_view::npos; at = s.find(literal_, at + literal_.size()))
        m.emplace_back(at, at + literal_.size());
    }
    if (m.empty()) return std::string(s);
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : m) {
      out.append(s.substr(prev, b - prev));
      out += content_;
      prev = e;
    }
    out.append(s.substr(prev));
    return out;
  }

 private:
  std::string literal_, content_;
  std::optional<Regex> regex_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

// NFD, then without combining marks: StripAccents drops every mark (Mn, Mc, Me, HF's
// is_combining_mark), BertNormalizer only nonspacing ones (Mn), as in HF.
void strip_accents(std::string& s, bool all_marks) {
  UnicodeForm(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE).normalize(s);
  map_chars(s, [all_marks](char32_t c, std::string& out) {
    const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    const bool drop =
        all_marks ? cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME : cat == UTF8PROC_CATEGORY_MN;
    if (!drop) unicode::append_utf8(out, c);
  });
}

class StripAccents : public Normalizer {
 public:
  void normalize(std::string& s) const override { strip_accents(s, true); }
};

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
 public:
  explicit BertNormalizer(const json& j)
      : clean_(get_or(j, "clean_text", true, "BertNormalizer")),
        chinese_(get_or(j, "handle_chinese_chars", true, "BertNormalizer")),
        lowercase_(get_or(j, "lowercase", true, "BertNormalizer")),
        strip_(get_or(j, "strip_accents", lowercase_, "BertNormalizer")) {}
  void normalize(std::string& s) const override {
    map_chars(s, [&](char32_t c, std::string& out) {
      if (clean_) {
        // HF's is_control: every "other" category (Cc, Cf, Cn, Co, Cs: unassigned and
        // private-use characters too), tab and newlines excepted (they are white space).
        const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
        const bool control =
            c != '\t' && c != '\n' && c != '\r' &&
            (cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CN ||
             cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS);
        if (c == 0 || c == 0xFFFD || control) return;
        if (is_whitespace(c)) c = ' ';
      }
      if (chinese_ && is_chinese_char(c)) {
        out += ' ';
        unicode::append_utf8(out, c);
        out += ' ';
      } else {
        unicode::append_utf8(out, c);
      }
    });
    if (strip_) strip_accents(s, false);
    if (lowercase_) Lowercase().normalize(s);
  }

 private:
  bool clean_, chinese_, lowercase_, strip_;
};

class NormalizerSequence : public Normalizer {
 public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  const auto type = get_field<std::string>(j, "type", "normalizer");
  constexpr int kStable = UTF8PROC_STABLE;
  if (type == "NFC") return std::make_unique<UnicodeForm>(kStable | UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeForm>(kStable | UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(kStable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(kStable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(get_or(j, "strip_left", true, "Strip"), get_or(j, "strip_right", true, "Strip"));
  if (type == "Replace") return std::make_unique<Replace>(j);
  if (type == "Prepend") return std::make_unique<Prepend>(get_field<std::string>(j, "prepend", "Prepend"));
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "BertNormalizer") return std::make_unique<BertNormalizer>(j);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const json& part : field_ref(j, "normalizers", "Sequence")) parts.push_back(make_normalizer(part));
    std::erase(parts, nullptr);
    return std::make_unique<NormalizerSequence>(std::move(parts));
  }
  unsupported("normalizer", j);
}

}  // namespace wick::text::hf
