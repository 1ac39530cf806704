// libFuzzer target: tokenizer.json loading and use. The input is
//   tokenizer.json SEP text        (SEP = "\n----\n")
// Loading must succeed or throw wick::Error Format / Unsupported; a loaded tokenizer must
// encode the text (or refuse it with InvalidArgument, e.g. a regex past its match limit),
// decode the ids it made, and its DecodeStream must give a prefix of that decode.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wick/error.h"
#include "wick/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr std::string_view kSep = "\n----\n";
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t at = all.find(kSep);
  const std::string_view json = all.substr(0, at);
  const std::string_view text = at == std::string_view::npos ? std::string_view() : all.substr(at + kSep.size());
  std::optional<wick::text::Tokenizer> tok;
  try {
    tok.emplace(wick::text::Tokenizer::from_json_string(json));
  } catch (const wick::Error& e) {
    if (e.kind() != wick::ErrorKind::Format && e.kind() != wick::ErrorKind::Unsupported) abort();
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
