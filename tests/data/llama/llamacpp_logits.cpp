// gen_llama.py's helper for the quantized fixture: llama.cpp's own logits (CPU) for a
// prompt at every position, written as raw little-endian f32 (T x vocab) to stdout.
// Built by gen_llama.py against a llama.cpp build (never part of wick's build):
//   c++ -O2 -std=c++17 llamacpp_logits.cpp -I<llama.cpp>/include -I<llama.cpp>/ggml/include \
//       -L<build>/bin -lllama -lggml -lggml-base -o llamacpp_logits
// Usage: llamacpp_logits MODEL.gguf ID ID ...
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s model.gguf id...\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const int n = argc - 2;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 128;
  cp.n_batch = cp.n_ubatch = 128;
  cp.n_threads = cp.n_threads_batch = 1;  // one summation order
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = std::atoi(argv[i + 2]);
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) return 1;
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (int i = 0; i < n; ++i) std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), size_t(vocab), stdout);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
