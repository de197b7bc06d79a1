# An independent reference for the "gemma4" tokenizer (tokenizer.ggml.model
# "gemma4", llama.cpp's gemma4 pre-type), written from the rules rather than
# from either implementation:
#   - special tokens are cut out first (not modelled here: the cases are plain text);
#   - every ' ' becomes U+2581 (no space prefix);
#   - the text is cut by [^\n]+|[\n]+;
#   - a run of newlines that is a token is that token;
#   - else BPE over the run's code points: repeatedly merge the adjacent pair
#     of lowest merge rank (the leftmost among equals);
#   - a final piece that is a token is emitted, else its UTF-8 bytes as
#     "<0xXX>" tokens, a byte without one dropped.
# It rebuilds the toy vocabulary of tests/models/tokenizer_gemma4_test.c
# (same ids) and checks the encodings that test expects.
#   python3 scripts/gemma4_tokenize_reference.py
import re
import sys

SP = '\u2581'


def toy_vocab():
    tokens = ['<pad>', '<eos>', '<bos>', '<unk>', '<turn|>', '<tool>']
    tokens += ['<0x%02X>' % b for b in range(255)]  # no <0xFF>
    tokens += [SP, SP + SP, 't', 'h', 'e', 'a', 'c', SP + 't', 'he', SP + 'the', 'at', SP + 'c',
               SP + 'cat', '\n', '\n\n', '\n\n\n\n', SP + 'dog']
    merges = [SP + ' t', 'h e', SP + 't he', 'a t', SP + ' c', SP + 'c at', 't h', SP + ' ' + SP,
              'c a', '\n \n']
    return tokens, merges


class Gemma4:
    def __init__(self, tokens, merges):
        self.ids = {}
        for i, t in enumerate(tokens):
            self.ids[t] = i  # a later duplicate wins
        self.ranks = {}
        for r, m in enumerate(merges):
            left, right = m[0] + m[1:].split(' ', 1)[0], m[1:].split(' ', 1)[1]
            self.ranks.setdefault((left, right), r)  # the first duplicate wins

    def bpe(self, word):
        syms = list(word)
        while True:
            best = None
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                return syms
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]

    def encode(self, text):
        out = []
        for word in re.findall(r'[^\n]+|\n+', text.replace(' ', SP)):
            if word[0] == '\n' and word in self.ids:
                out.append(self.ids[word])
                continue
            for piece in self.bpe(word):
                if piece in self.ids:
                    out.append(self.ids[piece])
                    continue
                for b in piece.encode('utf-8'):
                    name = '<0x%02X>' % b
                    if name in self.ids:
                        out.append(self.ids[name])
        return out


def main():
    tokens, merges = toy_vocab()
    g = Gemma4(tokens, merges)
    ident = {t: i for i, t in enumerate(tokens)}
    B = lambda x: 6 + (ord(x) if isinstance(x, str) else x)
    T = lambda s: ident[s.replace(' ', SP)]
    cases = [
        ('the cat', [T('t'), T('he'), T(' cat')]),
        (' the', [T(' the')]),
        ('the', [T('t'), T('he')]),
        ('th', [B('t'), B('h')]),
        ('cat', [T('c'), T('at')]),
        ('ca', [B('c'), B('a')]),
        ('   ', [T('  '), T(' ')]),
        (' dog', [T(' '), B('d'), B('o'), B('g')]),
        ('\n', [T('\n')]),
        ('\n\n', [T('\n\n')]),
        ('\n\n\n', [T('\n\n'), T('\n')]),
        ('\n\n\n\n', [T('\n\n\n\n')]),
        ('\n\n\n\n\n', [T('\n\n'), T('\n\n'), T('\n')]),
        ('the\n\ncat\n', [T('t'), T('he'), T('\n\n'), T('c'), T('at'), T('\n')]),
        ('a \n t', [T('a'), T(' '), T('\n'), T(' t')]),
        ('\u00e9t', [B(0xC3), B(0xA9), T('t')]),
        ('\u65e5\t\U0001F600', [B(0xE6), B(0x97), B(0xA5), B('\t'), B(0xF0), B(0x9F), B(0x98), B(0x80)]),
        ('<turn|>', [B('<'), T('t'), B('u'), B('r'), B('n'), B('|'), B('>')]),
        ('\u00e9 the', [B(0xC3), B(0xA9), T(' the')]),
        ('', []),
    ]
    bad = 0
    for text, want in cases:
        got = g.encode(text)
        print('%-24r -> %s' % (text, got))
        if got != want:
            print('  expected %s' % want)
            bad += 1
    print('%d of %d cases differ' % (bad, len(cases)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
