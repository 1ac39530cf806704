"""Oracle for wick's GPT-2 (transformers 4.30.2 GPT2LMHeadModel, torch 1.13).

Creates small randomly initialized GPT2LMHeadModel checkpoints, saves each with
save_pretrained(safe_serialization=True) into tests/data/gpt2/<name>/ (config.json +
model.safetensors; lm_head.weight is tied to wte and save_pretrained omits it), and writes
<name>/expected.json with f32 logits for fixed prompts and a 20-token greedy continuation
(generate, use_cache=True).

The test configs use a reduced vocabulary (512; all prompt ids < 512): with GPT-2's 50257
the embedding table alone would be 50257*n_embd*4 bytes (6+ MB per model), far over the
test-data budget. Only the tiny asset model (assets/gpt2-tiny, written with --asset) has
the real vocabulary, so that `wick generate` can use the real GPT-2 tokenizer.

The init is perturbed (weights normal std 0.2, non-zero biases and layer-norm parameters)
so that logits are spread out and greedy decoding is not degenerate; the script asserts a
minimum top-1/top-2 margin at every greedy step so f32 rounding cannot flip an argmax.

Usage: /usr/bin/python3 gen_gpt2.py            (test configs, into this folder)
       /usr/bin/python3 gen_gpt2.py --asset DIR (the fp16 tiny asset model)
"""
import json
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIGS = {
    # name: (config kwargs, seed)
    "tiny2l": (dict(n_layer=2, n_head=2, n_embd=32, n_positions=64, vocab_size=512,
                    activation_function="gelu_new", layer_norm_epsilon=1e-5), 1),
    "erf3l": (dict(n_layer=3, n_head=4, n_embd=48, n_positions=48, vocab_size=512,
                   activation_function="gelu", layer_norm_epsilon=1e-6), 2),
    "wide1l": (dict(n_layer=1, n_head=3, n_embd=96, n_positions=40, vocab_size=512,
                    activation_function="gelu_new", layer_norm_epsilon=1e-5), 3),
}
PROMPTS = [[464, 2068, 7586, 21831, 18045, 625, 262], [15496, 11, 995, 0, 314]]
PROMPTS = [[t % 512 for t in p] for p in PROMPTS]
GREEDY_NEW = 20


def perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))


def make(name, kwargs, seed, out_dir, dtype=torch.float32):
    torch.manual_seed(seed)
    cfg = GPT2Config(**kwargs)
    model = GPT2LMHeadModel(cfg).eval()
    perturb(model, seed)
    os.makedirs(out_dir, exist_ok=True)
    model.to(dtype).save_pretrained(out_dir, safe_serialization=True)
    return model.float()


def oracle(model):
    out = {"prompts": PROMPTS, "logits": []}
    with torch.no_grad():
        for p in PROMPTS:
            logits = model(torch.tensor([p])).logits[0]
            out["logits"].append([[round(float(v), 7) for v in row] for row in logits])
        ids = torch.tensor([PROMPTS[0]])
        gen = model.generate(ids, max_new_tokens=GREEDY_NEW, do_sample=False, use_cache=True,
                             pad_token_id=0, output_scores=True, return_dict_in_generate=True)
        out["greedy"] = gen.sequences[0, len(PROMPTS[0]):].tolist()
        margins = []
        for s in gen.scores:
            top = torch.topk(s[0], 2).values
            margins.append(float(top[0] - top[1]))
        out["greedy_min_margin"] = min(margins)
        assert min(margins) > 1e-3, f"greedy margin too small: {min(margins)}"
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--asset":
        kwargs = dict(n_layer=2, n_head=2, n_embd=32, n_positions=1024, vocab_size=50257,
                      activation_function="gelu_new", layer_norm_epsilon=1e-5)
        make("gpt2-tiny", kwargs, 1234, sys.argv[2], dtype=torch.float16)
        return
    for name, (kwargs, seed) in CONFIGS.items():
        d = os.path.join(HERE, name)
        model = make(name, kwargs, seed, d)
        exp = oracle(model)
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(exp, f)
        print(name, "greedy", exp["greedy"], "min margin", exp["greedy_min_margin"])


if __name__ == "__main__":
    main()
