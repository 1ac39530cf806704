// libFuzzer target: tokenizer file loading. The input is
//   MODE SEP vocab SEP merges-or-nothing SEP text        (SEP = "\n----\n")
// where MODE's low bit picks GPT-2 BPE (0: vocab.json + merges.txt) or WordPiece (1: vocab.txt).
// Loading (text::Tokenizer::from_gpt2_bpe / from_wordpiece_text) must either succeed or throw
// wick::Error Format (or Unsupported); whatever loads must then encode the text without crashing (WordPiece
// within max_length), and the ids must be the vocabulary's: each has a token and they decode.
// (No round trip: like Hugging Face, text is Unicode, invalid bytes become U+FFFD, and a
// vocabulary missing byte symbols drops what it cannot spell.)
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wick/error.h"
#include "wick/text/tokenizer.h"

namespace {

constexpr std::string_view kSep = "\n----\n";

std::string_view next_part(std::string_view& rest) {
  const size_t at = rest.find(kSep);
  std::string_view part = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + kSep.size());
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool wordpiece = data[0] & 1;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (rest.starts_with(kSep)) rest.remove_prefix(kSep.size());
  const std::string_view vocab = next_part(rest);
  const std::string_view merges = next_part(rest);
  const std::string_view text = rest;
  try {
    if (wordpiece) {
      const auto tok = wick::text::Tokenizer::from_wordpiece_text(vocab);
      const auto ids = tok.encode(text, {.max_length = 64});
      if (ids.size() > 64) abort();
      for (int32_t id : ids) (void)tok.token(id);
    } else {
      const auto tok = wick::text::Tokenizer::from_gpt2_bpe(vocab, merges);
      const auto ids = tok.encode(text, {.add_special = false, .parse_special = (data[0] & 2) != 0});
      for (int32_t id : ids) (void)tok.token(id);
      (void)tok.decode(ids);
    }
  } catch (const wick::Error& e) {
    // Only loading may fail, and only as malformed (or, like tokenizer.json, unsupported) input.
    if (e.kind() != wick::ErrorKind::Format && e.kind() != wick::ErrorKind::Unsupported) abort();
  }
  return 0;
}
