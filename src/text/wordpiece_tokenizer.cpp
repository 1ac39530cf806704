// WordPiece: vocab.txt loading, greedy longest-match-first subwords with "##" continuations,
// and the [CLS] ... [SEP] template with truncation and batch padding.
#include "wick/text/wordpiece_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include "text/bert_basic_tokenizer.h"
#include "text/read_text_file.h"
#include "text/unicode.h"
#include "wick/error.h"

namespace wick::text {

struct WordPieceTokenizer::Impl {
  WordPieceOptions options;
  std::vector<std::string> tokens;  // id -> token (one per line)
  std::unordered_map<std::string, int32_t> ids;
  int32_t unk = -1, cls = -1, sep = -1, pad = -1;
  std::vector<std::pair<std::string, int32_t>> specials;  // literal special tokens in the vocabulary

  void append_text(std::string_view text, std::vector<int32_t>& out, size_t limit) const;

  void append_word(const std::string& word, std::vector<int32_t>& out) const;
};

namespace {

constexpr std::string_view kPrefix = "##";

// Drops trailing White_Space, as Hugging Face's trim_end() on each vocabulary line.
std::string_view trim_end(std::string_view line) {
  size_t keep = 0;
  for (size_t pos = 0; pos < line.size();) {
    const unicode::Decoded d = unicode::decode_utf8(line, pos);
    pos += d.length;
    if (!unicode::is_white_space(d.cp)) keep = pos;
  }
  return line.substr(0, keep);
}

int32_t required_id(const WordPieceTokenizer::Impl& impl, const char* token) {
  auto it = impl.ids.find(token);
  WICK_CHECK(it != impl.ids.end(), Format, "wordpiece tokenizer: vocab.txt lacks the special token ", token);
  return it->second;
}

}  // namespace

void WordPieceTokenizer::Impl::append_word(const std::string& word, std::vector<int32_t>& out) const {
  // Byte offsets of the word's code points (the normalizer produced valid UTF-8).
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < word.size(); pos += unicode::decode_utf8(word, pos).length) starts.push_back(pos);
  const size_t n = starts.size();
  if (n > options.max_input_chars_per_word) {
    out.push_back(unk);
    return;
  }
  starts.push_back(word.size());
  const size_t first_new = out.size();
  std::string candidate;
  for (size_t start = 0; start < n;) {
    int32_t found = -1;
    size_t end = n;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? kPrefix : std::string_view());
      candidate.append(word, starts[start], starts[end] - starts[start]);
      if (auto it = ids.find(candidate); it != ids.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // some piece has no match: the whole word is unknown
      out.resize(first_new);
      out.push_back(unk);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

// Splits text at literal special tokens; the pieces between go through basic tokenization and
// WordPiece. Stops early once out holds limit ids.
void WordPieceTokenizer::Impl::append_text(std::string_view text, std::vector<int32_t>& out, size_t limit) const {
  size_t piece_begin = 0;
  auto flush_words = [&](size_t end) {
    for (const std::string& word :
         bert_basic_tokenize(text.substr(piece_begin, end - piece_begin), options.lowercase)) {
      if (out.size() >= limit) return;
      append_word(word, out);
    }
  };
  for (size_t pos = 0; pos < text.size() && out.size() < limit;) {
    const auto special =
        text[pos] != '[' ? specials.end() : std::find_if(specials.begin(), specials.end(), [&](const auto& s) {
          return text.substr(pos).starts_with(s.first);
        });
    if (special == specials.end()) {
      ++pos;
      continue;
    }
    flush_words(pos);
    if (out.size() < limit) out.push_back(special->second);
    pos += special->first.size();
    piece_begin = pos;
  }
  if (out.size() < limit) flush_words(text.size());
}

WordPieceTokenizer WordPieceTokenizer::from_string(std::string_view vocab_txt, Options options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  size_t line_no = 0;
  for (size_t pos = 0; pos < vocab_txt.size();) {
    size_t eol = vocab_txt.find('\n', pos);
    if (eol == std::string_view::npos) eol = vocab_txt.size();
    std::string_view line = vocab_txt.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    for (size_t p = 0; p < line.size();) {
      const unicode::Decoded d = unicode::decode_utf8(line, p);
      WICK_CHECK(d.valid, Format, "wordpiece tokenizer: vocab.txt line ", line_no, " is not valid UTF-8 (byte ", p,
                 ")");
      p += d.length;
    }
    WICK_CHECK(impl->tokens.size() < static_cast<size_t>(INT32_MAX), Format,
               "wordpiece tokenizer: vocab.txt has too many lines");
    const std::string token(trim_end(line));
    const auto id = static_cast<int32_t>(impl->tokens.size());
    impl->ids.insert_or_assign(token, id);  // a repeated token keeps its last line, as in HF
    impl->tokens.push_back(token);
  }
  WICK_CHECK(!impl->tokens.empty(), Format, "wordpiece tokenizer: vocab.txt is empty");
  impl->unk = required_id(*impl, "[UNK]");
  impl->cls = required_id(*impl, "[CLS]");
  impl->sep = required_id(*impl, "[SEP]");
  impl->pad = required_id(*impl, "[PAD]");
  if (options.match_special_tokens)
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
      if (auto it = impl->ids.find(special); it != impl->ids.end()) impl->specials.emplace_back(special, it->second);
  return WordPieceTokenizer(std::shared_ptr<const Impl>(std::move(impl)));
}

WordPieceTokenizer::WordPieceTokenizer(const std::string& vocab_path, Options options)
    : WordPieceTokenizer(from_string(read_text_file(vocab_path, "wordpiece tokenizer: vocabulary"), options)) {}

std::vector<std::string> WordPieceTokenizer::basic_tokenize(std::string_view text) const {
  return bert_basic_tokenize(text, impl_->options.lowercase);
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, size_t max_length,
                                                bool add_special_tokens) const {
  const size_t specials = add_special_tokens ? 2 : 0;
  WICK_CHECK(max_length >= specials, InvalidArgument, "wordpiece tokenizer: encode: max_length ", max_length,
             " leaves no room for [CLS] and [SEP]");
  std::vector<int32_t> ids;
  if (add_special_tokens) ids.push_back(impl_->cls);
  const size_t limit = max_length - (add_special_tokens ? 1 : 0);
  impl_->append_text(text, ids, limit);
  if (ids.size() > limit) ids.resize(limit);
  if (add_special_tokens) ids.push_back(impl_->sep);
  return ids;
}

WordPieceBatch WordPieceTokenizer::encode_batch(std::span<const std::string> texts, size_t max_length) const {
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(texts.size());
  WordPieceBatch batch;
  batch.batch = texts.size();
  for (const std::string& t : texts) {
    rows.push_back(encode(t, max_length));
    batch.seq_len = std::max(batch.seq_len, rows.back().size());
  }
  batch.ids.assign(batch.batch * batch.seq_len, impl_->pad);
  batch.attention_mask.assign(batch.batch * batch.seq_len, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(), batch.ids.begin() + r * batch.seq_len);
    std::fill_n(batch.attention_mask.begin() + r * batch.seq_len, rows[r].size(), 1);
    batch.lengths.push_back(static_cast<int32_t>(rows[r].size()));
  }
  return batch;
}

std::vector<std::string> WordPieceTokenizer::tokens(std::span<const int32_t> ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(token(id));
  return out;
}

const std::string& WordPieceTokenizer::token(int32_t id) const {
  WICK_CHECK(id >= 0 && static_cast<size_t>(id) < impl_->tokens.size(), IndexOutOfRange, "wordpiece tokenizer: id ", id,
             " is outside the vocabulary [0, ", impl_->tokens.size(), ")");
  return impl_->tokens[id];
}

std::optional<int32_t> WordPieceTokenizer::token_id(std::string_view token) const {
  auto it = impl_->ids.find(std::string(token));
  return it == impl_->ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

size_t WordPieceTokenizer::vocab_size() const { return impl_->tokens.size(); }
int32_t WordPieceTokenizer::cls_id() const { return impl_->cls; }
int32_t WordPieceTokenizer::sep_id() const { return impl_->sep; }
int32_t WordPieceTokenizer::pad_id() const { return impl_->pad; }
int32_t WordPieceTokenizer::unk_id() const { return impl_->unk; }

}  // namespace wick::text
