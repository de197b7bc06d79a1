#!/usr/bin/env python3
"""Splits of mixed texts by llama.cpp's Qwen2 and Llama 3 pre-tokenizer
expressions, through Python's `regex` module (real Unicode classes), for
tests/models/tokenizer_bpe_test.c's tokenizer_pretokenize_qwen2_and_llama3_match_the_regex.
Prints `name "text" "piece|piece|..."` per case (pip install regex)."""
import regex, random, json
QWEN2 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
random.seed(7)
alphabet = list("ab Zx") + ["12345", "7", "'s", "'LL", "'re", " ", "  ", "\n", "\r\n", "\t", "!?", ".", "é", "日本", "٣٤", "€", "--", "x9y"]
cases = ["Hello world 12345 it's", "2024-12-06: 3.14159\n\nend", "  leading and trailing  ", "a1b22c333d4444", "I'LL 've \t\n x"]
while len(cases) < 14:
    cases.append("".join(random.choice(alphabet) for _ in range(random.randint(4, 12))))
for name, pat in (("qwen2", QWEN2), ("llama3", LLAMA3)):
    for c in cases:
        pieces = regex.findall(pat, c)
        assert "".join(pieces) == c
        print(name, json.dumps(c, ensure_ascii=False), json.dumps("|".join(pieces), ensure_ascii=False))

# Mistral's tekken and OpenAI's o200k (gpt-4o) expressions as their
# tokenizer.json files state them (real Unicode categories: llama.cpp
# approximates the cased classes with [^a-z] / [^A-Z] lookaheads instead),
# printed as C rows for tokenizer_pretokenize_tekken_and_gpt4o_match_the_regex.
TEKKEN = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
GPT4O = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def c_literal(s):
    out, hexed = '"', False
    for b in s.encode("utf-8"):
        ch = chr(b)
        if b >= 0x80:
            out += "\\x%02X" % b
            hexed = True
            continue
        if hexed and ch in "0123456789abcdefABCDEF":
            out += '" "'
        hexed = False
        out += {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}.get(ch, ch)
    return out + '"'


random.seed(11)
cased = ["HTMLParser", "camelCase", "ÉCOLE", "élan", "Σσ", "ǅx", "ʰa", "é", "e\u0301", "\u0301", "日本",
         "कि", "A", "b", "'s", "'LL", "'re", " ", "  ", "\n", "\r\n", "\t", "!?", "/", "12345", "7", "--", "x9y"]
fixed = ["HTMLParser camelCase I'M don't", "Path/to/file.txt\n// comment /\n", "ÉCOLE élan ΣΟΦΙΑ σοφία",
         "e\u0301te\u0301 \u0301x", "ǅungla ʰa 日本語テキスト", "2024-12-06: 3.14159\n\nend", "  leading  ",
         "日A ʰB 本CD! x日本A", "Σ日σΩ \u0301AB"]
cases2 = list(fixed)
while len(cases2) < 16:
    cases2.append("".join(random.choice(cased) for _ in range(random.randint(4, 10))))
for name, pat in (("TP_PRE_TEKKEN", TEKKEN), ("TP_PRE_GPT4O", GPT4O)):
    for c in cases2:
        pieces = regex.findall(pat, c)
        assert "".join(pieces) == c
        print("    {%s, %s,\n     %s}," % (name, c_literal(c), c_literal("|".join(pieces))))

