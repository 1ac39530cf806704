// GPT-2 byte-level BPE: loading vocab.json/merges.txt, the byte alphabet, BPE by merge rank
// (with a per-piece cache) and decoding back to bytes.
#include "wick/text/gpt2_tokenizer.h"

#include <array>
#include <filesystem>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "text/read_text_file.h"
#include "text/unicode.h"
#include "wick/error.h"

namespace wick::text {
namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr size_t kMaxCacheEntries = 1 << 16;

// GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the others are shifted
// to U+0100.. in byte order, so every byte has a visible, non-whitespace character.
std::array<char32_t, 256> byte_alphabet() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

// Reads a flat JSON object of string -> non-negative integer without building a DOM, so
// hostile input (deep nesting, huge arrays) is rejected early.
class VocabSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<std::pair<std::string, int64_t>> entries;
  std::string error;

  bool null() override { return fail("a null"); }
  bool boolean(bool) override { return fail("a boolean"); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) ? fail("an id past int32")
                                                                          : value(static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t&) override { return fail("a fractional id"); }
  bool string(string_t&) override { return fail("a string value"); }
  bool binary(binary_t&) override { return fail("binary data"); }
  bool start_object(std::size_t) override { return ++depth_ == 1 ? true : fail("a nested object"); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return fail("an array"); }
  bool end_array() override { return fail("an array"); }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    error = detail::cat("invalid JSON at byte ", pos, ": ", e.what());
    return false;
  }

 private:
  bool value(int64_t v) {
    if (depth_ != 1) return fail("a bare value");
    if (v < 0) return fail("a negative id");
    entries.emplace_back(std::move(key_), v);
    return true;
  }
  bool fail(const char* what) {
    error = detail::cat("expected an object of token -> id, found ", what);
    return false;
  }
  int depth_ = 0;
  std::string key_;
};

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

}  // namespace

struct Gpt2Tokenizer::Impl {
  std::vector<std::string> tokens;  // id -> vocabulary string
  std::vector<std::string> bytes;   // id -> the bytes it stands for
  std::unordered_map<std::string, int32_t> ids;
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  std::unordered_map<uint64_t, Merge> merges;  // (left id, right id) -> rank and merged id
  std::array<int32_t, 256> byte_ids{};
  std::optional<int32_t> end_of_text;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void load_vocab(std::string_view json);
  void load_merges(std::string_view text);
  std::vector<int32_t> bpe(std::string_view piece) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
};

void Gpt2Tokenizer::Impl::load_vocab(std::string_view json) {
  VocabSax sax;
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &sax, nlohmann::json::input_format_t::json,
                                            /*strict=*/true);
  WICK_CHECK(ok, Format, "gpt2 tokenizer: vocab.json: ", sax.error);
  WICK_CHECK(!sax.entries.empty(), Format, "gpt2 tokenizer: vocab.json: the vocabulary is empty");
  const size_t n = sax.entries.size();
  tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  ids.reserve(n);
  for (auto& [token, id] : sax.entries) {
    WICK_CHECK(static_cast<size_t>(id) < n, Format, "gpt2 tokenizer: vocab.json: id ", id, " of '", token,
               "' is outside [0, ", n, "): ids must be dense");
    WICK_CHECK(!seen[id], Format, "gpt2 tokenizer: vocab.json: id ", id, " is used twice");
    WICK_CHECK(ids.emplace(token, static_cast<int32_t>(id)).second, Format, "gpt2 tokenizer: vocab.json: token '",
               token, "' appears twice");
    seen[id] = true;
    tokens[id] = token;
  }
  // Each vocabulary string stands for the bytes its characters map back to. Characters outside
  // the byte alphabet (never in GPT-2's files) stand for their own UTF-8.
  const auto alphabet = byte_alphabet();
  std::unordered_map<char32_t, unsigned char> to_byte;
  for (int b = 0; b < 256; ++b) to_byte[alphabet[b]] = static_cast<unsigned char>(b);
  bytes.resize(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string& t = tokens[id];
    for (size_t pos = 0; pos < t.size();) {
      const unicode::Decoded d = unicode::decode_utf8(t, pos);
      auto it = d.valid ? to_byte.find(d.cp) : to_byte.end();
      if (it != to_byte.end())
        bytes[id] += static_cast<char>(it->second);
      else
        bytes[id].append(t, pos, d.length);
      pos += d.length;
    }
  }
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    unicode::append_utf8(symbol, alphabet[b]);
    auto it = ids.find(symbol);
    WICK_CHECK(it != ids.end(), Format, "gpt2 tokenizer: vocab.json lacks the token for byte ", b, " ('", symbol, "')");
    byte_ids[b] = it->second;
  }
  if (auto it = ids.find(std::string(kEndOfText)); it != ids.end()) end_of_text = it->second;
}

