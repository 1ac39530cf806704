// Front end of the comparisons (u8 results) and where.
#include "core/checks.h"
#include "core/elementwise_args.h"
#include "wick/ops.h"

namespace wick {

static Tensor compare_op(CompareOp op, const Tensor& a, const Tensor& b) {
  auto [x, y] = detail::promote_and_broadcast(compare_op_name(op), a, b);
  Tensor out = Tensor::empty(x.shape(), DType::U8, x.device());
  detail::backend_of(x).compare(op, x, y, out);
  return out;
}

Tensor eq(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Ge, a, b); }

Tensor where(const Tensor& cond, const Tensor& t, const Tensor& f) {
  detail::common_device("where", {&cond, &t, &f});
  WICK_CHECK(is_integer(cond.dtype()), DTypeMismatch, "where: cond must be u8, u32 or i64, got ", cond.dtype());
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), t.shape(), "where"), f.shape(), "where");
  const DType dt = promote_types(t.dtype(), f.dtype());
  const Tensor c = cond.broadcast_as(shape);
  const Tensor x = t.to(dt).broadcast_as(shape), y = f.to(dt).broadcast_as(shape);
  Tensor out = Tensor::empty(shape, dt, c.device());
  detail::backend_of(c).where(c, x, y, out);
  return out;
}

}  // namespace wick
