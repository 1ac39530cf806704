// Fused neural-network ops: each is one backend call (one kernel on CUDA), numerically
// stable, for every float dtype (f16/bf16 compute in f32).
#pragma once

#include <optional>
#include <string_view>

#include "wick/tensor.h"

namespace wick {

// Over the last dim.
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// Over the last dim; weight and bias (shape [last dim]) may be undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);

// Rotary position embedding of x (B, H, T, D) with cos/sin tables (T, D/2).
// interleaved: pairs (2i, 2i+1) rotate (GPT-J); otherwise halves (i, i + D/2) (GPT-NeoX/Llama).
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved);

struct AttentionOptions {
  bool causal = false;
  std::optional<double> scale;  // default 1/sqrt(head dim)
  // Attention sinks (gpt-oss): undefined, or (H) of any float dtype on q's device. Head h's
  // softmax also counts a key of logit sinks[h] (not scaled) whose value is zero, so the
  // weights of the real keys sum to less than 1; a row that sees no key gives zeros.
  Tensor sinks;
};
// Scaled dot-product attention. q (B, H, Tq, D), k and v (B, H, Tk, D); an optional
// additive mask broadcastable to (B, H, Tq, Tk). With causal, query i (aligned to the end
// of the keys, for KV caches) sees keys j <= i + Tk - Tq.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                                    const AttentionOptions& opt = {});

struct CacheAttentionOptions {
  std::optional<double> scale;  // multiplies q.k; default 1/sqrt(head dim)
  int64_t window = 0;           // > 0: a row sees only its last `window` keys (sliding-window layers)
  double softcap = 0;           // > 0: scores become softcap * tanh(scores / softcap) (Gemma 2)
  Tensor sinks;                 // (H) per-head sink logits, as AttentionOptions::sinks
};
// Decode attention over a pool of KV cache blocks (a server's paged cache, or its slots:
// KvCache::pooled). k_cache and v_cache (P, KV, N, D), any strides: P blocks of N positions.
// Row b's keys are positions [0, lengths[b]) of its sequence, found through `blocks`:
//   (B) i64: the whole sequence in block blocks[b] (a slot of N positions), 1 <= lengths[b] <= N;
//   (B, M) i64, any strides: a block table, position j in block blocks[b, j / N] at offset
//   j % N, 1 <= lengths[b] <= M * N; only the entries the row's length reaches are read.
// Query head h of row b (q (B, H, D)) attends with key/value head h / (H / KV) (grouped-query
// attention; each key is read once for the whole group). Block ids outside [0, P) and lengths
// outside their range are IndexOutOfRange: at once on the CPU, at the next synchronization on
// CUDA, as index_select. The keys are bounded by each row's length, not by the table: one
// call serves sequences of any mix of lengths, and the launch depends on no value, so a CUDA
// graph can record it. Returns (B, H, D).
Tensor cache_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks,
                       const Tensor& lengths, const CacheAttentionOptions& opt = {});

// In place, the keys and values of one new token per row into a pool of KV cache blocks:
// position positions[b] of row b's sequence, addressed through `blocks` as cache_attention
// does ((B): block blocks[b] at offset positions[b] < N; (B, M): block blocks[b, p / N] at
// offset p % N, p = positions[b] < M * N), gets k[b] and v[b]. k_cache and v_cache (P, KV, N,
// D) of one dtype, any strides; k and v (B, KV, D) of that dtype; blocks and positions i64 on
// the caches' device (IndexOutOfRange for values out of range, at once on the CPU, at the next
// synchronization on CUDA). Rows naming the same position write in an unspecified order. No
// value is read on the host, so a CUDA graph can record it (a decode step's cache update;
// index_copy_ checks on the host).
void cache_write_(const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks, const Tensor& positions,
                  const Tensor& k, const Tensor& v);

// x @ weight^T + bias without copying weight (weight (out, in), as PyTorch's Linear).
// weight has x's dtype, or is f16/bf16 under an f32 x: an f32 model over 16-bit weights
// (the product, bias, residual and output are f32, the weight's values exact). The CPU
// reads such a weight in place; other devices widen it to f32 for the call.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// The activation functions of models' feed-forward layers and of the fused linear, by what
// they compute: one enum for every model (Hugging Face's names map to it by activation_named).
enum class Activation : uint8_t { None, Silu, GeluTanh /* tanh approximation */, GeluErf /* exact */, Relu };
// A config's activation name: "silu" / "swish", "gelu_pytorch_tanh" / "gelu_new" / "gelu_fast"
// (the tanh approximation), "gelu" (erf), "relu". Unsupported otherwise, the message starting
// with `where` (e.g. "llama: config key 'hidden_act'") and naming the supported ones.
Activation activation_named(std::string_view name, std::string_view where);
// act(x) as an op of its own (None: x itself).
Tensor activate(const Tensor& x, Activation act);

// What a fused linear applies to its product p = x @ weight^T + bias before writing:
//   out = act(p) + residual                            (glu false)
//   out = act(p[..., :N]) * p[..., N:] + residual      (glu: weight holds [gate; up] rows, 2N of them)
// computed in f32 and rounded once. One kernel on CUDA for a few rows of x (a decode step);
// otherwise the matrix product, then one pass for the rest.
struct LinearEpilogue {
  Activation act = Activation::None;
  bool glu = false;
};
// residual: undefined or of the output's shape (..., N) and x's dtype.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
              const LinearEpilogue& epilogue);
// linear(rms_norm(x, norm_weight, eps), weight, ...) as one op: on CUDA, for a decode step's
// few rows, one kernel that normalizes x while it multiplies (the normalized x is never
// rounded to the dtype or written out).
Tensor rms_norm_linear(const Tensor& x, const Tensor& norm_weight, double eps, const Tensor& weight,
                       const Tensor& bias = {}, const Tensor& residual = {}, const LinearEpilogue& epilogue = {});
// The same epilogue on a product computed elsewhere (quant_matmul's f32 output): y (..., N or
// 2N with glu) of any float dtype; bias (y's last dim) and residual (..., N) of out_dtype.
Tensor linear_epilogue(const Tensor& y, const Tensor& bias, const Tensor& residual, const LinearEpilogue& epilogue,
                       DType out_dtype);

}  // namespace wick