void Gpt2Tokenizer::Impl::load_merges(std::string_view text) {
  size_t line_no = 0;
  int32_t rank = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.find(' ');
    WICK_CHECK(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                   line.find(' ', space + 1) == std::string_view::npos,
               Format, "gpt2 tokenizer: merges line ", line_no, " is not two tokens separated by one space");
    const std::string left(line.substr(0, space)), right(line.substr(space + 1));
    auto l = ids.find(left), r = ids.find(right), m = ids.find(left + right);
    WICK_CHECK(l != ids.end() && r != ids.end() && m != ids.end(), Format, "gpt2 tokenizer: merges line ", line_no,
               " ('", left, " ", right, "') names a token missing from the vocabulary");
    merges.try_emplace(pair_key(l->second, r->second), Merge{rank++, m->second});
  }
}

// BPE over one pre-tokenized piece. The reference repeatedly merges every occurrence (left to
// right) of the adjacent pair with the lowest rank; a min-heap of (rank, position) candidates
// over a linked list of symbols does the same merges in the same order in O(n log n), so long
// pieces (minified code, base64) stay fast.
std::vector<int32_t> Gpt2Tokenizer::Impl::bpe(std::string_view piece) const {
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<int32_t> id(n), next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    id[i] = byte_ids[static_cast<unsigned char>(piece[i])];
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  struct Candidate {
    int32_t rank, pos, left, right;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    auto it = merges.find(pair_key(id[pos], id[next[pos]]));
    if (it != merges.end()) heap.push({it->second.rank, pos, id[pos], id[next[pos]]});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Skip candidates that earlier merges made stale.
    if (!alive[c.pos] || next[c.pos] < 0 || id[c.pos] != c.left || id[next[c.pos]] != c.right) continue;
    const int32_t right = next[c.pos];
    id[c.pos] = merges.at(pair_key(c.left, c.right)).result;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    consider(prev[c.pos]);
    consider(c.pos);
  }
  std::vector<int32_t> word;
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = next[i]) word.push_back(id[i]);
  return word;
}

void Gpt2Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  for (auto [begin, end] : pretokenize(text)) {
    const std::string piece(text.substr(begin, end - begin));
    {
      std::lock_guard lock(cache_mutex);
      if (auto it = cache.find(piece); it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    std::vector<int32_t> piece_ids = bpe(piece);
    out.insert(out.end(), piece_ids.begin(), piece_ids.end());
    std::lock_guard lock(cache_mutex);
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(piece, std::move(piece_ids));
  }
}

Gpt2Tokenizer Gpt2Tokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt) {
  auto impl = std::make_shared<Impl>();
  impl->load_vocab(vocab_json);
  impl->load_merges(merges_txt);
  return Gpt2Tokenizer(std::move(impl));
}

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& vocab_path, const std::string& merges_path)
    : Gpt2Tokenizer(from_strings(read_text_file(vocab_path, "gpt2 tokenizer: vocabulary"),
                                 read_text_file(merges_path, "gpt2 tokenizer: merges"))) {}

namespace {
std::pair<std::string, std::string> gpt2_paths(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  std::error_code ec;
  if (fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec))
    return {(d / "vocab.json").string(), (d / "merges.txt").string()};
  if (fs::exists(d / "encoder.json", ec) && fs::exists(d / "vocab.bpe", ec))
    return {(d / "encoder.json").string(), (d / "vocab.bpe").string()};
  fail(ErrorKind::Io, "gpt2 tokenizer: '", dir, "' holds neither vocab.json + merges.txt nor encoder.json + vocab.bpe");
}
}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& dir) : Gpt2Tokenizer(gpt2_paths(dir).first, gpt2_paths(dir).second) {}

std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> out;
  if (!allow_special || !impl_->end_of_text) {
    impl_->encode_plain(text, out);
    return out;
  }
  for (;;) {
    const size_t at = text.find(kEndOfText);
    impl_->encode_plain(text.substr(0, at), out);
    if (at == std::string_view::npos) break;
    out.push_back(*impl_->end_of_text);
    text.remove_prefix(at + kEndOfText.size());
  }
  return out;
}

std::string Gpt2Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    WICK_CHECK(id >= 0 && static_cast<size_t>(id) < impl_->bytes.size(), IndexOutOfRange, "gpt2 tokenizer: decode: id ",
               id, " is outside the vocabulary [0, ", impl_->bytes.size(), ")");
    out += impl_->bytes[id];
  }
  return out;
}

const std::string& Gpt2Tokenizer::token(int32_t id) const {
  WICK_CHECK(id >= 0 && static_cast<size_t>(id) < impl_->tokens.size(), IndexOutOfRange, "gpt2 tokenizer: token: id ",
             id, " is outside the vocabulary [0, ", impl_->tokens.size(), ")");
  return impl_->tokens[id];
}

std::optional<int32_t> Gpt2Tokenizer::token_id(std::string_view token) const {
  auto it = impl_->ids.find(std::string(token));
  return it == impl_->ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

size_t Gpt2Tokenizer::vocab_size() const { return impl_->tokens.size(); }
std::optional<int32_t> Gpt2Tokenizer::end_of_text_id() const { return impl_->end_of_text; }

}  // namespace wick::text
