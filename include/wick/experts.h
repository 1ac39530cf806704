// Mixture-of-experts building blocks: the expert-indexed matrix product (ggml's
// mul_mat_id), with which a MoE layer multiplies each token by the few experts its router
// picked, for a stack of float or packed (ggml block) expert matrices.
#pragma once

#include <optional>

#include "wick/nn.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick {

// y[n, s] = epilogue(x[n] @ w[ids[n, s]]^T) for the k experts ids[n, :] that token n routes to:
//   x (N, K), every slot multiplying the token's row, or (N, k, K), one row per slot (the down
//   projection, after each expert's own up projection); w (E, M, K) float (f32/f16/bf16, x's
//   dtype or 16-bit under an f32 x, as linear takes it); ids (N, k) u32/i64 with values in [0, E)
//   (IndexOutOfRange otherwise: before any product, or on CUDA's
//   device path at the next synchronization, as index_select). Returns (N, k, M) of x's dtype,
//   or (N, k, M/2) with a glu epilogue (w holding [gate; up] rows per expert).
// Two ways to the same values: on CUDA, up to a decode step's pairs (mul_mat_id_on_device),
// one kernel computes every pair against its expert reading ids on the device (no
// synchronization; a CUDA graph records it; an expert shared by pairs is read once per pair).
// Otherwise the pairs (n, s) are grouped by expert and each expert's rows go through one
// product (linear / quant_linear: a dense layer's kernels), so an expert chosen by many tokens
// reads its weights once; the grouping reads ids on the host (on CUDA a synchronization).
Tensor mul_mat_id(const Tensor& x, const Tensor& w, const Tensor& ids, const LinearEpilogue& epilogue = {});
// The same for packed experts: w a QuantTensor of shape (E, M, K) (GGUF's stacked
// ffn_*_exps); x f32/f16/bf16; the product is quant_linear's (act says how x is rounded) and
// the output out_dtype (default x's).
Tensor mul_mat_id(const Tensor& x, const QuantTensor& w, const Tensor& ids, QuantActivation act,
                  const LinearEpilogue& epilogue = {}, std::optional<DType> out_dtype = {});

// Whether mul_mat_id of `pairs` (token, slot) pairs on device runs without reading ids on
// the host (so that a CUDA graph can record it).
bool mul_mat_id_on_device(Device device, int64_t pairs);

// Stacks a (E, Ma, K) and b (E, Mb, K) of one packed type as one (E, Ma + Mb, K), expert e's
// rows a_e then b_e: the gate and up experts joined for one product with a glu epilogue. A
// copy on their device; ShapeMismatch / DTypeMismatch when the stacks do not pair up.
QuantTensor join_experts(const QuantTensor& a, const QuantTensor& b);

// Expert e of a stack (E, M, K): a view (M, K) of its bytes, no copy.
QuantTensor expert_matrix(const QuantTensor& w, int64_t e);

}  // namespace wick
