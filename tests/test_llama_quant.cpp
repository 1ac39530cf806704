// Quantized GGUF files written by llama.cpp's convert_hf_to_gguf.py and llama-quantize
// (tests/data/llama_quant/gen_llama_quant.py) against llama.cpp's own logits for the same
// 256 tokens (llama.cpp run with an f32 KV cache, no flash attention). Both read the same
// packed weights, so what differs is the activations' rounding and the summation order.
// Measured on the CPU (max |diff| over the logit scale ~35; top-1 agreement):
//   Q8_0 4.4e-3, 1.000; Q4_0 9.1e-3, 0.980; Q4_K_M 1.2e-2, 1.000; Q6_K 1.2e-2, 0.980.
// Q8_0 is held to the 99% because both round activations to q8_0 blocks of 32 for its
// integer dot products. For K-quant matrices (and the q6_K LM head that llama-quantize
// writes into Q4_0 files) ggml rounds activations to q8_K blocks of 256, which wick's
// QuantActivation::Q8 does not reproduce (it rounds per 32): llama.cpp itself is as far from
// the exact product (its top-1 agrees with transformers' float model at 79-94% of these
// positions, see gen_llama_quant.py's output), so the bar there is 96-97%. Limits leave room for
// other devices' summation orders.
#include <gtest/gtest.h>

#include <cmath>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

struct QuantCase {
  const char* file;
  const char* key;
  double max_rel;   // max |wick - llama.cpp| / max |llama.cpp logit|
  double min_top1;  // fraction of positions whose most likely token is the same
};

class LlamaQuant : public test::DeviceTest {};

TEST_P(LlamaQuant, LogitsMatchLlamaCppOnItsOwnQuantizedFiles) {
  const auto expected = safetensors::load(test::data_path("llama_quant/expected.safetensors"));
  const Tensor tokens = expected.at("tokens");
  const int64_t T = tokens.numel();
  for (const QuantCase& c :
       {QuantCase{"q8_0.gguf", "logits_Q8_0", 1e-2, 0.99}, QuantCase{"q4_0.gguf", "logits_Q4_0", 2e-2, 0.96},
        QuantCase{"q4_k_m.gguf", "logits_Q4_K_M", 2.5e-2, 0.96}, QuantCase{"q6_k.gguf", "logits_Q6_K", 2.5e-2, 0.97}}) {
    SCOPED_TRACE(c.file);
    models::LlamaLoadOptions o;
    o.device = dev();
    o.dtype = DType::F32;
    o.quant_activation = QuantActivation::Q8;  // ggml's CPU rounds activations to q8 blocks too
    const auto model = models::LlamaModel::load(test::data_path(std::string("llama_quant/") + c.file), o);
    const std::vector<float> got =
        model.forward(tokens.reshape({1, T})).to(Device::cpu()).to(DType::F32).to_vector<float>();
    const std::vector<float> want = expected.at(c.key).to(DType::F32).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    const auto V = int64_t(want.size()) / T;
    double scale = 0, err = 0;
    int64_t agree = 0;
    for (int64_t t = 0; t < T; ++t) {
      const float* g = got.data() + t * V;
      const float* w = want.data() + t * V;
      for (int64_t v = 0; v < V; ++v) {
        scale = std::max(scale, double(std::fabs(w[v])));
        err = std::max(err, double(std::fabs(g[v] - w[v])));
      }
      agree += std::max_element(g, g + V) - g == std::max_element(w, w + V) - w;
    }
    const double top1 = double(agree) / double(T);
    std::printf("%s on %s: max |diff| %.3g (%.3g of the logit scale %.3g), top-1 agreement %.4f\n", c.file,
                dev().str().c_str(), err, err / scale, scale, top1);
    EXPECT_LE(err / scale, c.max_rel);
    EXPECT_GE(top1, c.min_top1);
  }
}

WICK_INSTANTIATE_DEVICE_TEST(LlamaQuant);

}  // namespace
}  // namespace wick
