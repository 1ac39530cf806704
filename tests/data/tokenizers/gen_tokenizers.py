#!/usr/bin/env python3
"""Writes the tokenizer oracle fixtures under tests/data/tokenizers/ (this script is their source).

    python3 tests/data/tokenizers/gen_tokenizers.py     (from the repository root)

Needs `tokenizers`, `sentencepiece`, `transformers` (its slow->fast converter), `gguf` and
`protobuf`. For each family it trains a small tokenizer (vocab ~ 500-1500) whose tokenizer.json
mimics the family's real one, then records what Hugging Face `tokenizers` (the oracle) makes of
every corpus text:

  corpus.json                 the texts (>= 300)
  <name>/tokenizer.json       (+ tokenizer_config.json) the tokenizer
  <name>/expected.json        per text: ids (add_special true), ids_plain (add_special false),
                              ids_nospecial (special tokens in the text not parsed),
                              decode (of ids), decode_skip (skip_special_tokens)
  gguf/<name>.gguf            the same vocabulary as llama.cpp's convert_hf_to_gguf.py writes it
  gguf/spm.expected.json      sentencepiece's own ids for the SentencePiece (`llama`) GGUF

The HF WordPiece and Unigram trainers are not bit-reproducible (ties broken in hash order),
and spm_bpe.model records the temporary training path: a rerun may rewrite those files with
equally valid ones; the tests read whatever was committed together.
"""
import json
import os
import shutil
import sys
import tempfile
import unicodedata

import numpy as np
import sentencepiece as spm
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import gen_tokenizer_corpus  # noqa: E402  (the GPT-2 corpus: 225 texts)

# The split regexes of the real tokenizer.json files (and llama-vocab.cpp's tables).
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
             r"|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
            r"|\s+(?!\S)|\s+")


def extra_texts():
    t = [
        "<|eot_id|>", "<|begin_of_text|>Hello", "a<|eot_id|>b", "<s>", "</s>", "< s >", "<s>Hello</s>",
        "<|im_start|", "<|im_start|>user\nHi<|im_end|>\n", "<|im_start|>assistant\n", "<|endoftext|>",
        "text<|endoftext|>more", "<|endoftext|><|endoftext|>", "<|end_of_text|> <|eot_id|>", "<bos>",
        "<start_of_turn>user\nhello<end_of_turn>\n", "<end_of_turn>", "<|end|>", "<|eom_id|>", "<<|eot_id|>>",
        "< |eot_id| >", "<|eot_id", "eot_id|>", "[INST] hi [/INST]", "<unk>", "<pad>", "<0x41>", "<0xFF>",
        " <|eot_id|> ", "  <s>  ", "\n<|im_end|>\n",
        "caf\u00e9", "cafe\u0301", "\u00c5ngstr\u00f6m", "A\u030angstro\u0308m", "\u1e9b\u0323", "\ufb01nance",
        "\u2460\u2461\u2462", "\u33a1", "\uff28\uff45\uff4c\uff4c\uff4f", "\u212b", "\u0041\u030a", "e\u0301\u0302\u0303",
        "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family", "\U0001F1EB\U0001F1F7\U0001F1EF\U0001F1F5",
        "\U0001F44D\U0001F3FD thumbs", "\u2764\ufe0f love", "\U0001F3F3\ufe0f\u200d\U0001F308",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!", "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
        "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c", "\uc548\ub155\ud558\uc138\uc694",
        "12345678901234567890", "1,234,567.89", "v1.2.3-rc4", "2024-01-31T12:34:56Z",
        "https://example.com/path?q=1&r=two#frag", "user@example.org", "C:\\Windows\\System32",
        "int main() {\n\treturn 0;\n}\n", "    indented\n        more\n", "x = [1, 2, 3]  # comment",
        "SELECT * FROM t WHERE a = 'b';", "<div class=\"x\">&amp;</div>", "$$\\frac{a}{b}$$",
        "I'LL", "YOU'RE", "they'Re", "we'Ve", "it'S", "I'D", "don'T",
        "\r\n\r\n", "\n\n\n", "\t\t", "a\u00a0b", "a\u3000b", "a\u2003b", "end.\n", " \n ",
        "word" * 60, "\u00e9" * 100, "\u4e00" * 50, "ab " * 80,
        "The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX", "Mixed CASE wOrDs",
        "\u0000nul", "bell\u0007", "\ufeffBOM", "\u200bzero width", "soft\u00adhyphen",
        # added-token options (the added_opts family): single_word, lstrip/rstrip, normalized
        "hello world", "ahello", "hello!", "Say HELLO there", "x <mask> y", "x<mask>y", "  <mask>  ",
        "a [SEP] b", "a[SEP]b", "[SEP]", "ZZZ zzz Zzz", "\u00e9hello hello\u00e9",
    ]
    return t


