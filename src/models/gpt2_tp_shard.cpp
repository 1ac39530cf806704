// One rank of a tensor-parallel GPT-2: sharded loading and the forward pass.
//
// Megatron-style: each block's first linear is split by output columns and the second by
// input rows, so the activation between them (attention heads, MLP hidden units) stays
// local and each block needs one all_reduce of its (B, T, E) output. Weights are stored
// (in, out) as stored and used through the (out, in) view linear() expects.
#include "gpt2_tp_shard.h"

#include <string>

#include "gpt2_weights.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

void check_tensor_parallel_sizes(const Gpt2Config& c, int world) {
  WICK_CHECK(world >= 1, InvalidArgument, "gpt2 tensor parallel: needs at least one device, got ", world);
  WICK_CHECK(c.n_head % world == 0, InvalidArgument, "gpt2 tensor parallel: n_head ", c.n_head,
             " is not divisible by the ", world, " devices (each device holds whole attention heads)");
  WICK_CHECK(c.inner_size() % world == 0, InvalidArgument, "gpt2 tensor parallel: MLP width ", c.inner_size(),
             " is not divisible by the ", world, " devices");
}

Gpt2Shard Gpt2Shard::load(const safetensors::File& f, const Gpt2Config& c, int rank, int world, Device device,
                          DType dtype) {
  check_tensor_parallel_sizes(c, world);
  WICK_CHECK(rank >= 0 && rank < world, InvalidArgument, "gpt2 tensor parallel: rank ", rank, " outside world size ",
             world);
  Gpt2Shard s;
  s.config = c;
  s.rank = rank;
  s.world = world;
  s.device = device;
  s.dtype = dtype;
  const int64_t E = c.n_embd, I = c.inner_size();
  const int64_t El = E / world, Il = I / world;  // this rank's attention width and MLP width
  using gpt2_weights::checked;
  // A slice of the mapped file is copied on the host (contiguous() reads only the slice),
  // converted, and only then moved to the device.
  auto upload = [&](const Tensor& slice) { return slice.contiguous().to(dtype).to(device); };
  auto whole = [&](const std::string& name, Shape shape) { return upload(checked(f, name, shape)); };
  // c_attn's output is [q | k | v], each E wide with the heads in order: this rank's heads
  // are the same El-wide window of each, packed as [q_r | k_r | v_r] for one GEMM.
  auto qkv_slice = [&](const Tensor& t, int64_t dim) {
    Shape shape = t.shape();
    shape[size_t(dim)] = 3 * El;
    Tensor out = Tensor::empty(shape, t.dtype(), Device::cpu());
    for (int64_t j = 0; j < 3; ++j) out.narrow(dim, j * El, El).copy_(t.narrow(dim, j * E + rank * El, El));
    return upload(out);
  };

  s.wte = whole("wte.weight", Shape{c.vocab_size, E});
  s.wpe = whole("wpe.weight", Shape{c.n_positions, E});
  s.ln_f_w = whole("ln_f.weight", Shape{E});
  s.ln_f_b = whole("ln_f.bias", Shape{E});
  s.lm_head = f.contains("lm_head.weight") ? whole("lm_head.weight", Shape{c.vocab_size, E}) : s.wte;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    Layer l;
    l.ln1_w = whole(p + "ln_1.weight", Shape{E});
    l.ln1_b = whole(p + "ln_1.bias", Shape{E});
    l.attn_w = qkv_slice(checked(f, p + "attn.c_attn.weight", Shape{E, 3 * E}), 1).t();
    l.attn_b = qkv_slice(checked(f, p + "attn.c_attn.bias", Shape{3 * E}), 0);
    l.attn_proj_w = upload(checked(f, p + "attn.c_proj.weight", Shape{E, E}).narrow(0, rank * El, El)).t();
    if (rank == 0) l.attn_proj_b = whole(p + "attn.c_proj.bias", Shape{E});
    l.ln2_w = whole(p + "ln_2.weight", Shape{E});
    l.ln2_b = whole(p + "ln_2.bias", Shape{E});
    l.fc_w = upload(checked(f, p + "mlp.c_fc.weight", Shape{E, I}).narrow(1, rank * Il, Il)).t();
    l.fc_b = upload(checked(f, p + "mlp.c_fc.bias", Shape{I}).narrow(0, rank * Il, Il));
    l.mlp_proj_w = upload(checked(f, p + "mlp.c_proj.weight", Shape{I, E}).narrow(0, rank * Il, Il)).t();
    if (rank == 0) l.mlp_proj_b = whole(p + "mlp.c_proj.bias", Shape{E});
    s.layers.push_back(std::move(l));
  }
  return s;
}

Gpt2Shard::KvBuffers Gpt2Shard::empty_cache(int64_t batch) const {
  const Shape shape{batch, config.n_head / world, config.n_positions, config.head_dim()};
  KvBuffers c;
  for (size_t i = 0; i < layers.size(); ++i) {
    c.k.push_back(Tensor::empty(shape, dtype, device));
    c.v.push_back(Tensor::empty(shape, dtype, device));
  }
  return c;
}

Tensor Gpt2Shard::forward(const Tensor& ids, bool last_only, const AllReduceSum& all_reduce, KvBuffers* cache,
                          int64_t past) const {
  const int64_t B = ids.dim(0), T = ids.dim(1), Dh = config.head_dim();
  const int64_t Hl = config.n_head / world, El = Hl * Dh;
  auto heads = [&](const Tensor& t) { return t.reshape({B, T, Hl, Dh}).permute({0, 2, 1, 3}); };
  AttentionOptions opt;
  opt.causal = true;  // queries aligned to the end of the keys: correct with a cache too

  Tensor x = embedding(ids.to(device), wte) + wpe.narrow(0, past, T);  // (B, T, E), the same on every rank
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    const Tensor h = layer_norm(x, l.ln1_w, l.ln1_b, config.layer_norm_epsilon);
    const Tensor qkv = linear(h, l.attn_w, l.attn_b);  // (B, T, 3 El): this rank's heads
    Tensor k = heads(qkv.narrow(2, El, El)), v = heads(qkv.narrow(2, 2 * El, El));
    if (cache) {
      // As a single-device cache: write the new positions in place, attend over all cached ones.
      cache->k[li].narrow(2, past, T).copy_(k);
      cache->v[li].narrow(2, past, T).copy_(v);
      k = cache->k[li].narrow(2, 0, past + T);
      v = cache->v[li].narrow(2, 0, past + T);
    }
    const Tensor ctx = scaled_dot_product_attention(heads(qkv.narrow(2, 0, El)), k, v, {}, opt)
                           .permute({0, 2, 1, 3})
                           .reshape({B, T, El});
    Tensor attn = linear(ctx, l.attn_proj_w, l.attn_proj_b);  // this rank's share of the projection
    all_reduce(attn);
    x = attn + x;
    const Tensor h2 = layer_norm(x, l.ln2_w, l.ln2_b, config.layer_norm_epsilon);
    Tensor mlp = linear(activate(linear(h2, l.fc_w, l.fc_b), config.activation), l.mlp_proj_w, l.mlp_proj_b);
    all_reduce(mlp);
    x = mlp + x;
  }
  if (rank != 0) return {};
  if (last_only) x = x.narrow(1, T - 1, 1);
  x = layer_norm(x, ln_f_w, ln_f_b, config.layer_norm_epsilon);
  return linear(x, lm_head);
}

}  // namespace wick::models
