// The op table: every op of the Backend interface, written once. From these lists the
// preprocessor generates the Backend virtuals (backend.h), their "unsupported" defaults
// and names (backend.cpp), the overrides each backend declares (cpu_backend.h,
// cuda_backend.h), the enum -> functor switches (elementwise_ops.h), and the OpId rows
// that Backend::supports, `wick info --ops` and docs/ops.md's table are made of.
//
// Adding an op: one line in WICK_BACKEND_OPS (its entry and parameters), one row in
// WICK_OP_ROWS (its name and the dtypes it is defined on), the kernels in each backend's
// cpu_<family>.cpp / kernels_<family>.cu, and the front end in src/core. Adding a
// sub-op of a family (a unary op, say): one line in its family list and its functor.
#pragma once

// ---- families: X(Enum, name) ----------------------------------------------------------
// Each Enum names the functor that computes it (ew::Neg in elementwise_ops.h, ...), so
// what a sub-op accepts (kIntegers) is read off the functor, not restated here.
#define WICK_UNARY_OPS(X)           \
  X(Neg, neg)                       \
  X(Abs, abs)                       \
  X(Sqr, sqr)                       \
  X(Sqrt, sqrt)                     \
  X(Recip, recip)                   \
  X(Exp, exp)                       \
  X(Log, log)                       \
  X(Sin, sin)                       \
  X(Cos, cos)                       \
  X(Tanh, tanh)                     \
  X(Erf, erf)                       \
  X(Gelu, gelu)                     \
  X(GeluErf, gelu_erf)              \
  X(Relu, relu)                     \
  X(Silu, silu)                     \
  X(Sigmoid, sigmoid)               \
  X(Sign, sign)                     \
  X(Floor, floor)                   \
  X(Ceil, ceil)                     \
  X(Round, round)                   \
  X(Affine, affine) /* x * a + b */ \
  X(Powf, powf)     /* x ^ a */     \
  X(Elu, elu)       /* alpha a */   \
  X(Clamp, clamp)   /* lo a (if has_a), hi b (if has_b) */

#define WICK_BINARY_OPS(X) \
  X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(Minimum, minimum) X(Maximum, maximum) X(Pow, pow)

#define WICK_COMPARE_OPS(X) X(Eq, eq) X(Ne, ne) X(Lt, lt) X(Le, le) X(Gt, gt) X(Ge, ge)

// Reductions: X(Enum, name, dtypes). mean is defined on floats only.
#define WICK_REDUCE_OPS(X)      \
  X(Sum, sum, kAllDTypes)       \
  X(Mean, mean, kFloatDTypes)   \
  X(Prod, prod, kAllDTypes)     \
  X(Min, min, kAllDTypes)       \
  X(Max, max, kAllDTypes)       \
  X(ArgMin, argmin, kAllDTypes) \
  X(ArgMax, argmax, kAllDTypes)

// Running reductions along one dim (cumsum, cumprod): X(Enum, name).
#define WICK_CUMULATIVE_OPS(X) X(Sum, cumsum) X(Prod, cumprod)

