#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_tokenizer_json (fuzz/corpus/tokenizer_json/): tiny
tokenizer.json files, one per component family, each followed by "\\n----\\n" and a text,
and two GGUF vocabularies (SentencePiece and Qwen2 BPE) from tests/data/tokenizers/gguf."""
import json
import os
import shutil

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "tokenizer_json")
SEP = "\n----\n"
TEXT = "Hello  world<s> caf\u00e9 123\n\u4f60\u597d \U0001F600"

bpe = {"type": "BPE", "vocab": {"<unk>": 0, "<s>": 1, "H": 2, "e": 3, "l": 4, "o": 5, "He": 6, "ll": 7, "<0x41>": 8},
       "merges": ["H e", ["l", "l"]], "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True}
added = [{"id": 1, "content": "<s>", "special": True, "normalized": False, "lstrip": True, "rstrip": False,
          "single_word": False}]
seeds = {
    "bytelevel": {"model": dict(bpe, byte_fallback=False, ignore_merges=True),
                  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
                  "decoder": {"type": "ByteLevel"}, "added_tokens": added,
                  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
                                                                              {"Sequence": {"id": "A"}}],
                                     "special_tokens": {"<s>": {"ids": [1]}}}},
    "split": {"model": bpe, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}| ?\\p{L}+|\\s+(?!\\S)"}, "behavior": "Isolated",
         "invert": False},
        {"type": "Split", "pattern": {"String": "l"}, "behavior": "MergedWithNext", "invert": True},
        {"type": "Digits", "individual_digits": True}, {"type": "Punctuation", "behavior": "Contiguous"}]}},
    "spm": {"model": bpe, "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
                {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}, "added_tokens": added},
    "metaspace": {"model": bpe, "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                                  "prepend_scheme": "first", "split": True},
                  "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
                  "normalizer": {"type": "NFKC"}},
    "unigram": {"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
                          "vocab": [["<unk>", 0.0], ["\u2581He", -1.0], ["llo", -2.0], ["l", -3.0], ["<0x41>", -4.0]]},
                "normalizer": {"type": "BertNormalizer", "lowercase": True},
                "pre_tokenizer": {"type": "WhitespaceSplit"}},
    "wordpiece": {"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "he": 1, "##llo": 2}},
                  "pre_tokenizer": {"type": "BertPreTokenizer"}, "decoder": {"type": "WordPiece", "prefix": "##"},
                  "post_processor": {"type": "BertProcessing", "cls": ["[UNK]", 0], "sep": ["[UNK]", 0]}},
}
os.makedirs(OUT, exist_ok=True)
for name, tok in seeds.items():
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        f.write(json.dumps(tok, ensure_ascii=False) + SEP + TEXT)
GGUF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tokenizers", "gguf")
for name in ("spm", "qwen2"):
    shutil.copy(os.path.join(GGUF, name + ".gguf"), os.path.join(OUT, name + ".gguf"))