def corpus():
    seen, out = set(), []
    for t in gen_tokenizer_corpus.corpus()[:220] + extra_texts():
        if len(t) > 1000:
            t = t[:1000]
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def training_texts(texts):
    # The corpus plus some plain prose, so that the merges are word-like.
    prose = ("the of and to in is that it was for on are as with his they at be this from have or by one had "
             "not but what all were when we there can an your which their said if do will each about how up out "
             "them then she many some so these would other into has more her two like him see time could no make "
             "than first been its who now people my made over did down only way find use may water long little "
             "very after words called just where most know get through back much before go good new write our "
             "used me man too any day same right look think also around another came come work three word must "
             "because does part even place well such here take why things help put years different away again "
             "off went old number great tell men say small every found still between name should home big give "
             "air line set own under read last never us left end along while might next sound below saw something "
             "thought both few those always looked show large often together asked house don't world going want "
             "school important until form food keep children feet land side without boy once animals life enough "
             "took sometimes four head above kind began almost live page got earth need far hand high year mother "
             "light parts country father let night following picture being study second eyes soon times story "
             "boys since white days ever paper hard near sentence better best across during today others however "
             "sure means knew it's try told young miles sun ways thing whole hear example heard several change "
             "answer room sea against top turned learn point city play toward five using himself usually")
    words = prose.split()
    rng = np.random.default_rng(7)
    lines = [" ".join(rng.choice(words, 12)) for _ in range(400)]
    lines += [l.capitalize() + "." for l in lines[:100]]
    return texts * 2 + lines


def byte_level_bpe(texts, specials, split_regex=None, ignore_merges=False, nfc=False, vocab=1000):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    if split_regex:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)
        ])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_texts(texts), trainer)
    return tok


def make_gpt2(texts):
    tok = byte_level_bpe(texts, ["<|endoftext|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}


def make_llama3(texts):
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
                "<|eot_id|>"]
    tok = byte_level_bpe(texts, specials, LLAMA3_RE, ignore_merges=True, vocab=1200)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))]),
    ])
    return tok, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}


def make_qwen2(texts):
    tok = byte_level_bpe(texts, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], QWEN2_RE, nfc=True)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # A non-special added token (Qwen2 has <think>-style ones): matched, but kept by skip_special.
    tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False)])
    return tok, {"bos_token": None, "eos_token": "<|im_end|>"}


def train_spm(texts, tmp, model_type, vocab):
    path = os.path.join(tmp, "train.txt")
    with open(path, "w", encoding="utf-8") as f:
        for line in training_texts(texts):
            line = line.replace("\n", " ").replace("\r", " ")
            if line.strip():
                f.write(line + "\n")
    prefix = os.path.join(tmp, model_type)
    spm.SentencePieceTrainer.train(input=path, model_prefix=prefix, model_type=model_type, vocab_size=vocab,
                                   byte_fallback=True, character_coverage=0.9995, split_digits=True,
                                   allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
                                   normalization_rule_name="identity", minloglevel=2, bos_id=1, eos_id=2, unk_id=0)
    return prefix + ".model"


def make_llama2(texts, spm_path):
    # What transformers' LlamaConverter writes (legacy Llama 2): BPE with the merges that
    # generate_merges derives from the SentencePiece vocabulary (scores order them), byte
    # fallback, Prepend + Replace normalizer, no pre-tokenizer, Replace/ByteFallback/Fuse/Strip.
    from transformers.convert_slow_tokenizer import generate_merges
    from sentencepiece import sentencepiece_model_pb2 as pb
    proto = pb.ModelProto()
    proto.ParseFromString(open(spm_path, "rb").read())
    vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    scores = {p.piece: p.score for p in proto.pieces}
    merges = generate_merges(vocab, scores)
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1, right=0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    tok.add_tokens([AddedToken("[INST]", special=False, normalized=False, lstrip=True, rstrip=True)])
    return tok, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def make_mistral_metaspace(texts, spm_path):
    # Newer Llama-2/Mistral files: no normalizer, a Metaspace pre-tokenizer (prepend first, no split).
    tok, cfg = make_llama2(texts, spm_path)
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(prepend_scheme="first")])
    return tok, cfg


def make_gemma(texts, spm_path):
    tok, _ = make_llama2(texts, spm_path)
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(["<start_of_turn>", "<end_of_turn>"])
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    return tok, {"bos_token": "<s>", "eos_token": "</s>"}