// ---- the Backend entries: X(entry, (parameters)) --------------------------------------
// The front end (src/core) has checked the arguments, broadcast inputs to the output
// shape (stride-0 views), promoted dtypes and allocated the outputs; a backend reads any
// strides and offsets and writes the outputs.
#define WICK_BACKEND_OPS(X)                                                                                      \
  /* dst = src elementwise; same shape and dtype, any strides on both sides */                                   \
  X(copy, (const Tensor& src, const Tensor& dst))                                                                \
  /* dst = convert(src); same shape, any dtypes */                                                               \
  X(cast, (const Tensor& src, const Tensor& dst))                                                                \
  X(fill, (const Tensor& dst, Scalar value))                                                                     \
  X(rand_uniform, (const Tensor& dst, double low, double high, uint64_t seed, uint64_t offset))                  \
  X(rand_normal, (const Tensor& dst, double mean, double stddev, uint64_t seed, uint64_t offset))                \
  /* elementwise: inputs broadcast to out's shape, same dtype as out */                                          \
  X(unary, (UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out))                               \
  X(binary, (BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out))                                  \
  /* a and b share a dtype; out is u8 */                                                                         \
  X(compare, (CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out))                                \
  X(where, (const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out))                            \
  /* out has x's rank with the reduced dims of size 1; dims sorted, unique; arg ops: one dim, i64 out */         \
  X(reduce, (ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out))                  \
  /* out[..., i, ...] = op over x[..., 0..i, ...] along dim; out has x's shape and dtype */                      \
  X(cumulative, (CumulativeOp op, const Tensor& x, size_t dim, const Tensor& out))                               \
  /* stable sort along dim; values (x's dtype) may be undefined; indices i64 */                                  \
  X(sort, (const Tensor& x, size_t dim, bool descending, const Tensor& values, const Tensor& indices))           \
  /* the k largest (or smallest) along dim, sorted, ties by smaller index; NaN is the largest */                 \
  X(topk, (const Tensor& x, size_t dim, int64_t k, bool largest, const Tensor& values, const Tensor& indices))   \
  X(index_select, (const Tensor& src, size_t dim, const Tensor& indices, const Tensor& out))                     \
  X(gather, (const Tensor& src, size_t dim, const Tensor& index, const Tensor& out))                             \
  /* in place on dst (a fresh copy made by the front end) */                                                     \
  X(scatter, (const Tensor& dst, size_t dim, const Tensor& index, const Tensor& src, ScatterMode mode))          \
  X(index_add, (const Tensor& dst, size_t dim, const Tensor& indices, const Tensor& src))                        \
  /* a (batch..., M, K), b (batch..., K, N), batch dims broadcast to out's; out contiguous (batch..., M, N) */   \
  X(matmul, (const Tensor& a, const Tensor& b, const Tensor& out))                                               \
  /* NC[H]W, contiguous inputs */                                                                                \
  X(conv, (const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out))                       \
  X(pool2d, (const PoolParams& p, const Tensor& x, const Tensor& out))                                           \
  X(upsample, (const UpsampleParams& p, const Tensor& x, const Tensor& out))                                     \
  /* fused nn ops over the last dim; weight/bias may be undefined */                                             \
  X(softmax, (const Tensor& x, const Tensor& out, bool log))                                                     \
  X(layer_norm, (const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out))      \
  X(rms_norm, (const Tensor& x, const Tensor& weight, double eps, const Tensor& out))                            \
  X(rope, (const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out))          \
  /* out (R, N) = epilogue(h @ w^T + bias), h = x (R, K), or rms_norm(x, norm, p.norm_eps) when norm is          \
     defined; w (N or 2N, K); bias / residual undefined or as nn.h says */                                       \
  X(linear, (const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w, const Tensor& bias,    \
             const Tensor& residual, const Tensor& out))                                                         \
  /* out (R, N) = epilogue(y (R, N or 2N) + bias), y any float dtype, out contiguous */                          \
  X(linear_epilogue,                                                                                             \
    (const LinearEpilogue& e, const Tensor& y, const Tensor& bias, const Tensor& residual, const Tensor& out))   \
  /* q (B,H,Tq,D), k/v (B,H,Tk,D), mask undefined or broadcast to (B,H,Tq,Tk); out (B,H,Tq,D) */                 \
  X(attention, (const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, \
                const Tensor& out))                                                                              \
  /* q (B,H,D), k/v (P,KV,N,D) blocks, blocks (B) or (B,M) and lengths (B) i64 whose values the backend          \
     checks (nn.h); out (B,H,D) contiguous */                                                                    \
  X(cache_attention, (const CacheAttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,          \
                      const Tensor& blocks, const Tensor& lengths, const Tensor& out))                           \
  /* in place: k/v (B,KV,D) into k_cache/v_cache (P,KV,N,D) at row b's position positions[b] through its         \
     blocks (B) or (B,M) (nn.h); i64 values the backend checks */                                                \
  X(cache_write, (const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks, const Tensor& positions,   \
                  const Tensor& k, const Tensor& v))                                                             \
  /* ggml block-quantized weights: out contiguous f32/f16/bf16 of q's shape on q's device */                     \
  X(dequantize, (const QuantTensor& q, const Tensor& out))                                                       \
  /* out (M, N) f32 = x (M, K) @ W^T for W (N, K) on x's device; W never expanded as a whole */                  \
  X(quant_matmul, (const Tensor& x, const QuantTensor& w, QuantActivation act, const Tensor& out))               \
  /* out (R, N) = epilogue(h @ W^T + bias) for packed W (N or 2N rows of K), h = x (R, K) contiguous, or         \
     rms_norm(x, norm, p.norm_eps) when norm is defined; out contiguous f32/f16/bf16, bias/residual its dtype */ \
  X(quant_linear, (const LinearParams& p, const Tensor& x, const Tensor& norm, const QuantTensor& w,             \
                   QuantActivation act, const Tensor& bias, const Tensor& residual, const Tensor& out))          \
  /* src contiguous float (rows of out.row_elems()) into out's preallocated bytes, ggml's reference encoders */  \
  X(quantize, (const Tensor& src, const QuantTensor& out))                                                       \
  /* out (P, M) f32, P = N k pairs: row p = x[p / k] (x (N, K)) or x[p] (per_slot, x (N k, K)), contiguous       \
     f32/f16/bf16, times expert ids[p] of w (E, M, K), packed or a float type viewed as blocks; ids (N, k)       \
     i64 / u32 contiguous, values the backend checks (IndexOutOfRange); act as quant_matmul's */                 \
  X(mul_mat_id,                                                                                                  \
    (const Tensor& x, const QuantTensor& w, const Tensor& ids, bool per_slot, QuantActivation act, const Tensor& out))

