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
