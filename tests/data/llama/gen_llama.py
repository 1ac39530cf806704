"""Oracle for wick's Llama-family decoders (transformers + torch on the CPU, in f32).

For each fixture below: a tiny randomly initialized *ForCausalLM with a perturbed init
(larger spread than transformers' default so that greedy decoding is not degenerate),
saved with save_pretrained into tests/data/llama/<name>/ (config.json + model.safetensors,
or shards + model.safetensors.index.json), converted to <name>/model.gguf by llama.cpp's own
convert_hf_to_gguf.py, and <name>/expected.safetensors holding f32 logits at every position
of two prompts (logits0, logits1), the prompts (prompt0, prompt1) and a 32-token greedy
continuation (greedy, generate() with the KV cache) of prompt0 (phi3: prompt1; greedy_prompt
says which). The script asserts a
top-1/top-2 margin at every greedy step so that f32 rounding cannot flip an argmax.

Fixtures saved in bf16 (save dtype below) are evaluated from the bf16-rounded weights
(upcast to f32), so the oracle is exact for them too; their GGUF is written as bf16.

gptoss_mxfp4 (make_mxfp4, below the FIXTURES' code) is gpt-oss's folder as OpenAI released it,
the experts as MXFP4 blocks and scales (config.json's quantization_config); its oracle is the
model transformers itself loads (and dequantizes) from that folder, and its GGUF keeps the
experts in ggml's MXFP4 as convert_hf_to_gguf.py repacks them.

The MoE fixtures' seeds are chosen so that no token's experts are close to a tie (routing_margin:
twice the smallest change of the router logits that could change a choice, >= 0.1). For the
DeepSeek routers that is the choice their own rule makes: V2's softmax top-k, or its
group-limited greedy (groups ranked by their best expert), V3's sigmoid plus
e_score_correction_bias (groups ranked by the sum of their two best biased scores). The
DeepSeek fixtures' seeds must also keep bf16's choices and logits close (bf16_close). The
DeepSeek fixtures (deepseek2, deepseek2_group, deepseek3) are written by convert_hf_to_gguf.py
as llama.cpp's "deepseek2" architecture (kv_b_proj split into attn_k_b, transposed, and attn_v_b).

convert_hf_to_gguf.py needs a tokenizer in the folder. Each folder gets a byte-level BPE
tokenizer.json of 255 byte tokens and one merge (vocab_size 256; llama.cpp wants merges),
committed beside the weights (with tokenizer_config.json), so that wick's own converter
(test_convert_llama.cpp) reads the same folder convert_hf_to_gguf.py read. Two monkeypatches, both about the vocabulary only: every model class's
set_vocab() is the GPT-2 path (the real ones want sentencepiece files), and the
pre-tokenizer hash check (which knows only published tokenizers) answers "gpt-2". Gemma 2:
the converter drops query_pre_attn_scalar (llama.cpp derives it from the model size), so
the generator also writes gemma2.attention.scale (gemma3's too), which wick reads when present.

Usage: python3 gen_llama.py --llama-cpp DIR [--llama-cpp-build BUILD] [NAME ...]
       DIR: llama.cpp's source, e.g. from `pip download --no-binary :all: --no-deps
       llama-cpp-python`, vendor/llama.cpp. BUILD: a CPU build of it (cmake -DGGML_NATIVE=OFF,
       targets llama-quantize and llama) for the quantized fixture llama_quant: GGUFs by
       llama-quantize (Q4_K_M, Q4_0) of a 256-wide model and llama.cpp's own logits
       (llamacpp_logits.cpp, built against BUILD; one thread).
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile

import torch
import transformers
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 256
GREEDY_NEW = 32

BASE = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=64, max_position_embeddings=128, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)

GPTOSS = dict(head_dim=16, num_local_experts=8, num_experts_per_tok=2, intermediate_size=32, sliding_window=8,
              layer_types=["sliding_attention", "full_attention"], attention_bias=True, swiglu_limit=7.0,
              tie_word_embeddings=False, rope_parameters=dict(
                  rope_type="yarn", rope_theta=150000.0, factor=4.0, original_max_position_embeddings=32,
                  beta_fast=32.0, beta_slow=1.0, truncate=False))

# DeepSeek's multi-head latent attention (MLA): 4 heads of 16 + 8 (no-rope + rope) query/key dims
# and 16 value dims, through a 32-wide compressed KV latent (kv_lora_rank) and one shared 8-wide
# rope key; a dense first layer (first_k_dense_replace 1, intermediate 64) before two MoE layers
# (experts and one shared expert of moe_intermediate_size); yarn rope of factor 4 over an
# original context of 32 (prompt1 is 40) with DeepSeek's mscale / mscale_all_dim, which
# transformers folds into the softmax scale: qk_head_dim^-0.5 * (0.1 * mscale_all_dim * ln 4 + 1)^2
# (yarn's rotary attention factor, mscale(factor, mscale) / mscale(factor, mscale_all_dim), is 1
# here, as in the released models). scoring_func and topk_method are the released configs' keys:
# convert_hf_to_gguf.py reads scoring_func, transformers' V2 reads topk_method, and its classes
# imply the scoring (V2 softmax, V3 sigmoid). No MTP layers (num_nextn_predict_layers 0).
DEEPSEEK = dict(num_hidden_layers=3, num_key_value_heads=4, kv_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16, intermediate_size=64, first_k_dense_replace=1,
                n_shared_experts=1, rms_norm_eps=1e-6, tie_word_embeddings=False)
DEEPSEEK_YARN = dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=32,
                     beta_fast=32.0, beta_slow=1.0)

# name: (config class, kwargs, seed, save dtype, shard size or None)
FIXTURES = {
    # Llama 3.2 style: tied embeddings, llama3 rope scaling (all three frequency bands at head_dim 16).
    "llama3": ("LlamaConfig", dict(tie_word_embeddings=True, rope_parameters=dict(
        rope_type="llama3", rope_theta=10000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=64)), 1, torch.float32, None),
    # Llama 2 style: untied head, plain rope, saved in bf16.
    "llama2": ("LlamaConfig", dict(tie_word_embeddings=False, rope_parameters=dict(rope_type="default",
                                                                                   rope_theta=10000.0)),
               22, torch.bfloat16, None),
    # Mistral: sliding window 8 (matters from position 8 on), linear rope scaling, sharded.
    "mistral": ("MistralConfig", dict(sliding_window=8, tie_word_embeddings=False, rope_parameters=dict(
        rope_type="linear", rope_theta=10000.0, factor=2.0)), 3, torch.float32, "100KB"),
    # Qwen2: q/k/v biases, yarn rope scaling.
    "qwen2": ("Qwen2Config", dict(tie_word_embeddings=False, use_sliding_window=False, rope_parameters=dict(
        rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=32)),
              4, torch.float32, None),
    # Qwen3: per-head q/k RMSNorm, head_dim 32 != hidden / heads, tied.
    "qwen3": ("Qwen3Config", dict(head_dim=32, tie_word_embeddings=True, use_sliding_window=False,
                                  rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
              5, torch.float32, None),
    # Gemma 2: (1 + w) norms, sandwich norms, GeGLU, embeddings * sqrt(hidden), attention and
    # final softcapping, sliding window 6 on even layers, query_pre_attn_scalar 16 != head_dim 32.
    "gemma2": ("Gemma2Config", dict(head_dim=32, query_pre_attn_scalar=16, sliding_window=6,
                                    attn_logit_softcapping=5.0, final_logit_softcapping=8.0,
                                    hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                                    rope_parameters=dict(rope_type="default", rope_theta=10000.0)),
               6, torch.float32, None),
    # Gemma 3 (text): six layers, five sliding (window 6, rope base 10000) then a global one (base
    # 1e6, linear scaling 2), per-head q/k norms of (1 + w), Gemma 2's sandwich norms without its
    # softcaps, query_pre_attn_scalar 16 != head_dim 32, tied.
    "gemma3": ("Gemma3TextConfig", dict(num_hidden_layers=6, head_dim=32, query_pre_attn_scalar=16, sliding_window=6,
                                        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                                        rope_parameters=dict(
                                            sliding_attention=dict(rope_type="default", rope_theta=10000.0),
                                            full_attention=dict(rope_type="linear", factor=2.0,
                                                                rope_theta=1000000.0))),
               14, torch.float32, None),
    # Phi-3 (128k style): fused qkv_proj and gate_up_proj, partial rotary (half of each head),
    # longrope with an original context of 32: prompt0 (24) stays on the short factors,
    # prompt1 (40) and its greedy continuation use the long ones.
    "phi3": ("Phi3Config", dict(tie_word_embeddings=False, sliding_window=None, pad_token_id=0,
                                original_max_position_embeddings=32, rope_parameters=dict(
                                    rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.5,
                                    short_factor=[1.0, 1.25, 1.5, 2.0], long_factor=[1.0, 2.0, 4.0, 8.0])),
             7, torch.float32, None),
    # Mixture of experts. Mixtral: 8 experts, top 2, renormalized; its GGUF is written as llama.
    "mixtral": ("MixtralConfig", dict(num_local_experts=8, num_experts_per_tok=2, tie_word_embeddings=False,
                                      sliding_window=None, rope_parameters=dict(rope_type="default",
                                                                                rope_theta=10000.0)),
                9, torch.float32, None),
    # Qwen2-MoE: 6 experts of 32, top 2, not renormalized, q/k/v biases, a shared expert of 48
    # scaled by its sigmoid gate.
    "qwen2moe": ("Qwen2MoeConfig", dict(num_experts=6, num_experts_per_tok=2, moe_intermediate_size=32,
                                        shared_expert_intermediate_size=48, norm_topk_prob=False,
                                        use_sliding_window=False, tie_word_embeddings=False,
                                        rope_parameters=dict(rope_type="default", rope_theta=10000.0)),
                 10, torch.float32, None),
    # Qwen3-MoE: 8 experts of 32, top 3, renormalized, per-head q/k norms. (No mlp_only_layers:
    # convert_hf_to_gguf.py cannot name a dense layer's MLP in a qwen3moe file.)
    "qwen3moe": ("Qwen3MoeConfig", dict(num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                                        norm_topk_prob=True, use_sliding_window=False,
                                        tie_word_embeddings=False,
                                        rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
                 11, torch.float32, None),
    # OLMoE: 8 experts, top 2, not renormalized, q/k norms over the whole projection (4 KV
    # heads: llama.cpp's OLMoE sizes k_norm by the hidden size).
    "olmoe": ("OlmoeConfig", dict(num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, num_key_value_heads=4,
                                  tie_word_embeddings=False, pad_token_id=0,
                                  rope_parameters=dict(rope_type="default", rope_theta=10000.0)),
              13, torch.float32, None),
    # gpt-oss: attention sinks (one learned logit per head in the softmax), q/k/v/o biases, even
    # layers sliding (window 8) and odd ones full, as transformers' default layer_types and
    # llama.cpp's pattern of 2 have it, yarn rope as released (truncate false: the correction range
    # is not rounded), 8 experts of 32, top 2 by the router's logits (with a bias) then a softmax over
    # the two, gate and up interleaved in gate_up_proj, the clamped SwiGLU (limit 7; perturb draws
    # gate_up wider so that the clamps bite) with its (up + 1), expert biases.
    "gptoss": ("GptOssConfig", GPTOSS, 16, torch.float32, None),
    # DeepSeek-V2-Lite style: q_proj without a LoRA (q_lora_rank None; llama.cpp itself reads a file
    # without attention.q_lora_rank only at the Lite models' layer counts), 8 experts of 32, top 2 by
    # softmax ("greedy"; n_group 1 / topk_group 1 as V2-Lite's config), not renormalized (transformers'
    # V2 router never renormalizes), routed weights * 1.5, mscale = mscale_all_dim = 0.707 as released.
    "deepseek2": ("DeepseekV2Config", dict(DEEPSEEK, q_lora_rank=None, n_routed_experts=8, num_experts_per_tok=2,
                                           moe_intermediate_size=32, topk_method="greedy", n_group=1, topk_group=1,
                                           scoring_func="softmax", norm_topk_prob=False, routed_scaling_factor=1.5,
                                           rope_parameters=dict(DEEPSEEK_YARN, mscale=0.707, mscale_all_dim=0.707)),
                  22, torch.float32, None),
    # DeepSeek-V2 (full) style: q through a LoRA (q_a_proj, q_a_layernorm, q_b_proj; rank 24), 8
    # experts of 32 in 4 groups of 2, "group_limited_greedy": the 2 groups with the best single
    # softmax score, then the top 3 experts in them, not renormalized, * 2.0. (llama.cpp ranks
    # groups by the sum of their two best scores, as V3 does; here both choose the same groups.)
    "deepseek2_group": ("DeepseekV2Config", dict(DEEPSEEK, q_lora_rank=24, n_routed_experts=8, num_experts_per_tok=3,
                                                 moe_intermediate_size=32, topk_method="group_limited_greedy",
                                                 n_group=4, topk_group=2, scoring_func="softmax", norm_topk_prob=False,
                                                 routed_scaling_factor=2.0, rope_parameters=dict(
                                                     DEEPSEEK_YARN, mscale=0.707, mscale_all_dim=0.707)),
                        26, torch.float32, None),
    # DeepSeek-V3 style: q LoRA of 24, 16 experts of 16 in 4 groups of 4, sigmoid scores plus
    # e_score_correction_bias (perturb draws it, randn) for the choice only: the 2 groups whose
    # two best biased scores sum highest, then the top 4 biased scores in them, weighted by their
    # unbiased sigmoids renormalized (norm_topk_prob) and * 2.5; interleaved rope (rope_interleave),
    # mscale = mscale_all_dim = 1 as released.
    "deepseek3": ("DeepseekV3Config", dict(DEEPSEEK, q_lora_rank=24, n_routed_experts=16, num_experts_per_tok=4,
                                           moe_intermediate_size=16, n_group=4, topk_group=2, scoring_func="sigmoid",
                                           topk_method="noaux_tc", norm_topk_prob=True, routed_scaling_factor=2.5,
                                           num_mtp_layers=0, rope_interleave=True,
                                           rope_parameters=dict(DEEPSEEK_YARN, mscale=1.0, mscale_all_dim=1.0)),
                  20, torch.float32, None),
}

PROMPTS = [[(37 * i + 11) % VOCAB for i in range(24)], [(53 * i + 5) % VOCAB for i in range(40)]]


def perturb(model, seed, std=0.15):
    g = torch.Generator().manual_seed(seed)
    gemma = "Gemma" in type(model).__name__
    gptoss = "GptOss" in type(model).__name__
    with torch.no_grad():
        for name, p in model.named_parameters():
            if gptoss and name.endswith(".self_attn.sinks"):  # comparable to the attention logits
                p.copy_(torch.randn(p.shape, generator=g))
            elif gptoss and name.endswith(".mlp.router.bias"):  # large enough to change choices
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif gptoss and name.endswith(".mlp.experts.gate_up_proj"):  # some values past the clamps (7)
                p.copy_(0.4 * torch.randn(p.shape, generator=g))
            elif gptoss and name.endswith("_proj_bias"):  # the experts' biases
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "norm" in name:  # Gemma's norms are (1 + w): perturb around 0
                p.copy_((0.0 if gemma else 1.0) + 0.2 * torch.randn(p.shape, generator=g))
            elif gemma and "embed_tokens" in name:  # scaled by sqrt(64) = 8 on the way in
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif name.endswith((".mlp.gate.weight", ".block_sparse_moe.gate.weight", ".mlp.router.weight")):
                # MoE routers: a wide spread of scores, so that no token's choice of experts is
                # close enough for bf16 rounding (the bf16 test) to flip it.
                p.copy_(1.5 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))
        for name, b in model.named_buffers():
            if name.endswith(".mlp.gate.e_score_correction_bias"):  # DeepSeek-V3: sways the choice
                b.copy_(torch.randn(b.shape, generator=g))


def write_tokenizer(d):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    # GPT-2's byte-to-unicode order, so ids are the bytes' values.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + list(
        range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    vocab = {chr(c): b for b, c in zip(bs, cs)}
    # llama.cpp refuses a BPE vocabulary without merges: id 255 (byte 0xff) becomes "Ġt".
    del vocab["\u00ff"]
    vocab["\u0120t"] = 255
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("\u0120", "t")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128}, f)


def gguf_normal(base):
    return base.gguf.TokenType.NORMAL


def convert(src, out, outtype, llama_cpp):
    """Runs llama.cpp's convert_hf_to_gguf.py in this process, with the vocabulary patches."""
    if llama_cpp not in sys.path:
        sys.path.insert(0, llama_cpp)
    import convert_hf_to_gguf as conv
    import conversion
    from conversion import base
    # the model classes register on import
    for module in ("llama", "qwen", "gemma", "phi", "olmo", "gpt_oss", "deepseek"):
        __import__(f"conversion.{module}")
    tokens = [t for t, _ in sorted(json.load(open(os.path.join(src, "tokenizer.json")))["model"]["vocab"].items(),
                                   key=lambda kv: kv[1])]
    base.TextModel.get_vocab_base = lambda self: (tokens, [gguf_normal(base)] * len(tokens), "gpt-2")
    for cls in base.ModelBase._model_classes[base.ModelType.TEXT].values():
        cls.set_vocab = lambda self: self._set_vocab_gpt2()
    for gemma in (conversion.gemma.Gemma2Model, conversion.gemma.Gemma3Model):
        if not getattr(gemma, "_wick_scale", False):
            def with_scale(self, orig=gemma.set_gguf_parameters):
                orig(self)
                self.gguf_writer.add_attention_scale(self.hparams["query_pre_attn_scalar"] ** -0.5)

            gemma.set_gguf_parameters = with_scale
            gemma._wick_scale = True
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", src, "--outfile", out, "--outtype", outtype]
    try:
        conv.main()
    finally:
        sys.argv = argv


