// matmul with PyTorch's semantics: a 1-D left operand becomes a row (1, K) and a 1-D
// right operand a column (K, 1), the added dim is removed from the result; batch dims
// (all but the last two) broadcast as stride-0 views. One backend call does the batch.
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const Device dev = detail::common_device("matmul", {&a_in, &b_in});
  detail::check_same_dtype("matmul", a_in, b_in);
  WICK_CHECK(a_in.rank() >= 1 && b_in.rank() >= 1, ShapeMismatch, "matmul: both operands need rank >= 1, got shapes ",
             a_in.shape(), " and ", b_in.shape());
  const bool a_vec = a_in.rank() == 1, b_vec = b_in.rank() == 1;
  const Tensor a = a_vec ? a_in.unsqueeze(0) : a_in;
  const Tensor b = b_vec ? b_in.unsqueeze(-1) : b_in;
  const int64_t M = a.dim(-2), K = a.dim(-1), K2 = b.dim(-2), N = b.dim(-1);
  WICK_CHECK(K == K2, ShapeMismatch, "matmul: shapes ", a_in.shape(), " and ", b_in.shape(),
             " cannot be multiplied (inner dims ", K, " and ", K2, " differ)");

  const Shape a_batch(std::vector<int64_t>(a.shape().begin(), a.shape().end() - 2));
  const Shape b_batch(std::vector<int64_t>(b.shape().begin(), b.shape().end() - 2));
  std::vector<int64_t> dims = broadcast_shapes(a_batch, b_batch, "matmul").dims();
  const size_t batch_rank = dims.size();
  std::vector<int64_t> a_shape = dims, b_shape = dims;
  a_shape.insert(a_shape.end(), {M, K});
  b_shape.insert(b_shape.end(), {K, N});
  dims.insert(dims.end(), {M, N});
  Tensor out = Tensor::empty(Shape(dims), a.dtype(), dev);
  backend_for(dev).matmul(a.broadcast_as(Shape(a_shape)), b.broadcast_as(Shape(b_shape)), out);

  // Remove the dims added for 1-D operands.
  std::vector<int64_t> final_dims(dims.begin(), dims.begin() + batch_rank);
  if (!a_vec) final_dims.push_back(M);
  if (!b_vec) final_dims.push_back(N);
  return out.view(final_dims);
}

}  // namespace wick
