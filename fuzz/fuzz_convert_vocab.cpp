// libFuzzer target: any byte string given to the GGUF converter as tokenizer.json (beside a
// fixed tokenizer_config.json naming special tokens) either becomes tokenizer.* metadata or
// raises wick::Error; it never crashes, and the vocabulary written has exactly vocab_size
// tokens and types.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "wick/error.h"
#include "wick/gguf.h"
#include "wick/models/convert.h"
#include "wick/storage.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wick;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A vocabulary of at most the input's size (the converter bounds it by the embedding).
  const int64_t vocab_size = int64_t(size % 512);
  try {
    gguf::Writer w;
    models::add_vocab_metadata(
        w, {text, R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "add_bos_token": true})", "", ""},
        vocab_size);
    const auto bytes = std::make_shared<std::string>(w.serialize());
    const gguf::File f = gguf::File::parse(Buffer::wrap_host(bytes->data(), bytes->size(), true, bytes));
    if (f.get("tokenizer.ggml.tokens").get<gguf::Array>().size() != size_t(vocab_size) ||
        f.get("tokenizer.ggml.token_type").get<gguf::Array>().size() != size_t(vocab_size))
      __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