def top2_sum(x):
    return x.topk(2, dim=-1).values.sum(-1)


def largest_delta(f, n):
    """Per row, the largest delta in [0, 64] with f(delta) > 0 (f decreasing), by bisection."""
    lo, hi = torch.zeros(n, dtype=torch.float64), torch.full((n,), 64.0, dtype=torch.float64)
    for _ in range(60):
        mid = (lo + hi) / 2
        ok = f(mid) > 0
        lo, hi = torch.where(ok, mid, lo), torch.where(ok, hi, mid)
    return lo


def deepseek_v3_choice(logits, bias, n_group, topk_group, k):
    """DeepseekV3TopkRouter's choice, as masks: the experts (tokens x experts), the groups
    (tokens x groups) and the experts of the chosen groups."""
    t, e = logits.shape
    c = (logits.sigmoid() + bias).view(t, n_group, e // n_group)
    groups = torch.zeros(t, n_group, dtype=torch.bool).scatter_(1, top2_sum(c).topk(topk_group, dim=-1).indices, True)
    allowed = groups[:, :, None].expand(c.shape).reshape(t, e)
    top = c.reshape(t, e).masked_fill(~allowed, float("-inf")).topk(k, dim=-1).indices
    return torch.zeros(t, e, dtype=torch.bool).scatter_(1, top, True), groups, allowed


def router_margin(mod, logits, k):
    """For one router call (logits: tokens x experts): twice the smallest change delta of the
    router logits (each moved by at most delta, the worst way) that changes a token's experts,
    and the experts chosen. For a softmax top-k that is the gap between the k-th and (k+1)-th
    logit. DeepSeek-V2's group_limited_greedy first keeps the topk_group groups with the best
    logit; DeepSeek-V3 ranks sigmoid(logit) + e_score_correction_bias, groups by the sum of
    their two best, and its margin (the sigmoid is not linear) is found by bisection."""
    t, e = logits.shape
    if hasattr(mod, "e_score_correction_bias"):  # DeepSeek-V3
        n_group, topk_group = mod.num_group, mod.topk_group
        l, b = logits.double(), mod.e_score_correction_bias.double()
        chosen, groups, allowed = deepseek_v3_choice(l, b, n_group, topk_group, k)
        deltas = []
        if topk_group < n_group:  # a chosen group (rows ti, gi) against one left out (go)
            ti, gi, go = torch.nonzero(groups[:, :, None] & ~groups[:, None, :], as_tuple=True)
            lg, bg = l.view(t, n_group, -1), b.view(n_group, -1)
            deltas.append(largest_delta(lambda d: top2_sum((lg[ti, gi] - d[:, None]).sigmoid() + bg[gi]) -
                                        top2_sum((lg[ti, go] + d[:, None]).sigmoid() + bg[go]), len(ti)).min())
        ti, ei, eo = torch.nonzero(chosen[:, :, None] & (allowed & ~chosen)[:, None, :], as_tuple=True)
        deltas.append(largest_delta(lambda d: ((l[ti, ei] - d).sigmoid() + b[ei]) - ((l[ti, eo] + d).sigmoid() + b[eo]),
                                    len(ti)).min())
        return 2 * float(min(deltas)), chosen.nonzero()[:, 1].view(t, k)
    gaps = []
    if getattr(mod, "topk_method", None) == "group_limited_greedy":  # DeepSeek-V2
        n_group, topk_group = mod.num_group, mod.topk_group
        best = logits.view(t, n_group, -1).max(-1).values
        top = best.topk(topk_group + 1, dim=-1)
        gaps.append(float((top.values[:, topk_group - 1] - top.values[:, topk_group]).min()))
        groups = torch.zeros(t, n_group, dtype=torch.bool).scatter_(1, top.indices[:, :topk_group], True)
        logits = logits.masked_fill(~groups[:, :, None].expand(t, n_group, e // n_group).reshape(t, e), float("-inf"))
    top = torch.topk(logits, k + 1, dim=-1)
    gaps.append(float((top.values[:, k - 1] - top.values[:, k]).min()))
    return min(gaps), top.indices[:, :k]


def routing_margin(model, k):
    """The smallest router_margin over every token and MoE layer of both prompts: bf16 rounding
    must not change any token's experts. DeepSeek's routers (which return the logits, the
    weights and the chosen experts) are checked to choose as router_margin says."""
    gaps, hooks = [], []
    for name, m in model.named_modules():
        if name.endswith((".mlp.gate", ".block_sparse_moe.gate", ".mlp.router")):  # gpt-oss: with a bias
            def hook(mod, inp, out):
                logits = (out[0] if isinstance(out, tuple) else out).reshape(-1, mod.weight.shape[0]).float()
                gap, chosen = router_margin(mod, logits, k)
                if hasattr(mod, "topk_method") or hasattr(mod, "e_score_correction_bias"):
                    assert torch.equal(chosen.sort(-1).values, out[2].sort(-1).values), "routing rule"
                gaps.append(gap)
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        for p in PROMPTS:
            model(torch.tensor([p]))
    for h in hooks:
        h.remove()
    return min(gaps)


def oracle(model, greedy_prompt):
    out = {}
    with torch.no_grad():
        for i, p in enumerate(PROMPTS):
            out[f"prompt{i}"] = torch.tensor(p, dtype=torch.int64)
            out[f"logits{i}"] = model(torch.tensor([p])).logits[0].float().contiguous()
        prompt = PROMPTS[greedy_prompt]
        out["greedy_prompt"] = torch.tensor([greedy_prompt], dtype=torch.int64)
        gen = model.generate(torch.tensor([prompt]), max_new_tokens=GREEDY_NEW, do_sample=False, use_cache=True,
                             pad_token_id=0, eos_token_id=None, output_scores=True, return_dict_in_generate=True)
        out["greedy"] = gen.sequences[0, len(prompt):].clone()
        margins = [float(torch.topk(s[0], 2).values[0] - torch.topk(s[0], 2).values[1]) for s in gen.scores]
    assert len(out["greedy"]) == GREEDY_NEW
    return out, min(margins)


# Fixtures whose seed must also keep bf16 close (bf16_close): the routing margin alone does not
# ensure it, as bf16's rounding moves these models' router logits by up to about 0.5, and their
# softmax-weighted experts (weights from logits some 10 apart) amplify what it does not flip.
BF16_ROUTED = ("deepseek2", "deepseek2_group", "deepseek3")


def bf16_close(model):
    """Whether, with the weights rounded to bf16 (computing in f32) and with the whole model in
    bf16, DeepSeek's routers (which return the chosen experts third) choose the same experts for
    every token of both prompts and the logits stay within 0.1 of the f32 ones (relative to the
    prompt's largest |logit|, as test_llama.cpp measures; its bf16 limit is 0.15)."""
    def run(m):
        chosen, logits = [], []
        hooks = [mod.register_forward_hook(lambda mod, inp, o: chosen.append(o[2].sort(-1).values))
                 for name, mod in m.named_modules() if name.endswith(".mlp.gate")]
        with torch.no_grad():
            for p in PROMPTS:
                logits.append(m(torch.tensor([p])).logits[0].float())
        for h in hooks:
            h.remove()
        return chosen, logits
    ref_chosen, ref_logits = run(model)
    rounded = copy.deepcopy(model)
    rounded.load_state_dict({key: v.to(torch.bfloat16).float() for key, v in model.state_dict().items()})
    for m in (rounded, copy.deepcopy(model).to(torch.bfloat16)):
        chosen, logits = run(m)
        if not all(torch.equal(a, b) for a, b in zip(ref_chosen, chosen)):
            return False
        if any(float((a - b).abs().max() / b.abs().max()) > 0.1 for a, b in zip(logits, ref_logits)):
            return False
    return True


def make(name, spec, llama_cpp):
    cls_name, kwargs, seed, save_dtype, shard = spec
    cfg = getattr(transformers, cls_name)(**{**BASE, **kwargs})
    k = getattr(cfg, "num_experts_per_tok", None)
    # MoE fixtures: the first of seed, seed + 1000, ... whose routers choose every token's
    # experts by a margin of at least 0.1 in logits, so that bf16 rounding cannot flip a choice
    # (BF16_ROUTED: and that bf16 does not, bf16_close).
    for attempt in range(300):
        torch.manual_seed(seed + 1000 * attempt)
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
        perturb(model, seed + 1000 * attempt)
        # Round the weights through the saved dtype, so the oracle sees exactly the stored ones,
        # into a fresh f32 model: .to(bf16) would round the rotary inv_freq buffers as well.
        rounded = {key: v.to(save_dtype).float() for key, v in model.state_dict().items()}
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
        model.load_state_dict(rounded)
        if not k:
            break
        routing = routing_margin(model, k)
        if routing >= 0.1 and (name not in BF16_ROUTED or bf16_close(model)):
            print(name, "seed", seed + 1000 * attempt, "min routing margin", round(routing, 4))
            break
    else:
        raise AssertionError(f"{name}: no seed gives a routing margin of 0.1")
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy.deepcopy(model).to(save_dtype).save_pretrained(tmp, max_shard_size=shard or "50GB")
        os.makedirs(d)
        for f in os.listdir(tmp):
            if f.endswith(".safetensors") or f in ("config.json", "model.safetensors.index.json"):
                shutil.copy(os.path.join(tmp, f), d)
        write_tokenizer(tmp)
        write_tokenizer(d)
        convert(tmp, os.path.join(d, "model.gguf"), "bf16" if save_dtype == torch.bfloat16 else "f32", llama_cpp)
        if name == "llama3":  # a block-quantized GGUF of the same weights (llama.cpp's own q8_0 writer)
            convert(tmp, os.path.join(d, "model-q8_0.gguf"), "q8_0", llama_cpp)
    # Phi-3's generate() recomputes the whole cache with the long factors when a sequence
    # first passes original_max_position_embeddings (Phi3ForCausalLM.prepare_inputs_for_
    # generation); wick's static decode step keeps the cached keys, as transformers' forward
    # with a cache does. Its greedy run starts past that point (prompt1, 40 > 32), where both agree.
    exp, margin = oracle(model, 1 if name == "phi3" else 0)
    assert margin > 1e-3, f"{name}: greedy margin too small: {margin}"
    save_file(exp, os.path.join(d, "expected.safetensors"))
    print(name, "greedy", exp["greedy"].tolist(), "min margin", round(margin, 4))


# The block-quantized fixture: rows of 256 (the K types' block) need a wider model, so only
# llama-quantize's GGUFs of it are kept, with, for prompt0: llama.cpp's own CPU logits
# (logits_<type>; llama.cpp rounds activations to q8 blocks and keeps an f16 KV cache, about
# 1.5e-2 from exact arithmetic here), transformers' logits of each GGUF's weights
# dequantized by gguf-py and un-permuted (logits_deq_<type>: the exact oracle), and of the
# f32 weights before quantization (logits_hf).
QUANT_NAME = "llama_quant"
QUANT_TYPES = ["Q4_K_M", "Q4_0"]  # Q4_K_M mixes q4_K and q6_K tensors


def dequantized_logits(path, cfg, llama_cpp):
    """transformers' logits for prompt0 with the weights of a (llama-arch) GGUF, dequantized
    by gguf-py and with convert_hf_to_gguf.py's q/k row permutation undone."""
    import numpy as np
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    import gguf
    from gguf.quants import dequantize
    parts = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    state = {}
    for t in gguf.GGUFReader(path).tensors:
        w = np.array(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape([int(x) for x in reversed(t.shape)])
        if t.name == "token_embd.weight":
            state["model.embed_tokens.weight"] = torch.from_numpy(w)
            continue
        if t.name == "output_norm.weight":
            state["model.norm.weight"] = torch.from_numpy(w)
            continue
        _, layer, part, _ = t.name.split(".")
        if part in heads:  # the inverse of LlamaModel.permute
            n = heads[part]
            w = w.reshape(n, w.shape[0] // n // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        state[f"model.layers.{layer}.{parts[part]}.weight"] = torch.from_numpy(np.ascontiguousarray(w))
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    model.load_state_dict(state, strict=False)  # lm_head is tied to the embedding
    with torch.no_grad():
        return model(torch.tensor([PROMPTS[0]])).logits[0].float().contiguous()


def make_quant(llama_cpp, build):
    import subprocess
    import numpy as np
    torch.manual_seed(8)
    cfg = transformers.LlamaConfig(**{**BASE, "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 1,
                                      "tie_word_embeddings": True,
                                      "rope_parameters": dict(rope_type="default", rope_theta=10000.0)})
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    perturb(model, 8, std=0.03)
    d = os.path.join(HERE, QUANT_NAME)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    exp = {"prompt0": torch.tensor(PROMPTS[0], dtype=torch.int64)}
    with torch.no_grad():
        exp["logits_hf"] = model(torch.tensor([PROMPTS[0]])).logits[0].float().contiguous()
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        write_tokenizer(tmp)
        f32 = os.path.join(tmp, "f32.gguf")
        convert(tmp, f32, "f32", llama_cpp)
        tool = os.path.join(tmp, "llamacpp_logits")
        lib = os.path.join(build, "bin")
        subprocess.check_call(["c++", "-O2", "-std=c++17", os.path.join(HERE, "llamacpp_logits.cpp"),
                               "-I" + os.path.join(llama_cpp, "include"),
                               "-I" + os.path.join(llama_cpp, "ggml", "include"), "-L" + lib,
                               "-Wl,-rpath," + lib, "-lllama", "-lggml", "-lggml-base", "-o", tool])
        for q in QUANT_TYPES:
            out = os.path.join(d, f"model-{q}.gguf")
            subprocess.check_call([os.path.join(lib, "llama-quantize"), f32, out, q], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            raw = subprocess.check_output([tool, out] + [str(t) for t in PROMPTS[0]], stderr=subprocess.DEVNULL)
            exp[f"logits_{q}"] = torch.from_numpy(np.frombuffer(raw, dtype=np.float32).reshape(len(PROMPTS[0]), VOCAB).copy())
            exp[f"logits_deq_{q}"] = dequantized_logits(out, cfg, llama_cpp)
            rel = lambda a, b: float((a - b).abs().max() / b.abs().max())
            print(QUANT_NAME, q, "llama.cpp vs transformers: f32 weights", rel(exp[f"logits_{q}"], exp["logits_hf"]),
                  "dequantized weights", rel(exp[f"logits_{q}"], exp[f"logits_deq_{q}"]))
    save_file(exp, os.path.join(d, "expected.safetensors"))


# The quantized MoE fixture: a 256-wide Qwen3-MoE layer (4 experts of 256, top 2, per-head
# q/k norms) so that every matrix takes the K types' 256-value blocks; llama-quantize's Q4_K_M
# and Q8_0 of it (experts packed as ffn_*_exps), llama.cpp's own CPU logits of prompt0 for
# each, and transformers' logits on each file's weights dequantized by gguf-py (the exact
# oracle). The seed search keeps every routing margin >= 0.1 on the dequantized weights of
# both files too, so no rounding can change a token's experts.
MOE_QUANT_NAME = "moe_quant"
MOE_QUANT_TYPES = ["Q4_K_M", "Q8_0"]


def moe_dequantized_state(path, cfg, llama_cpp):
    """The HF state dict (transformers 5's fused expert layout) of a qwen3moe GGUF's weights,
    dequantized by gguf-py (qwen3moe q/k rows are not permuted)."""
    import numpy as np
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    import gguf
    from gguf.quants import dequantize
    parts = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
             "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm", "ffn_gate_inp": "mlp.gate"}
    state, experts = {}, {}
    for t in gguf.GGUFReader(path).tensors:
        w = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
            [int(x) for x in reversed(t.shape)]).copy())
        if t.name == "token_embd.weight":
            state["model.embed_tokens.weight"] = w
        elif t.name == "output_norm.weight":
            state["model.norm.weight"] = w
        elif t.name == "output.weight":
            state["lm_head.weight"] = w
        else:
            _, layer, part, _ = t.name.split(".")
            if part.endswith("_exps"):
                experts[(layer, part)] = w
            else:
                state[f"model.layers.{layer}.{parts[part]}.weight"] = w
    for layer in {l for l, _ in experts}:
        state[f"model.layers.{layer}.mlp.experts.gate_up_proj"] = torch.cat(
            [experts[(layer, "ffn_gate_exps")], experts[(layer, "ffn_up_exps")]], dim=1)
        state[f"model.layers.{layer}.mlp.experts.down_proj"] = experts[(layer, "ffn_down_exps")]
    return state


def make_moe_quant(llama_cpp, build, quantize_bin):
    import subprocess
    import numpy as np
    cfg = transformers.Qwen3MoeConfig(**{**BASE, "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 1,
                                         "head_dim": 64, "num_experts": 4, "num_experts_per_tok": 2,
                                         "moe_intermediate_size": 256, "norm_topk_prob": True,
                                         "tie_word_embeddings": False, "use_sliding_window": False,
                                         "rope_parameters": dict(rope_type="default", rope_theta=10000.0)})
    d = os.path.join(HERE, MOE_QUANT_NAME)
    lib = os.path.join(build, "bin")
    with tempfile.TemporaryDirectory() as tmp:
        tool = os.path.join(tmp, "llamacpp_logits")
        subprocess.check_call(["c++", "-O2", "-std=c++17", os.path.join(HERE, "llamacpp_logits.cpp"),
                               "-I" + os.path.join(llama_cpp, "include"),
                               "-I" + os.path.join(llama_cpp, "ggml", "include"), "-L" + lib,
                               "-Wl,-rpath," + lib, "-lllama", "-lggml", "-lggml-base", "-o", tool])
        for attempt in range(100):
            seed = 15 + 1000 * attempt
            torch.manual_seed(seed)
            model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
            perturb(model, seed, std=0.03)
            with torch.no_grad():  # routers drawn wide (as perturb does for the small fixtures)
                for name, p in model.named_parameters():
                    if name.endswith(".mlp.gate.weight"):
                        p.copy_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(seed)))
            folder = os.path.join(tmp, f"hf{attempt}")
            model.save_pretrained(folder)
            write_tokenizer(folder)
            f32 = os.path.join(tmp, f"f32-{attempt}.gguf")
            convert(folder, f32, "f32", llama_cpp)
            files, margins = {}, []
            for q in MOE_QUANT_TYPES:
                out = os.path.join(tmp, f"model-{q}-{attempt}.gguf")
                subprocess.check_call([quantize_bin, f32, out, q], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                deq = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
                deq.load_state_dict(moe_dequantized_state(out, cfg, llama_cpp))
                margins.append(routing_margin(deq, cfg.num_experts_per_tok))
                files[q] = (out, deq)
            margins.append(routing_margin(model, cfg.num_experts_per_tok))
            if min(margins) >= 0.1:
                break
        else:
            raise AssertionError("moe_quant: no seed gives a routing margin of 0.1")
        print(MOE_QUANT_NAME, "seed", seed, "min routing margin", round(min(margins), 4))
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        exp = {"prompt0": torch.tensor(PROMPTS[0], dtype=torch.int64)}
        with torch.no_grad():
            exp["logits_hf"] = model(torch.tensor([PROMPTS[0]])).logits[0].float().contiguous()
        for q, (out, deq) in files.items():
            shutil.copy(out, os.path.join(d, f"model-{q}.gguf"))
            raw = subprocess.check_output([tool, out] + [str(t) for t in PROMPTS[0]], stderr=subprocess.DEVNULL)
            exp[f"logits_{q}"] = torch.from_numpy(
                np.frombuffer(raw, dtype=np.float32).reshape(len(PROMPTS[0]), VOCAB).copy())
            with torch.no_grad():
                exp[f"logits_deq_{q}"] = deq(torch.tensor([PROMPTS[0]])).logits[0].float().contiguous()
            rel = lambda a, b: float((a - b).abs().max() / b.abs().max())
            top1 = float((exp[f"logits_{q}"].argmax(-1) == exp[f"logits_deq_{q}"].argmax(-1)).float().mean())
            print(MOE_QUANT_NAME, q, "llama.cpp vs dequantized transformers", rel(exp[f"logits_{q}"],
                  exp[f"logits_deq_{q}"]), "top-1 agreement", top1)
    save_file(exp, os.path.join(d, "expected.safetensors"))


# gpt-oss as OpenAI released it: the experts in MXFP4 (config.json's quantization_config
# {"quant_method": "mxfp4"}), as <proj>_blocks (u8, experts x outputs x inputs / 32 x 16: 32
# e2m1 codes of consecutive inputs a block, value 2j in byte j's low nibble, 2j + 1 in its high
# one) and <proj>_scales (u8 e8m0, experts x outputs x inputs / 32: 2^(scale - 127)), their biases
# and everything else dense. The fixture's own experts quantized (the scale and rounding of
# gguf-py's MXFP4: floor(log2(max |v|)) - 2, nearest code); expected.safetensors comes from the
# model transformers loads from that folder (Mxfp4Config(dequantize=True): the dequantizing
# path, with no kernels from the hub), the routing margin on those weights; model.gguf by
# convert_hf_to_gguf.py, which repacks the blocks into ggml's MXFP4 (type 39), asserted to
# dequantize (gguf-py) to the same experts. 8 experts of 64: two blocks a row in both matrices.
MXFP4_NAME = "gptoss_mxfp4"
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_pack(w):
    """gpt-oss's MXFP4 blocks and scales of dense experts w (experts x inputs x outputs, as
    GptOssExperts holds them)."""
    e, n_in, n_out = w.shape
    v = w.transpose(1, 2).reshape(e, n_out, n_in // 32, 32).double()
    amax = v.abs().amax(-1)
    exp = torch.where(amax > 0, torch.floor(torch.log2(amax.clamp(min=1e-30))) - 2 + 127, torch.zeros_like(amax))
    scale = torch.exp2(exp - 127).unsqueeze(-1)
    codes = (scale.unsqueeze(-1) * torch.tensor(E2M1, dtype=torch.float64) - v.unsqueeze(-1)).abs().argmin(-1)
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)
    return blocks.contiguous(), exp.to(torch.uint8).contiguous()


def make_mxfp4(llama_cpp):
    import numpy as np
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    cfg = transformers.GptOssConfig(**{**BASE, **GPTOSS, "intermediate_size": 64})
    experts = ("gate_up_proj", "down_proj")
    for attempt in range(100):
        seed = 17 + 1000 * attempt
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
        perturb(model, seed)
        state = {key: v.clone() for key, v in model.state_dict().items()}
        packed = {}
        for key in [key for key in state if key.endswith(experts)]:
            packed[key + "_blocks"], packed[key + "_scales"] = mxfp4_pack(state[key])
            # transformers' own dequantization of the packed layout
            state[key] = convert_moe_packed_tensors(packed[key + "_blocks"], packed[key + "_scales"],
                                                    dtype=torch.float32)
        model.load_state_dict(state)
        routing = routing_margin(model, cfg.num_experts_per_tok)
        if routing >= 0.1:
            print(MXFP4_NAME, "seed", seed, "min routing margin", round(routing, 4))
            break
    else:
        raise AssertionError(f"{MXFP4_NAME}: no seed gives a routing margin of 0.1")
    d = os.path.join(HERE, MXFP4_NAME)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        config = json.load(open(os.path.join(tmp, "config.json")))
        config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [  # as released
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        tensors = {key: v for key, v in state.items() if not key.endswith(experts)}
        save_file({**tensors, **packed}, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        write_tokenizer(d)
        loaded = transformers.AutoModelForCausalLM.from_pretrained(
            d, quantization_config=transformers.Mxfp4Config(dequantize=True), dtype=torch.float32,
            attn_implementation="eager").eval()
        for key, v in loaded.state_dict().items():
            assert torch.equal(v, state[key]), key
        convert(d, os.path.join(d, "model.gguf"), "f32", llama_cpp)
    # The GGUF's experts (gate and up split from the interleaved gate_up_proj) dequantized by gguf-py
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    import gguf
    from gguf.quants import dequantize
    for t in gguf.GGUFReader(os.path.join(d, "model.gguf")).tensors:
        if t.name.endswith("_exps.weight"):
            assert t.tensor_type == gguf.GGMLQuantizationType.MXFP4, t.name
            w = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
                [int(x) for x in reversed(t.shape)]).copy())
            layer, part = t.name.split(".")[1:3]
            proj = "down_proj" if part == "ffn_down_exps" else "gate_up_proj"
            dense = state[f"model.layers.{layer}.mlp.experts.{proj}"]
            dense = {"ffn_gate_exps": dense[..., 0::2], "ffn_up_exps": dense[..., 1::2]}.get(part, dense)
            assert torch.equal(w, dense.transpose(1, 2)), t.name
    exp, margin = oracle(loaded, 0)
    assert margin > 1e-3, f"{MXFP4_NAME}: greedy margin too small: {margin}"
    save_file(exp, os.path.join(d, "expected.safetensors"))
    print(MXFP4_NAME, "greedy", exp["greedy"].tolist(), "min margin", round(margin, 4))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source folder (has convert_hf_to_gguf.py)")
    ap.add_argument("--llama-cpp-build", help="a CPU build of it (bin/llama-quantize, libllama): writes " + QUANT_NAME)
    ap.add_argument("--llama-quantize", help="llama-quantize to use instead of the build's (moe_quant)")
    ap.add_argument("names", nargs="*", default=list(FIXTURES) + [MXFP4_NAME])
    args = ap.parse_args()
    for name in args.names:
        if name == MXFP4_NAME:
            make_mxfp4(os.path.abspath(args.llama_cpp))
        elif name not in (QUANT_NAME, MOE_QUANT_NAME):
            make(name, FIXTURES[name], os.path.abspath(args.llama_cpp))
    if args.llama_cpp_build and (QUANT_NAME in args.names or not args.names):
        make_quant(os.path.abspath(args.llama_cpp), os.path.abspath(args.llama_cpp_build))
    if args.llama_cpp_build and (MOE_QUANT_NAME in args.names or not args.names):
        quantize_bin = args.llama_quantize or os.path.join(os.path.abspath(args.llama_cpp_build), "bin", "llama-quantize")
        make_moe_quant(os.path.abspath(args.llama_cpp), os.path.abspath(args.llama_cpp_build), quantize_bin)


if __name__ == "__main__":
    main()
