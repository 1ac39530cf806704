#!/usr/bin/env python3
"""Writes tests/data/gpt2_corpus_ids.json: GPT-2 token ids for a varied corpus, from Hugging
Face `tokenizers` (an independent implementation) over tests/data/gpt2-tokenizer/.

Run from the repository root with the python3 that has `tokenizers` installed:
    python3 tests/data/gen_tokenizer_corpus.py
It first checks that the oracle reproduces the reference ids in expected_ids.json.
Texts are stored as JSON strings (ASCII-escaped), exact since the corpus has no lone surrogates.
"""
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "gpt2-tokenizer")


def build_tokenizer():
    bpe = models.BPE.from_file(os.path.join(DATA, "vocab.json"), os.path.join(DATA, "merges.txt"))
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def corpus():
    texts = [
        "",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "Hello world",
        "Hello, world!",
        "hello   world",
        "trailing space ",
        "trailing spaces   ",
        " leading space",
        "   leading spaces",
        "tabs\tand\t\ttabs",
        "line one\nline two\n\nline four",
        "windows\r\nline\r\nendings\r\n",
        "mixed \t \n whitespace \u00a0 nbsp",
        "it's",
        "IT'S LOUD",
        "We'RE here, I'M sure, you'D know, they'LL come, we'VE seen, don'T",
        "she's, he'd, we'll, they're, I've, I'm, can't",
        "'s't're've'm'll'd",
        "''s ''t",
        "rock 'n' roll",
        "\u2019s curly apostrophe",
        "0",
        "1234567890",
        "3.14159 2.71828 -42 +7 1e10 0x1F",
        "phone: +1 (555) 123-4567",
        "\u0661\u0662\u0663 Arabic-Indic digits",
        "\u0967\u0968\u0969 Devanagari digits",
        "\uff11\uff12\uff13 fullwidth digits",
        "\u2160\u2161\u2162 roman numerals",
        "\u00bd \u00bc \u00be fractions",
        "x\u00b2 + y\u00b3 superscripts",
        "na\u00efve caf\u00e9 r\u00e9sum\u00e9",
        "nai\u0308ve cafe\u0301 (combining)",
        "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u034e\u0345\u031b\u034d\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
        "\u00c5ngstr\u00f6m \u212bngstr\u00f6m",
        "Stra\u00dfe STRASSE",
        "\u0130stanbul \u0131\u015f\u0131k",
        "\u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2 Greek",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! Russian",
        "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439\u0442\u0435",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd Hebrew",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 Arabic",
        "\u0627\u0644\u0633\u064e\u0651\u0644\u0627\u0645\u064f \u0639\u064e\u0644\u064e\u064a\u0652\u0643\u064f\u0645\u0652",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e Hindi",
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a Thai",
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01 Chinese",
        "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8",
        "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c Japanese",
        "\u30ab\u30bf\u30ab\u30ca \u3072\u3089\u304c\u306a \u6f22\u5b57",
        "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4 Korean",
        "\u1100\u1161\u11a8 conjoining jamo",
        "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0 Georgian",
        "\u0532\u0561\u0580\u0565\u0582 Armenian",
        "\u1210\u1308\u122d Ethiopic",
        "\u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd Tamil",
        "\u0cb9\u0cc6\u0cb2\u0ccb Kannada",
        "\u1780\u1798\u17d2\u1796\u17bb\u1787\u17b6 Khmer",
        "\u0f56\u0f7c\u0f51\u0f0b\u0f61\u0f72\u0f42 Tibetan",
        "\U00010330\U00010331\U00010332 Gothic",
        "\U0001d400\U0001d401\U0001d402 math bold",
        "\U00020000\U00020001 CJK ext B",
        "emoji \U0001f600\U0001f601\U0001f602",
        "\U0001f44d\U0001f3fd thumbs up medium skin",
        "\U0001f44b\U0001f3fb\U0001f44b\U0001f3fc\U0001f44b\U0001f3fd\U0001f44b\U0001f3fe\U0001f44b\U0001f3ff",
        "family \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
        "\U0001f469\U0001f3fd\u200d\U0001f4bb coder",
        "\U0001f3f3\ufe0f\u200d\U0001f308 rainbow flag",
        "\U0001f1fa\U0001f1f8\U0001f1ef\U0001f1f5 flags",
        "\u2764\ufe0f heart with VS16",
        "#\ufe0f\u20e3 keycap",
        "\U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
        "zero\u200bwidth\u200cjoiners\u200d",
        "bom\ufeffinside",
        "soft\u00adhyphen",
        "ideographic\u3000space",
        "em\u2003space and thin\u2009space",
        "next\u0085line",
        "line\u2028separator\u2029paragraph",
        "control\x01chars\x7f\x1b[0m",
        "nul\x00byte",
        "a\x0bvertical\x0cfeed",
        "\x1c\x1d\x1e\x1f info separators",
        "def f(x):\n    return x ** 2\n",
        "for (int i = 0; i < n; ++i) { sum += a[i]; }",
        "#include <iostream>\nint main() { std::cout << \"hi\\n\"; }",
        "if x != y && z >= 3 || !done:",
        "SELECT * FROM users WHERE id = 42;",
        "<html><body class=\"main\">Hi</body></html>",
        "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
        "    indented four",
        "\t\tindented tabs",
        "https://example.com/path?query=1&x=y#frag",
        "http://www.\u4f8b\u5b50.\u6d4b\u8bd5/\u8def\u5f84",
        "user@example.com",
        "C:\\Users\\name\\file.txt",
        "/usr/local/bin/python3",
        "$100.00 \u20ac50 \u00a330 \u00a51000",
        "100% sure!!!",
        "?!?!...---***",
        "\u2026 ellipsis \u2014 em dash \u2013 en dash",
        "\u00ab guillemets \u00bb \u201cquotes\u201d \u2018single\u2019",
        "a" * 300,
        "supercalifragilisticexpialidocious" * 5,
        "pneumonoultramicroscopicsilicovolcanoconiosis",
        "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
        "\u4e00" * 50,
        "\U0001f600" * 20,
        "1" * 100,
        " " * 50,
        " " * 50 + "x",
        "x" + " " * 50,
        "\n" * 10,
        "\n\n\nx",
        "a \n b",
        "a  \n  b",
        " \t x",
        "\t x",
        "x \t",
        "CamelCaseWordsTogether",
        "snake_case_words_here",
        "kebab-case-words-here",
        "MixedUPPERlower",
        "ALLCAPS SENTENCE HERE.",
        "Numbers123Mixed456In789",
        "v1.2.3-beta+build.5",
        "<|endoftext|>",
        "before<|endoftext|>after",
        "<|endoftext|> <|endoftext|>",
        "\u00a9 2024 \u00ae \u2122",
        "\u2200x \u2208 \u211d: x\u00b2 \u2265 0",
        "\u221a2 \u2248 1.414, \u03c0 \u2248 3.14159",
        "\u2190 \u2191 \u2192 \u2193 arrows",
        "\u2603\u2604\u2605 symbols",
        "\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e6\u00e7\u00e8\u00e9\u00ea\u00eb",
        "\u0100\u0101\u0102\u0103 Latin Extended",
        "\u1e9e capital sharp s",
        "\ufb01 \ufb02 ligatures",
        "\u2126 Ohm vs \u03a9 omega",
        "\u0041\u030a vs \u00c5",
        "\u1ea0\u0323 Vietnamese ti\u1ebfng Vi\u1ec7t",
        "\u01c4\u01c5\u01c6 digraphs",
        "The quick brown fox jumps over the lazy dog.",
        "Pack my box with five dozen liquor jugs!",
        "A sentence with\ta tab, a newline\nand more.",
        "Quote: \"To be, or not to be\" \u2014 Hamlet",
        "e.g. i.e. etc. vs. Mr. Dr.",
        "U.S.A. U.K.",
        "...",
        "!",
        "'",
        "''",
        "'s",
        " 's",
        "x's",
        "X'S",
        "'ll've'd",
        "don't won't shan't",
        "\u05d0\u05f3s Hebrew geresh",
        "    ",
        "\t \t \t",
        " \r\n \r\n ",
        "end with newline\n",
        "end with crlf\r\n",
        "tab at end\t",
        "\u00a0\u00a0nbsp lead",
        "x\u00a0\u00a0y",
        "\u3000\u3000\u3000",
        "a\u3000b",
        "12:30pm 2024-01-15T12:30:00Z",
        "1,000,000 and 1.000.000",
        "0.5 .5 5.",
        "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",
        "\u09e6\u09e7\u09e8 Bengali digits",
        "\u0e50\u0e51\u0e52 Thai digits",
        "\U0001d7ce\U0001d7cf math digits",
        "\u2460\u2461\u2462 circled",
        "\u3007\u4e00\u4e8c\u4e09",
        "A1B2C3",
        "a1 b2 c3",
        " 1 2 3",
        "  12  34",
        "#hashtag @mention",
        "**bold** _italic_ `code`",
        "- item one\n- item two\n  - nested",
        "1. first\n2. second",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "$$E = mc^2$$",
        "\\frac{a}{b} + \\sqrt{x}",
        "console.log(`template ${literal}`);",
        "x => x * 2",
        "a->b::c",
        "/* comment */ // line comment",
        "<!-- html comment -->",
        "\ud55c\uad6d\uc5b4\uc640 English \uc11e\uc5b4",
        "\u65e5\u672c\u8a9e\u3068English\u306e\u6df7\u5728",
        "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 and English",
        "\u0394\u03b5\u03bd \u03be\u03ad\u03c1\u03c9",
        "\u00bfQu\u00e9 tal? \u00a1Muy bien!",
        "Gr\u00fc\u00df Gott, \u00c4rger, \u00d6l, \u00dcbel",
        "\u0141\u00f3d\u017a \u017b\u00f3\u0142w",
        "\u010cesk\u00fd \u0159ek",
        "\u00de\u00f0 Icelandic",
        "\u0153uvre \u00e6ther",
        "wide\uff21\uff22\uff23\uff41\uff42\uff43",
        "\uff08\u62ec\u5f27\uff09\u3010\u62ec\u5f27\u3011",
        "\u3002\u3001\u300c\u300d",
        "\U0001f923\U0001f923\U0001f923 lol",
        "I \u2764\ufe0f NY",
        "\U0001f44d\U0001f3ff\U0001f44e\U0001f3fb",
        "\U0001f468\u200d\u2695\ufe0f doctor",
        "\U0001f575\ufe0f\u200d\u2640\ufe0f detective",
        "a\U0001f600b",
        " \U0001f600",
        "\U0001f600 ",
        "word\U0001f600word",
        "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9",
        "e\u0301e\u0301e\u0301",
        "\u0915\u094d\u0937 conjunct",
        "last one, really.",
    ]
    # A long word of pseudo-random letters and a long base64-like blob (many BPE merges each).
    state = 12345
    letters, blob = [], []
    for _ in range(3000):
        state = (state * 1103515245 + 12345) % 2**31
        letters.append("abcdefghijklmnopqrstuvwxyz"[state % 26])
        blob.append("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(state >> 8) % 64])
    texts += ["".join(letters), "".join(blob)]
    return texts


def main():
    tok = build_tokenizer()
    with open(os.path.join(DATA, "expected_ids.json"), encoding="utf-8") as f:
        expected = json.load(f)
    for case in expected:
        got = tok.encode(case["text"]).ids
        assert got == case["ids"], f"oracle disagrees with expected_ids.json on {case['text']!r}: {got}"
    texts = corpus()
    assert len(set(texts)) == len(texts), "duplicate corpus texts"
    out = []
    for text in texts:
        ids = tok.encode(text).ids
        assert tok.decode(ids) == text, f"oracle round trip failed on {text!r}"
        out.append({"text": text, "ids": ids})
    path = os.path.join(HERE, "gpt2_corpus_ids.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"verified {len(expected)} reference cases; wrote {len(out)} texts to {path}")


if __name__ == "__main__":
    main()