// ---- the rows of the support table: X(id, dtypes) -------------------------------------
// One row per op a user calls, after the family sub-ops (generated from the lists above).
// dtypes: the input dtypes the op is defined on (the output's for creation ops and
// dequantize). Backend::supports answers from here unless a backend says otherwise.
#define WICK_OP_ROWS(X)                   \
  X(where, kAllDTypes)                    \
  X(to_dtype, kAllDTypes)                 \
  X(copy, kAllDTypes)                     \
  X(fill, kAllDTypes)                     \
  X(rand, kFloatDTypes)                   \
  X(randn, kFloatDTypes)                  \
  X(argsort, kAllDTypes)                  \
  X(topk, kAllDTypes)                     \
  X(index_select, kAllDTypes)             \
  X(gather, kAllDTypes)                   \
  X(scatter, kAllDTypes)                  \
  X(scatter_add, kAllDTypes)              \
  X(index_add, kAllDTypes)                \
  X(matmul, kAllDTypes)                   \
  X(conv, kFloatDTypes)                   \
  X(max_pool2d, kAllDTypes)               \
  X(avg_pool2d, kFloatDTypes)             \
  X(upsample_nearest, kAllDTypes)         \
  X(upsample_bilinear, kFloatDTypes)      \
  X(softmax, kFloatDTypes)                \
  X(log_softmax, kFloatDTypes)            \
  X(layer_norm, kFloatDTypes)             \
  X(rms_norm, kFloatDTypes)               \
  X(linear, kFloatDTypes)                 \
  X(linear_epilogue, kFloatDTypes)        \
  X(rope, kFloatDTypes)                   \
  X(attention, kFloatDTypes)              \
  X(cache_attention, kFloatDTypes)        \
  X(cache_write, kAllDTypes)              \
  X(dequantize, kQuantActivationDTypes)   \
  X(quant_matmul, kQuantActivationDTypes) \
  X(quant_linear, kQuantActivationDTypes) \
  X(quantize, kQuantActivationDTypes)     \
  X(mul_mat_id, kQuantActivationDTypes)