# DeepSeek's lists of expressions (llama.cpp's llama-vocab.cpp, the same as
# the Split steps of their tokenizer.json files): each expression cuts every
# piece the one before left into its matches and the runs between them
# (behaviour "Isolated"), and sees each piece as a whole text. Printed as C
# rows for tokenizer_pretokenize_deepseek_matches_the_regex.
DEEPSEEK_LLM = [
    r"[\r\n]",
    r"\s?" "[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc"
    "\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4"
    "\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d"
    "\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4"
    "\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+",
    r"\s?" "[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    r"\s+$",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    r"\p{N}+",
]
DEEPSEEK_CODER = [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", DEEPSEEK_LLM[4], r"\p{N}"]
DEEPSEEK_V3 = [
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
]


def split_list(text, exprs):
    pieces = [text]
    for expr in exprs:
        out = []
        for piece in pieces:
            at = 0
            for m in regex.finditer(expr, piece):
                if m.start() > at:
                    out.append(piece[at:m.start()])
                out.append(m.group())
                at = m.end()
            if at < len(piece):
                out.append(piece[at:])
        pieces = out
    return pieces


random.seed(13)
mixed = ["Hello", "world", "it's", "I'LL", "12345", "7", " ", "  ", "\n", "\r\n", "\t", "!?", "...", "(x)",
         "+=", "é", "Héllo", "ÉCOLE", "Σσ", "мир", "e\u0301", "\u0301", "日本", "中文", "ひらがな", "カタカナ",
         "한국", "，", "。", "“", "”", "\u3000", "ｘ", "１２", "😀", "€", "٣٤", "\u200d", "कि", ".py", "$x"]
fixed = ["Hello world 12345 it's", "2024-12-06: 3.14159\n\nend", "  leading and trailing  ",
         "x += 1; // note\r\n\tif (a) {b}", "Héllo ÉCOLE мир Σοφία café", "中文，日本語のテキスト。한국어",
         "e\u0301te\u0301 \u0301x кни\u0301га", "“quoted” ‘single’ — dash… ok",
         "emoji 😀😀 x€5 $HOME ~/.bashrc", "１２３ｘｙｚ！？\u3000全角", "a\u200db \u200d\u200dc",
         "trailing \t ", "٣٤٥ عربي 123456789", "कि हिन्दी", ".hello world.py/path",
         "\u01bbx\u0294y \u10a0\u13f8\uff21\U00010400\U0001e900 \u02b0z \u2126\u212a",
         "a \n  b\r\n\r\n  c\t\tx  \n", " \u0301x \u3000y\u3001z \u2003w"]
cases3 = list(fixed)
while len(cases3) < 26:
    cases3.append("".join(random.choice(mixed) for _ in range(random.randint(3, 9))))
for name, exprs in (("TP_PRE_DEEPSEEK_LLM", DEEPSEEK_LLM), ("TP_PRE_DEEPSEEK_CODER", DEEPSEEK_CODER),
                    ("TP_PRE_DEEPSEEK_V3", DEEPSEEK_V3)):
    for c in cases3:
        pieces = split_list(c, exprs)
        assert "".join(pieces) == c
        print("    {%s, %s,\n     %s}," % (name, c_literal(c), c_literal("|".join(pieces))))

# Kimi K2's pattern: the pat_str of its tokenization_kimi.py (tiktoken, whose
# Rust engine reads && in a class as intersection; the regex module does in
# its version 1, (?V1)). \p{Han} is the Han script in both; (?-f): simple case
# folding, as in Rust's engine, rather than version 1's full folding. Printed
# as C rows for tokenizer_pretokenize_kimi_k2_matches_the_regex.
KIMI_K2 = "(?V1)(?-f)" + "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])
random.seed(17)
kimi = ["Hello", "HTMLParser", "camelCase", "I'M", "don't", "'s", "'LL", "12345", "7", " ", "  ", "\n", "\r\n",
        "\t", "!?", "...", "/", "(x)", "é", "ÉCOLE", "Σσ", "e\u0301", "\u0301", "中文", "日本", "々", "〇", "⺀",
        "ひらがな", "カタカナ", "ー", "한국", "，", "。", "\u3000", "１２", "😀", "€", "٣٤", "कि", "ǅx", "ʰa",
        "\u200d", "x\u017f"]
fixed = ["HTMLParser camelCase I'M don't they'LL we've", "Hello world 12345 it's 1234567",
         "中文English混合text，测试。", "日本語のテキストとカタカナ、ひらがな。", "人々 〇〇七 ⺀⺁ 漢字A",
         "ÉCOLE élan ΣΟΦΙΑ σοφία ǅungla ʰa", "e\u0301te\u0301 \u0301x кни\u0301га 中\u0301文",
         "x += 1; // note\r\n\tif (a) {b}\n\n", "  leading and trailing  ", "a \n  b\r\n\r\n  c\t\tx  \n",
         "emoji 😀😀 x€5 $HOME ~/.bashrc!!\n", "１２３ｘｙｚ！？\u3000全角", "٣٤٥ عربي कि हिन्दी 한국어",
         "Path/to/file.txt\n// comment /\n", "a\u200db 中'S 文's x'\u017f y'\u017fT", "!中 !a ,中文 ⺀a 〇1"]
cases4 = list(fixed)
while len(cases4) < 30:
    cases4.append("".join(random.choice(kimi) for _ in range(random.randint(3, 9))))
for c in cases4:
    pieces = regex.findall(KIMI_K2, c)
    assert "".join(pieces) == c
    print("    {TP_PRE_KIMI_K2, %s,\n     %s}," % (c_literal(c), c_literal("|".join(pieces))))

# Qwen3.5's pattern (its tokenizer.json, as llama.cpp's qwen35 writes it):
# Qwen2's with marks joining letters ([\p{L}\p{M}]+) and left out of the
# symbol runs. Printed as C rows for tokenizer_pretokenize_qwen35_matches_the_regex.
QWEN35 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
random.seed(19)
marks = ["Hello", "it's", "'LL", "12345", "7", " ", "  ", "\n", "\r\n", "\t", "!?", "é", "e\u0301", "\u0301",
         "\u0301\u0301", "कि", "हिन्दी", "日本", "€", "--", "x9y", "!\u0301", " \u0301"]
fixed = ["Hello world 12345 it's", "e\u0301te\u0301 \u0301x кни\u0301га", "कि हिन्दी 123", "!\u0301? .\u0301\n",
         "  \u0301\u0301a\r\n\u0301", "a1b22 'Ve\u0301 \t\n x"]
cases5 = list(fixed)
while len(cases5) < 16:
    cases5.append("".join(random.choice(marks) for _ in range(random.randint(3, 9))))
for c in cases5:
    pieces = regex.findall(QWEN35, c)
    assert "".join(pieces) == c
    print("    {TP_PRE_QWEN35, %s,\n     %s}," % (c_literal(c), c_literal("|".join(pieces))))
