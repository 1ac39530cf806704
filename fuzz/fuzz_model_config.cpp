// libFuzzer target: any byte string given as a GPT-2, BERT or Llama-family config.json either parses or
// raises wick::Error; it never crashes (deep nesting once overflowed the stack), and a
// config that parses holds what the readers promise: positive sizes, a hidden size that
// the heads divide, and a supported activation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "wick/models/bert.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"

namespace {

void check_gpt2(const std::string& text) {
  using namespace wick;
  try {
    const models::Gpt2Config c = models::Gpt2Config::from_json_string(text, "fuzz.json");
    if (c.vocab_size <= 0 || c.n_positions <= 0 || c.n_embd <= 0 || c.n_layer <= 0 || c.n_head <= 0 ||
        c.n_embd % c.n_head != 0 || c.inner_size() <= 0 || !(c.layer_norm_epsilon > 0))
      __builtin_trap();
  } catch (const Error&) {
  }
}

void check_bert(const std::string& text) {
  using namespace wick;
  try {
    const models::BertConfig c = models::BertConfig::from_json_string(text, "fuzz.json");
    if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.intermediate_size <= 0 ||
        c.max_position_embeddings <= 0 || c.type_vocab_size <= 0 || c.hidden_size % c.num_heads != 0)
      __builtin_trap();
  } catch (const Error&) {
  }
}

void check_llama(const std::string& text) {
  using namespace wick;
  try {
    const models::LlamaConfig c = models::LlamaConfig::from_hf_json(text, "fuzz.json");
    if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.n_layer <= 0 || c.n_head <= 0 || c.n_kv_head <= 0 ||
        c.n_head % c.n_kv_head != 0 || c.head_dim <= 0 || c.head_dim % 2 != 0 || c.rope.dims <= 0 ||
        c.rope.dims > c.head_dim || c.sliding_layers.size() != size_t(c.n_layer) || !(c.rms_norm_eps > 0) ||
        !(c.attention_scale > 0))
      __builtin_trap();
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_gpt2(text);
  check_bert(text);
  check_llama(text);
  return 0;
}
