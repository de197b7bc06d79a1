# Reference token ids for tests/models/tokenizer_smollm2_test.c, from an independent
# implementation: HuggingFace tokenizers configured as SmolLM2 tokenizer.json, with the
# vocabulary and merges read from the GGUF by gguf-py.
#   pip install tokenizers gguf; python3 scripts/smollm2_reference_ids.py FILE.gguf prompts.json
import sys, json
from gguf import GGUFReader
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, AddedToken
path = sys.argv[1]
r = GGUFReader(path)
def field(name):
    f = r.fields[name]
    return f
def strs(name):
    f = r.fields[name]
    return [bytes(f.parts[i]).decode('utf-8') for i in f.data]
def scalar(name):
    f = r.fields.get(name)
    if f is None: return None
    v = f.parts[f.data[0]]
    try: return bytes(v).decode() if f.types[0].name=='STRING' else v.tolist()
    except Exception: return v
for k in r.fields:
    if k.startswith('tokenizer') and k not in ('tokenizer.ggml.tokens','tokenizer.ggml.merges','tokenizer.ggml.token_type','tokenizer.chat_template'):
        print(k, scalar(k), file=sys.stderr)
tokens = strs('tokenizer.ggml.tokens')
merges = strs('tokenizer.ggml.merges')
types = [int(field('tokenizer.ggml.token_type').parts[i][0]) for i in field('tokenizer.ggml.token_type').data]
print('n_tokens', len(tokens), 'n_merges', len(merges), file=sys.stderr)
print('non-normal', [(i, tokens[i], types[i]) for i in range(len(tokens)) if types[i] != 1][:40], file=sys.stderr)
vocab = {t: i for i, t in enumerate(tokens)}
mp = [tuple(m.split(' ', 1)) for m in merges]
tok = Tokenizer(models.BPE(vocab=vocab, merges=mp))
tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i in range(len(tokens)) if types[i] == 3])
prompts = json.load(open(sys.argv[2]))
out = []
for p in prompts:
    ids = tok.encode(p, add_special_tokens=False).ids
    out.append(ids)
    assert tok.decode(ids, skip_special_tokens=False) == p, (p, tok.decode(ids))
print(json.dumps(out))
