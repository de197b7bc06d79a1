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
