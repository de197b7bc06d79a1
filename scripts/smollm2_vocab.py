"""SmolLM2's vocabulary (its tokenizer.* keys) copied into a gguf-py writer, for
the random-weight files that compare topos with llama.cpp
(random_delta_gguf.py, random_kimi_gguf.py)."""
import os
from gguf import GGUFReader, GGUFValueType

SMOLLM2 = os.path.expanduser('~/.cache/topos/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf')


def copy_vocab(w):
    """Adds every tokenizer.* key of SmolLM2's file to w; returns the vocabulary's size."""
    rd = GGUFReader(SMOLLM2)
    for f in rd.fields.values():
        if not f.name.startswith('tokenizer.'):
            continue
        t = f.types[0]
        if t == GGUFValueType.ARRAY:
            if f.types[1] == GGUFValueType.STRING:
                vals = [bytes(f.parts[i]).decode('utf-8', 'surrogateescape') for i in f.data]
            else:
                vals = [f.parts[i].tolist()[0] for i in f.data]
            w.add_array(f.name, vals)
        elif t == GGUFValueType.STRING:
            w.add_string(f.name, bytes(f.parts[f.data[0]]).decode())
        elif t == GGUFValueType.BOOL:
            w.add_bool(f.name, bool(f.parts[f.data[0]][0]))
        else:
            w.add_uint32(f.name, int(f.parts[f.data[0]][0]))
    return len(rd.fields['tokenizer.ggml.tokens'].data)