def make_unigram(texts, tmp):
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=800, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
                                      show_progress=False)
    tok.train_from_iterator(training_texts(texts), trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return tok, {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


def make_wordlevel_mix(texts):
    # Non-byte-level BPE with the other normalizers / pre-tokenizers / processors: NFKD +
    # Lowercase + StripAccents-like Replace, Whitespace/Punctuation/Digits, Bert post-processor.
    tok = Tokenizer(models.BPE(unk_token="[UNK]", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase(), normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(), pre_tokenizers.Digits(individual_digits=True)])
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]"],
                                  show_progress=False)
    tok.train_from_iterator(training_texts(texts), trainer)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    tok.decoder = decoders.Sequence([decoders.Strip(" ", 0, 0)])
    return tok, {"unk_token": "[UNK]"}


def make_roberta(texts):
    # ByteLevel with add_prefix_space and the Roberta post-processor.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_texts(texts), trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), add_prefix_space=True)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    return tok, {"bos_token": "<s>", "eos_token": "</s>"}


def make_bert(texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=800, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                                        show_progress=False)
    tok.train_from_iterator(training_texts(texts), trainer)
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok, {"unk_token": "[UNK]"}


def make_split_a(texts):
    # Split behaviors over a byte-level BPE: merged_with_next / merged_with_previous, Digits.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{P}+"), behavior="merged_with_previous"),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_texts(texts), trainer)
    return tok, {}


def make_split_b(texts):
    # Contiguous + invert, Removed, CharDelimiterSplit, Whitespace; a non-byte-level BPE with
    # an unknown token and no decoder (tokens joined with spaces).
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"[aeiou]+"), behavior="contiguous", invert=True),
        pre_tokenizers.Split("e", behavior="removed"),
        pre_tokenizers.CharDelimiterSplit("x"),
        pre_tokenizers.Whitespace()])
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(training_texts(texts)[:300], trainer)
    return tok, {}


def make_spm_unigram(texts, tmp):
    # A SentencePiece Unigram model with byte fallback in tokenizer.json form (T5/ALBERT-like
    # converters, without the precompiled charsmap).
    from sentencepiece import sentencepiece_model_pb2 as pb
    proto = pb.ModelProto()
    proto.ParseFromString(open(train_spm(texts, tmp, "unigram", 1000), "rb").read())
    tok = Tokenizer(models.Unigram([(p.piece, p.score) for p in proto.pieces], unk_id=0, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return tok, {"eos_token": "</s>"}


def make_added_opts(texts):
    # Added-token options over a lowercasing byte-level BPE: single_word (normalized and not),
    # lstrip + rstrip, and a normalized token whose content the normalizer changes.
    tok = byte_level_bpe(texts, ["<|endoftext|>"], vocab=600)
    tok.normalizer = normalizers.Lowercase()
    tok.add_tokens([AddedToken("hello", single_word=True, normalized=True), AddedToken("Zzz", normalized=True)])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False),
                            AddedToken("[SEP]", single_word=True, special=True, normalized=False)])
    return tok, {}


