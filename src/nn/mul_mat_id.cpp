// mul_mat_id (wick/experts.h): the rows of x multiplied by the experts ids names, grouped by
// expert so that each expert's rows go through one dense or packed product.
#include <functional>
#include <vector>

#include "core/checks.h"
#include "wick/error.h"
#include "wick/experts.h"
#include "wick/ops.h"

namespace wick {

namespace {

constexpr const char* kOp = "mul_mat_id";

// The pairs (token, slot) of ids, grouped by expert: `rows` the row of x each pair reads (in
// grouped order), `order` the pair each grouped row is, `counts` the pairs of each expert.
struct Grouping {
  std::vector<int64_t> rows, order, counts;
};

Grouping group_pairs(const Tensor& ids, int64_t experts, bool per_slot) {
  const int64_t N = ids.dim(0), k = ids.dim(1);
  const std::vector<int64_t> id = ids.to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
  Grouping g;
  g.counts.assign(size_t(experts), 0);
  for (size_t p = 0; p < id.size(); ++p) {
    WICK_CHECK(id[p] >= 0 && id[p] < experts, IndexOutOfRange, kOp, ": ids[", int64_t(p) / k, ", ", int64_t(p) % k,
               "] is ", id[p], ", outside [0, ", experts, ")");
    ++g.counts[size_t(id[p])];
  }
  std::vector<int64_t> start(size_t(experts), 0);
  for (size_t e = 1; e < start.size(); ++e) start[e] = start[e - 1] + g.counts[e - 1];
  g.order.assign(size_t(N * k), 0);
  g.rows.assign(size_t(N * k), 0);
  for (int64_t p = 0; p < N * k; ++p) {
    const int64_t at = start[size_t(id[size_t(p)])]++;
    g.order[size_t(at)] = p;
    g.rows[size_t(at)] = per_slot ? p : p / k;
  }
  return g;
}

// The most (token, slot) pairs a CUDA call runs pair by pair on the device (no grouping on
// the host, so no synchronization): a decode step's, up to 128 sequences at top 8.
constexpr int64_t kDevicePairs = 1024;

bool is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

bool is_half_or_f32(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

// Float experts (E, M, K), contiguous, seen as blocks of their ggml float type (the backend
// entry's form).
QuantTensor float_blocks(const Tensor& w) {
  const GgmlType type = w.dtype() == DType::F32   ? GgmlType::F32
                        : w.dtype() == DType::F16 ? GgmlType::F16
                                                  : GgmlType::BF16;
  const size_t offset = size_t(static_cast<const uint8_t*>(w.data()) - static_cast<const uint8_t*>(w.storage_data()));
  return QuantTensor{"experts", type, w.shape(), w.storage().slice(offset, w.nbytes())};
}

// The backend's per-pair product where the device takes it (mul_mat_id_on_device), and on
// the CPU for one token's packed experts (no gather, concatenation and scatter around k
// products of one row each; the same speed, measured), else an undefined tensor.
Tensor on_device(const Tensor& x, const QuantTensor& w, const Tensor& ids, QuantActivation act, const LinearEpilogue& e,
                 DType out_dtype) {
  const int64_t N = ids.dim(0), k = ids.dim(1), K = w.shape[2];
  if (x.device().is_cpu()) {
    if (N != 1 || is_float_type(w.type)) return {};  // one token's packed experts: pair by pair
  } else if (!mul_mat_id_on_device(x.device(), N * k) || K % 8 != 0 || K > 12288 ||
             (act == QuantActivation::Q8 && K % 32 != 0)) {
    return {};
  }
  const Tensor y = Tensor::empty(Shape{N * k, w.shape[1]}, DType::F32, x.device());
  detail::backend_of(x).mul_mat_id(x.contiguous().reshape({-1, K}), w, ids.contiguous(), x.rank() == 3, act, y);
  return linear_epilogue(y, {}, {}, e, out_dtype).reshape({N, k, -1});
}

// The shared checks, then the device's per-pair path where it applies, else the grouped
// products: product(e, rows of x) -> (rows, M').
Tensor grouped(const Tensor& x, const Shape& w_shape, Device w_device, const Tensor& ids,
               const std::function<Tensor(int64_t, const Tensor&)>& product,
               const std::function<Tensor()>& device_path) {
  WICK_CHECK(x.defined() && ids.defined(), InvalidArgument, kOp, ": x and ids must be defined");
  WICK_CHECK(w_shape.rank() == 3, ShapeMismatch, kOp, ": experts must have shape (E, M, K), got ", w_shape);
  WICK_CHECK(ids.rank() == 2, ShapeMismatch, kOp, ": ids must have shape (tokens, k), got ", ids.shape());
  WICK_CHECK(ids.dtype() == DType::U32 || ids.dtype() == DType::I64, DTypeMismatch, kOp,
             ": ids must be u32 or i64, got ", ids.dtype());
  const int64_t N = ids.dim(0), k = ids.dim(1), E = w_shape[0], K = w_shape[2];
  const bool per_slot = x.rank() == 3;
  WICK_CHECK((x.rank() == 2 && x.dim(0) == N && x.dim(1) == K) ||
                 (per_slot && x.dim(0) == N && x.dim(1) == k && x.dim(2) == K),
             ShapeMismatch, kOp, ": x must have shape (", N, ", ", K, ") or (", N, ", ", k, ", ", K, ") for ids ",
             ids.shape(), " and experts ", w_shape, ", got ", x.shape());
  WICK_CHECK(x.device() == w_device && ids.device() == w_device, DeviceMismatch, kOp, ": x is on ", x.device(),
             ", experts on ", w_device, ", ids on ", ids.device());
  WICK_CHECK(N > 0 && k > 0, InvalidArgument, kOp, ": ids must name at least one expert per token, got ", ids.shape());
  if (Tensor y = device_path(); y.defined()) return y;
  const Grouping g = group_pairs(ids, E, per_slot);
  const Tensor rows = Tensor::from_vector(g.rows, Shape{N * k}).to(x.device());
  const Tensor picked = index_select(x.reshape({-1, K}), 0, rows);
  std::vector<Tensor> parts;
  for (int64_t e = 0, at = 0; e < E; at += g.counts[size_t(e)], ++e)
    if (g.counts[size_t(e)] > 0) parts.push_back(product(e, picked.narrow(0, at, g.counts[size_t(e)])));
  const Tensor y = parts.size() == 1 ? parts[0] : cat(parts, 0);
  // Back to pair order: grouped row i is pair order[i], so pair p is grouped row inverse[p].
  std::vector<int64_t> inverse(g.order.size());
  for (size_t i = 0; i < g.order.size(); ++i) inverse[size_t(g.order[i])] = int64_t(i);
  const Tensor back = Tensor::from_vector(inverse, Shape{N * k}).to(x.device());
  return index_select(y, 0, back).reshape({N, k, y.dim(1)});
}

}  // namespace

bool mul_mat_id_on_device(Device device, int64_t pairs) { return device.is_cuda() && pairs <= kDevicePairs; }

QuantTensor expert_matrix(const QuantTensor& w, int64_t e) {
  WICK_CHECK(w.shape.rank() == 3, ShapeMismatch, kOp, ": experts must have shape (E, M, K), got ", w.shape);
  WICK_CHECK(e >= 0 && e < w.shape[0], IndexOutOfRange, kOp, ": expert ", e, " outside [0, ", w.shape[0], ")");
  const size_t bytes = ggml_row_bytes(w.type, w.shape[2], kOp) * size_t(w.shape[1]);
  return QuantTensor{w.name, w.type, Shape{w.shape[1], w.shape[2]}, w.bytes.slice(size_t(e) * bytes, bytes)};
}

QuantTensor join_experts(const QuantTensor& a, const QuantTensor& b) {
  WICK_CHECK(a.shape.rank() == 3 && b.shape.rank() == 3 && a.shape[0] == b.shape[0] && a.shape[2] == b.shape[2],
             ShapeMismatch, "join_experts: stacks must have shapes (E, Ma, K) and (E, Mb, K), got ", a.shape, " and ",
             b.shape);
  WICK_CHECK(a.type == b.type, DTypeMismatch, "join_experts: the stacks are ", ggml_type_name(a.type), " and ",
             ggml_type_name(b.type));
  WICK_CHECK(a.device() == b.device(), DeviceMismatch, "join_experts: the stacks are on ", a.device(), " and ",
             b.device());
  const int64_t E = a.shape[0];
  auto bytes = [&](const QuantTensor& q) {  // (E, bytes per expert)
    return Tensor::from_buffer(q.bytes.view(DType::U8, Shape{E, int64_t(q.bytes.nbytes()) / E}));
  };
  const Tensor joined = cat({bytes(a), bytes(b)}, 1);
  return QuantTensor{a.name, a.type, Shape{E, a.shape[1] + b.shape[1], a.shape[2]}, joined.storage()};
}

Tensor mul_mat_id(const Tensor& x, const Tensor& w, const Tensor& ids, const LinearEpilogue& epilogue) {
  WICK_CHECK(w.defined(), InvalidArgument, kOp, ": experts must be defined");
  return grouped(
      x, w.shape(), w.device(), ids,
      [&](int64_t e, const Tensor& rows) { return linear(rows, w.select(0, e), {}, {}, epilogue); },
      [&] {
        if (!w.is_contiguous() || !is_half_or_f32(x.dtype()) || !is_half_or_f32(w.dtype())) return Tensor();
        return on_device(x, float_blocks(w), ids, QuantActivation::F32, epilogue, x.dtype());
      });
}

Tensor mul_mat_id(const Tensor& x, const QuantTensor& w, const Tensor& ids, QuantActivation act,
                  const LinearEpilogue& epilogue, std::optional<DType> out_dtype) {
  WICK_CHECK(w.bytes.defined(), InvalidArgument, kOp, ": experts must be defined");
  return grouped(
      x, w.shape, w.device(), ids,
      [&](int64_t e, const Tensor& rows) {
        return quant_linear(rows, expert_matrix(w, e), act, {}, {}, epilogue, out_dtype);
      },
      [&] {
        if (!is_half_or_f32(x.dtype())) return Tensor();
        return on_device(x, w, ids, act, epilogue, out_dtype.value_or(x.dtype()));
      });
}

}  // namespace wick
