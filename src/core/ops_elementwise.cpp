// Front end of the unary and binary elementwise ops and the Tensor operators: check
// arguments, broadcast (stride-0 views), promote dtypes, allocate, one backend call.
#include "backend/elementwise_ops.h"
#include "core/checks.h"
#include "core/elementwise_args.h"
#include "wick/ops.h"

namespace wick {

namespace detail {

static Tensor unary_op(UnaryOp op, const Tensor& x, const UnaryParams& p = {}) {
  const char* name = unary_op_name(op);
  common_device(name, {&x});
  WICK_CHECK(is_float(x.dtype()) || ew::unary_takes_integers(op), DTypeMismatch, name,
             ": expected a floating-point tensor, got ", x.dtype(), " (", name, " is defined on floats only)");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend_of(x).unary(op, p, x, out);
  return out;
}

std::pair<Tensor, Tensor> promote_and_broadcast(const char* op, const Tensor& a, const Tensor& b) {
  common_device(op, {&a, &b});
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const DType dt = promote_types(a.dtype(), b.dtype());
  return {a.to(dt).broadcast_as(shape), b.to(dt).broadcast_as(shape)};
}

static Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  auto [x, y] = promote_and_broadcast(binary_op_name(op), a, b);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend_of(x).binary(op, x, y, out);
  return out;
}

}  // namespace detail

using detail::binary_op;
using detail::unary_op;

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x); }
Tensor sqr(const Tensor& x) { return unary_op(UnaryOp::Sqr, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x); }
Tensor recip(const Tensor& x) { return unary_op(UnaryOp::Recip, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x); }
Tensor sin(const Tensor& x) { return unary_op(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary_op(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x); }
Tensor erf(const Tensor& x) { return unary_op(UnaryOp::Erf, x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::Gelu, x); }
Tensor gelu_erf(const Tensor& x) { return unary_op(UnaryOp::GeluErf, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::Silu, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::Sign, x); }
Tensor floor(const Tensor& x) { return unary_op(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary_op(UnaryOp::Ceil, x); }
Tensor round(const Tensor& x) { return unary_op(UnaryOp::Round, x); }

Tensor affine(const Tensor& x, double mul, double add) {
  return unary_op(UnaryOp::Affine, x, UnaryParams{Scalar(mul), Scalar(add)});
}
Tensor powf(const Tensor& x, double exponent) {
  return unary_op(UnaryOp::Powf, x, UnaryParams{Scalar(exponent), Scalar(0), true, false});
}
Tensor elu(const Tensor& x, double alpha) {
  return unary_op(UnaryOp::Elu, x, UnaryParams{Scalar(alpha), Scalar(0), true, false});
}
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return unary_op(UnaryOp::Clamp, x,
                  UnaryParams{lo.value_or(Scalar(0)), hi.value_or(Scalar(0)), lo.has_value(), hi.has_value()});
}

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Div, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Minimum, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Maximum, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Pow, a, b); }

// The scalar of a tensor-scalar operator becomes a rank-0 tensor of the tensor's dtype
// (so f16 + 1.5 stays f16 and i64 * 2.5 multiplies by 2), broadcast by the binary op.
static Tensor scalar_like(const Tensor& t, Scalar s) {
  detail::check_defined("operator", t);
  return full(Shape{}, s, t.dtype(), t.device());
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, scalar_like(a, b)); }
Tensor operator+(Scalar a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(Scalar a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor operator/(Scalar a, const Tensor& b) { return div(scalar_like(b, a), b); }

}  // namespace wick
