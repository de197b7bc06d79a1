# Reference token ids for tests/models/tokenizer_smollm2_test.c, from an independent
# implementation: HuggingFace `tokenizers` over the vocabulary and merges that gguf-py
# reads from SmolLM2-135M-Instruct.Q4_1.gguf, with three pre-tokenizers:
#   smollm: Sequence[Digits(individual_digits), ByteLevel(use_regex)] (SmolLM2's own)
#   gpt2:   ByteLevel(use_regex)                      (the GPT-2 pattern)
#   llama3: Sequence[Split(Llama-3 pattern), ByteLevel(no regex)], ignore_merges
# Control tokens are special added tokens (parsed in the text).
#   pip install tokenizers gguf
#   python3 scripts/smollm2_reference_ids.py FILE.gguf > table.inc   (prints the C table)
import sys
from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

PROMPTS = [
    "Hello, world!", "The capital of France is Paris.",
    "In 2024, 1234567 people paid $3.50 each.", "  leading spaces and   runs\n\n\ttabs\n",
    "I'm sure you'll see they've DONE it, don't you?",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 and \u4e2d\u6587",
    "emoji \U0001F600\U0001F44D\U0001F3FD done",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "def f(x):\n    return x**2  # square\n",
    "\u0394\u03b5\u03bb\u03c4\u03b1 \u043f\u0440\u0438\u0432\u0435\u0442 \u0645\u0631\u062d\u0628\u0627 \u0967\u0968\u0969",
    "a\u00a0b\u2003c\u3000d", "!!!??? ... --- ***",
]
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

r = GGUFReader(sys.argv[1])
def strings(name):
    f = r.fields[name]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
tokens = strings("tokenizer.ggml.tokens")
merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
f = r.fields["tokenizer.ggml.token_type"]
types = [int(f.parts[i][0]) for i in f.data]
vocab = {t: i for i, t in enumerate(tokens)}

def make(kind):
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=(kind == "llama3")))
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=(kind != "llama3"))
    if kind == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), bl])
    elif kind == "gpt2":
        tok.pre_tokenizer = bl
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False), bl])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                            for i in range(len(tokens)) if types[i] == 3])
    return tok

def cstr(s):
    parts, cur, prev_hex = [], "", False
    for c in s.encode("utf-8"):
        ch = chr(c)
        if c == 0x5C: t, h = "\\\\", False
        elif c == 0x22: t, h = '\\"', False
        elif c == 10: t, h = "\\n", False
        elif c == 9: t, h = "\\t", False
        elif 32 <= c < 127:
            if prev_hex and ch in "0123456789abcdefABCDEF":
                parts.append(cur); cur = ""
            t, h = ch, False
        else: t, h = "\\x%02X" % c, True
        if len(cur) + len(t) > 76:
            parts.append(cur); cur = ""
        cur += t; prev_hex = h
    parts.append(cur)
    return "\n     ".join('"%s"' % p for p in parts)

def ids_c(ids):
    out, line = [], "      "
    for i, v in enumerate(ids):
        item = str(v) + (", " if i + 1 < len(ids) else "")
        if len(line) + len(item) > 92:
            out.append(line.rstrip()); line = "      "
        line += item
    out.append(line)
    return "{\n" + "\n".join(out) + "}"

toks = {k: make(k) for k in ("smollm", "gpt2", "llama3")}
for p in PROMPTS:
    rows = []
    for k in ("smollm", "gpt2", "llama3"):
        ids = toks[k].encode(p, add_special_tokens=False).ids
        assert toks[k].decode(ids, skip_special_tokens=False) == p
        assert len(ids) <= 32
        rows.append("     {%d, %s}" % (len(ids), ids_c(ids)))
    print("    {%s,\n%s},\n" % (cstr(p), ",\n".join(rows)))
