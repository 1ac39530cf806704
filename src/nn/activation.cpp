// The one activation enum's names (what configs say) and its plain op.
#include "wick/error.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick {

Activation activation_named(std::string_view name, std::string_view where) {
  if (name == "silu" || name == "swish") return Activation::Silu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Activation::GeluTanh;
  if (name == "gelu") return Activation::GeluErf;
  if (name == "relu") return Activation::Relu;
  fail(ErrorKind::Unsupported, where, " names activation '", name,
       "' (supported: silu, swish, gelu_pytorch_tanh, gelu_new, gelu_fast, gelu, relu)");
}

Tensor activate(const Tensor& x, Activation act) {
  switch (act) {
    case Activation::Silu: return silu(x);
    case Activation::GeluTanh: return gelu(x);
    case Activation::GeluErf: return gelu_erf(x);
    case Activation::Relu: return relu(x);
    case Activation::None: break;
  }
  return x;
}

}  // namespace wick