def expected(tok, texts):
    rows = []
    for t in texts:
        ids = tok.encode(t, add_special_tokens=True).ids
        plain = tok.encode(t, add_special_tokens=False).ids
        tok.encode_special_tokens = True
        nospecial = tok.encode(t, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        row = {"ids": ids, "ids_plain": plain, "decode": tok.decode(ids, skip_special_tokens=False),
               "decode_skip": tok.decode(ids, skip_special_tokens=True)}
        if nospecial != plain:
            row["ids_nospecial"] = nospecial
        if unicodedata.normalize("NFC", t) != t:
            row["not_nfc"] = True  # llama.cpp does not normalize: its GGUF ids differ from an NFC tokenizer's
        rows.append(row)
    return rows


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")


def save(name, tok, config, texts):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"), pretty=False)
    cfg = {k: v for k, v in config.items() if v is not None}
    cfg["add_bos_token"] = "bos_token" in cfg and name not in ("gpt2", "qwen2")
    write_json(os.path.join(d, "tokenizer_config.json"), cfg)
    # Reload from the file so the oracle sees exactly what the C++ side reads.
    write_json(os.path.join(d, "expected.json"), expected(Tokenizer.from_file(os.path.join(d, "tokenizer.json")), texts))


# ---- GGUF: the layout of convert_hf_to_gguf.py's _set_vocab_gpt2 / _set_vocab_sentencepiece ----
TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED, TT_UNUSED, TT_BYTE = 1, 2, 3, 4, 5, 6


def write_gguf(path, kv):
    import gguf
    w = gguf.GGUFWriter(path, arch="llama")
    for key, (kind, value) in kv.items():
        getattr(w, "add_" + kind)(key, value) if kind != "array" else w.add_array(key, value)
    w.add_tensor("dummy", np.zeros(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_gpt2(name, pre, texts):
    d = os.path.join(HERE, name)
    data = json.load(open(os.path.join(d, "tokenizer.json"), encoding="utf-8"))
    vocab = dict(data["model"]["vocab"])
    added = {a["content"]: a for a in data["added_tokens"]}
    for a in data["added_tokens"]:
        vocab[a["content"]] = a["id"]
    tokens = [None] * (max(vocab.values()) + 1)
    for t, i in vocab.items():
        tokens[i] = t
    types = [(TT_CONTROL if added[t]["special"] else TT_USER_DEFINED) if t in added else TT_NORMAL for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    kv = {"tokenizer.ggml.model": ("string", "gpt2"), "tokenizer.ggml.pre": ("string", pre),
          "tokenizer.ggml.tokens": ("array", tokens), "tokenizer.ggml.token_type": ("array", types),
          "tokenizer.ggml.merges": ("array", merges),
          "tokenizer.ggml.add_bos_token": ("bool", bool(cfg.get("add_bos_token")))}
    if cfg.get("bos_token"):
        kv["tokenizer.ggml.bos_token_id"] = ("uint32", vocab[cfg["bos_token"]])
    kv["tokenizer.ggml.eos_token_id"] = ("uint32", vocab[cfg["eos_token"]])
    os.makedirs(os.path.join(HERE, "gguf"), exist_ok=True)
    write_gguf(os.path.join(HERE, "gguf", name + ".gguf"), kv)


def gguf_spm(spm_path, texts):
    from sentencepiece import sentencepiece_model_pb2 as pb
    proto = pb.ModelProto()
    proto.ParseFromString(open(spm_path, "rb").read())
    type_of = {pb.ModelProto.SentencePiece.NORMAL: TT_NORMAL, pb.ModelProto.SentencePiece.UNKNOWN: TT_UNKNOWN,
               pb.ModelProto.SentencePiece.CONTROL: TT_CONTROL, pb.ModelProto.SentencePiece.USER_DEFINED:
               TT_USER_DEFINED, pb.ModelProto.SentencePiece.UNUSED: TT_UNUSED, pb.ModelProto.SentencePiece.BYTE: TT_BYTE}
    kv = {"tokenizer.ggml.model": ("string", "llama"), "tokenizer.ggml.pre": ("string", "default"),
          "tokenizer.ggml.tokens": ("array", [p.piece for p in proto.pieces]),
          "tokenizer.ggml.scores": ("array", [p.score for p in proto.pieces]),
          "tokenizer.ggml.token_type": ("array", [type_of[p.type] for p in proto.pieces]),
          "tokenizer.ggml.bos_token_id": ("uint32", 1), "tokenizer.ggml.eos_token_id": ("uint32", 2),
          "tokenizer.ggml.unknown_token_id": ("uint32", 0), "tokenizer.ggml.add_bos_token": ("bool", True),
          "tokenizer.ggml.add_eos_token": ("bool", False), "tokenizer.ggml.add_space_prefix": ("bool", True)}
    write_gguf(os.path.join(HERE, "gguf", "spm.gguf"), kv)
    proc = spm.SentencePieceProcessor(model_file=spm_path)
    rows = [{"ids": [1] + proc.encode(t), "decode": proc.decode(proc.encode(t))} for t in texts]
    write_json(os.path.join(HERE, "gguf", "spm.expected.json"), rows)


def main():
    texts = corpus()
    assert len(texts) >= 300, len(texts)
    write_json(os.path.join(HERE, "corpus.json"), texts)
    with tempfile.TemporaryDirectory() as tmp:
        spm_path = train_spm(texts, tmp, "bpe", 900)
        shutil.copy(spm_path, os.path.join(HERE, "spm_bpe.model"))
        families = {
            "gpt2": make_gpt2(texts), "llama3": make_llama3(texts), "qwen2": make_qwen2(texts),
            "llama2": make_llama2(texts, spm_path), "mistral_metaspace": make_mistral_metaspace(texts, spm_path),
            "gemma": make_gemma(texts, spm_path), "unigram": make_unigram(texts, tmp),
            "bpe_mix": make_wordlevel_mix(texts), "roberta": make_roberta(texts), "bert": make_bert(texts),
            "split_a": make_split_a(texts), "split_b": make_split_b(texts),
            "spm_unigram": make_spm_unigram(texts, tmp), "added_opts": make_added_opts(texts),
        }
        for name, (tok, cfg) in families.items():
            save(name, tok, cfg, texts)
            print(name, tok.get_vocab_size())
        gguf_gpt2("gpt2", "gpt2", texts)
        gguf_gpt2("llama3", "llama-bpe", texts)
        gguf_gpt2("qwen2", "qwen2", texts)
        gguf_spm(spm_path, texts)


if __name__ == "__main__":
    main()
