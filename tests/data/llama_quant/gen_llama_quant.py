#!/usr/bin/env python3
"""Fixtures for wick's quantized-GGUF test against llama.cpp itself (tests/test_llama_quant.cpp).

A small random Llama (hidden 256 so that every row fits the 256-value K-quant blocks) with a
byte-level BPE tokenizer trained here, saved as a Hugging Face folder, converted to GGUF by
llama.cpp's own convert_hf_to_gguf.py, quantized by llama.cpp's llama-quantize to Q8_0, Q4_0,
Q4_K_M and Q6_K, and run by llama.cpp (through llama-cpp-python's ctypes bindings over the
same build) on 256 positions of text: its logits at every position are the expected values.
transformers' float logits for the same tokens are stored too, to show the quantization
error that both implementations share.

Nothing of llama.cpp is committed: point the script at a build of it.
  LLAMA_CPP_DIR  llama.cpp source tree (llama-cpp-python sdist: vendor/llama.cpp) whose
                 build/bin holds llama-quantize and libllama.so (cmake -DBUILD_SHARED_LIBS=ON;
                 on this project's VM also -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON
                 -DGGML_F16C=ON: ggml's AMX matmul segfaults there)
  LLAMA_CPP_PY   the llama-cpp-python source tree (for its llama_cpp package)
Run: python3 tests/data/llama_quant/gen_llama_quant.py
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import save_file

HERE = pathlib.Path(__file__).resolve().parent
LCPP = pathlib.Path(os.environ["LLAMA_CPP_DIR"])
LCPP_PY = pathlib.Path(os.environ["LLAMA_CPP_PY"])
BIN = LCPP / "build" / "bin"
TYPES = ["Q8_0", "Q4_0", "Q4_K_M", "Q6_K"]
POSITIONS = 256

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong stepped out at 02:56 UTC.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Grüße aus München! Ça va? ¿Qué tal? Þetta er íslenska.",
    "Numbers: 3.14159, 2.71828, 1234567890, -42, 0x1F.",
    "Tokenizers split text into pieces; models predict the next piece.",
    "She said, \"It's time we'll see what they've done.\"",
] * 20


def train_tokenizer(out_dir: pathlib.Path):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    llama3_split = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                    r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(llama3_split), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                   eos_token="<|end_of_text|>")
    # Llama 3 Instruct's template (tests/data/chat_templates), so that the GGUF carries a
    # chat template and `wick chat` can run on this file.
    fast.chat_template = (HERE.parent / "chat_templates" / "llama3_instruct.jinja").read_text()
    fast.save_pretrained(out_dir)
    return fast


def make_model(out_dir: pathlib.Path, vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(21)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      bos_token_id=0, eos_token_id=1, torch_dtype="float32")
    model = LlamaForCausalLM(cfg).eval()
    # Like a trained model rather than a chaotic random one: small updates to a residual
    # stream that the embedding dominates, and a sharp LM head, so that most positions have a
    # clear top token (a random network at larger std flips its top-1 at ~10% of positions under
    # any rounding, Q8_0 included, which would test nothing).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name:
                p.normal_(0.0, 1.0)
            elif "lm_head" in name:
                p.normal_(0.0, 0.5)
            elif p.dim() == 2:
                p.normal_(0.0, 0.04)
            else:
                p.normal_(1.0, 0.1)
    model.save_pretrained(out_dir, safe_serialization=True)
    return model


def convert(hf_dir: pathlib.Path, out: pathlib.Path):
    # The tokenizer is trained here, so llama.cpp's table of known pre-tokenizer hashes cannot
    # know it: name its regex family (Llama 3's, which it uses) instead of the hash lookup.
    code = (
        "import sys, runpy; sys.path.insert(0, {lcpp!r}); sys.path.insert(0, {gguf!r});"
        "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, t: 'llama-bpe';"
        "sys.argv = ['convert_hf_to_gguf.py', {src!r}, '--outtype', 'f32', '--outfile', {dst!r}];"
        "runpy.run_path({script!r}, run_name='__main__')"
    ).format(lcpp=str(LCPP), gguf=str(LCPP / "gguf-py"), src=str(hf_dir), dst=str(out),
             script=str(LCPP / "convert_hf_to_gguf.py"))
    subprocess.run([sys.executable, "-c", code], check=True)


def llamacpp_logits(path: pathlib.Path, tokens):
    os.environ["LLAMA_CPP_LIB_PATH"] = str(BIN)
    sys.path.insert(0, str(LCPP_PY))
    import llama_cpp

    # An f32 KV cache and no flash attention (whose CPU path rounds q to f16): the remaining
    # differences from wick are the activations' q8 rounding and the summation order.
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_batch=512, n_ubatch=512, n_threads=2,
                          logits_all=True, verbose=False, flash_attn=False, type_k=0, type_v=0)
    llm.eval(tokens)
    logits = np.array(llm.scores[:len(tokens)], dtype=np.float32)
    del llm
    return logits


def main():
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "hf"
        tok = train_tokenizer(hf)
        model = make_model(hf, len(tok))
        text = " ".join(CORPUS[:40])
        tokens = tok(text)["input_ids"][:POSITIONS]
        assert len(tokens) == POSITIONS, len(tokens)
        with torch.no_grad():
            ref = model(torch.tensor([tokens])).logits[0].numpy().astype(np.float32)
        f32 = pathlib.Path(tmp) / "f32.gguf"
        convert(hf, f32)
        tensors = {"tokens": np.array(tokens, dtype=np.int64), "logits_transformers": ref.astype(np.float16)}
        for t in TYPES:
            out = HERE / f"{t.lower()}.gguf"
            subprocess.run([str(BIN / "llama-quantize"), str(f32), str(out), t], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            tensors[f"logits_{t}"] = llamacpp_logits(out, tokens)  # f32: the test compares to ~1e-3
            top = (tensors[f"logits_{t}"].argmax(-1) == ref.argmax(-1)).mean()
            print(f"{t}: {out.stat().st_size} bytes, llama.cpp top-1 == transformers at {top:.3f} of positions")
        save_file(tensors, str(HERE / "expected.safetensors"))
        (HERE / "README.md").write_text(
            "# Quantized GGUF fixtures from llama.cpp\n\nWritten by gen_llama_quant.py (see its docstring): "
            "a random 2-layer Llama, hidden 256, converted by llama.cpp's convert_hf_to_gguf.py and quantized "
            "by llama-quantize; expected.safetensors holds the tokens, llama.cpp's logits per file "
            "(f32) and transformers' float logits (f16).\n")


if __name__ == "__main__":
    main()
