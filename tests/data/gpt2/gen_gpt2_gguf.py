"""GGUF files of the GPT-2 fixtures in llama.cpp's gpt2 layout, for wick's GGUF GPT-2 test.

llama.cpp's own converter (convert_hf_to_gguf.py, conversion/gpt2.py) needs torch; this
script does what its GPT2Model class does with numpy and llama.cpp's gguf-py (PyPI gguf),
so that the names, shapes and keys come from llama.cpp's side, not wick's:
  - keys: general.architecture "gpt2", gpt2.block_count, context_length (n_positions),
    embedding_length, feed_forward_length (4 * n_embd, as the converter writes it),
    attention.head_count, attention.layer_norm_epsilon, general.file_type;
  - tensors renamed by gguf-py's TensorNameMap for MODEL_ARCH.GPT2 (the converter's
    map_tensor_name), the Conv1D matrices (c_attn, c_proj, c_fc) transposed to (out, in) as
    the converter does, attn.bias / attn.masked_bias dropped, all f32;
  - a 512-token placeholder vocabulary (tokenizer.ggml.model "gpt2"), which the tests do not
    read (they load the network alone).
Only the fixtures whose activation is the tanh GELU llama.cpp's gpt2 graph uses (tiny2l,
wide1l) get one: model.gguf beside model.safetensors. Their oracle is the same
expected.json (transformers' logits).

Usage: /usr/bin/python3 gen_gpt2_gguf.py   (needs numpy and gguf)
"""
import json
import os
import struct

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ["tiny2l", "wide1l"]
CONV1D = (".c_attn.weight", ".c_proj.weight", ".c_fc.weight")


def read_safetensors(path):
    """name -> f32 array, from the file's JSON header and data (no torch, no safetensors)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])
    return out


def convert(name):
    d = os.path.join(HERE, name)
    cfg = json.load(open(os.path.join(d, "config.json")))
    assert cfg["activation_function"] == "gelu_new", "llama.cpp's gpt2 graph computes the tanh GELU"
    n_layer, n_embd = cfg["n_layer"], cfg["n_embd"]
    w = gguf.GGUFWriter(os.path.join(d, "model.gguf"), "gpt2")
    w.add_block_count(n_layer)
    w.add_context_length(cfg["n_positions"])
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(4 * n_embd)
    w.add_head_count(cfg["n_head"])
    w.add_layer_norm_eps(cfg["layer_norm_epsilon"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"<{i}>" for i in range(cfg["vocab_size"])])
    w.add_token_types([gguf.TokenType.NORMAL] * cfg["vocab_size"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPT2, n_layer)
    for hf, t in sorted(read_safetensors(os.path.join(d, "model.safetensors")).items()):
        if hf.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        if hf.endswith(CONV1D):
            t = t.T
        new = names.get_name(hf, try_suffixes=(".weight", ".bias"))
        assert new is not None, hf
        w.add_tensor(new, np.ascontiguousarray(t, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(name, "->", os.path.join(d, "model.gguf"))


if __name__ == "__main__":
    for f in FIXTURES:
        convert(f)
