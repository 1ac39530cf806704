// libFuzzer target: tokenizer loading and use. The input is either
//   tokenizer.json SEP text        (SEP = "\n----\n"), or
//   a GGUF file (starting with "GGUF") whose tokenizer.ggml.* keys are loaded.
// Loading must succeed or throw wick::Error Format / Unsupported; a loaded tokenizer must
// encode the text (or refuse it with InvalidArgument, e.g. a regex past its match limit),
// decode the ids it made, and its DecodeStream must give a prefix of that decode.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "wick/error.h"
#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

namespace {

bool load_error_ok(const wick::Error& e) {
  return e.kind() == wick::ErrorKind::Format || e.kind() == wick::ErrorKind::Unsupported;
}

std::optional<wick::text::Tokenizer> load(std::string_view all, std::string_view& text) {
  if (all.starts_with("GGUF")) {
    text = "Hello <s> w\xC3\xB6rld\n\t 123 <|eot_id|> \xE4\xBD\xA0\xE5\xA5\xBD";
    wick::Buffer b = wick::Buffer::allocate(wick::Device::cpu(), wick::DType::U8, wick::Shape{int64_t(all.size())});
    std::memcpy(b.mutable_data(), all.data(), all.size());
    const auto file = wick::gguf::File::parse(b);  // Format for a malformed file
    return wick::text::Tokenizer::from_gguf(file);
  }
  constexpr std::string_view kSep = "\n----\n";
  const size_t at = all.find(kSep);
  text = at == std::string_view::npos ? std::string_view() : all.substr(at + kSep.size());
  return wick::text::Tokenizer::from_json_string(all.substr(0, at));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  std::string_view text;
  std::optional<wick::text::Tokenizer> tok;
  try {
    tok = load(all, text);
  } catch (const wick::Error& e) {
    if (!load_error_ok(e)) abort();
    return 0;
  }
  std::vector<int32_t> ids;
  try {
    ids = tok->encode(text, {.add_special = (size & 1) != 0, .parse_special = (size & 2) != 0});
  } catch (const wick::Error& e) {
    if (e.kind() != wick::ErrorKind::InvalidArgument) abort();
    return 0;
  }
  const std::string decoded = tok->decode(ids);  // must not throw: every id came from it
  auto stream = tok->decode_stream();
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  if (!decoded.starts_with(streamed)) abort();
  return 0;
}
