#!/usr/bin/env python3
"""Generate the golden vectors of the quant tier (tests/quant/golden/quant_goldens.h).

Two independent references produce the expected bytes and floats:

  * gguf-py (PyPI package `gguf`, module gguf.quants): quantizes F16 (numpy),
    BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and dequantizes those plus Q2_K..Q6_K.
  * ggml's own C reference (src/ggml-quants.c: quantize_row_*_ref,
    dequantize_row_*; src/ggml-cpu/quants.c: ggml_vec_dot_*_generic), compiled
    here from a ggml checkout into a temporary shared library and called via
    ctypes. Only this route can quantize Q8_1, Q8_K and the K formats, and it
    provides the dot products.

Where both routes cover a case the script asserts that they agree, so every
committed golden is either confirmed twice or comes from ggml's C reference.
Nothing from ggml is copied into this repository: the library is built in a
temporary directory from the checkout you point at.

Usage (ggml checked out anywhere, e.g. git clone https://github.com/ggml-org/ggml):
    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf numpy
    /tmp/gguf-venv/bin/python scripts/gen_quant_goldens.py --ggml-src /path/to/ggml \\
        [--out tests/quant/golden/quant_goldens.h]

The ggml library is compiled with `cc -O2` and no -march flags, i.e. without
FMA contraction on x86-64: that is how ggml-base (which llama-quantize uses)
is built, and it is the arithmetic topos reproduces.
"""

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import gguf
    from gguf import quants as gq
    from gguf.constants import GGMLQuantizationType as QT
except ImportError:  # pragma: no cover
    sys.exit("needs the PyPI package gguf (pip install gguf numpy)")

ROW = 256          # elements per input row (one K super-block)
ROWS = 12          # input rows
DOT_ROWS = 10      # rows used by the dot-product goldens

# name, elements per block, bytes per block, gguf-py quantizes?, gguf-py dequantizes?
FORMATS = [
    ("f16", 1, 2, True, True),
    ("bf16", 1, 2, True, True),
    ("q4_0", 32, 18, True, True),
    ("q4_1", 32, 20, True, True),
    ("q5_0", 32, 22, True, True),
    ("q5_1", 32, 24, True, True),
    ("q8_0", 32, 34, True, True),
    ("q8_1", 32, 36, False, False),
    ("q2_K", 256, 84, False, True),
    ("q3_K", 256, 110, False, True),
    ("q4_K", 256, 144, False, True),
    ("q5_K", 256, 176, False, True),
    ("q6_K", 256, 210, False, True),
    ("q8_K", 256, 292, False, False),
    ("mxfp4", 32, 17, True, True),
]
GGUF_TYPE = {"f16": QT.F16, "bf16": QT.BF16, "q4_0": QT.Q4_0, "q4_1": QT.Q4_1, "q5_0": QT.Q5_0,
             "q5_1": QT.Q5_1, "q8_0": QT.Q8_0, "q2_K": QT.Q2_K, "q3_K": QT.Q3_K,
             "q4_K": QT.Q4_K, "q5_K": QT.Q5_K, "q6_K": QT.Q6_K, "mxfp4": QT.MXFP4}
# weight type -> activation partner (ggml vec_dot_type)
PARTNER = {"q4_0": "q8_0", "q5_0": "q8_0", "q8_0": "q8_0", "q4_1": "q8_1", "q5_1": "q8_1",
           "q2_K": "q8_K", "q3_K": "q8_K", "q4_K": "q8_K", "q5_K": "q8_K", "q6_K": "q8_K",
           "mxfp4": "q8_0"}
# byte offsets of the f16 scale fields, kept finite in the random dequant blocks
HALF_FIELDS = {"q4_0": [0], "q4_1": [0, 2], "q5_0": [0], "q5_1": [0, 2], "q8_0": [0],
               "q2_K": [80, 82], "q3_K": [108], "q4_K": [0, 2], "q5_K": [0, 2], "q6_K": [208]}
# MXFP4's E8M0 exponent per block (8 blocks in a row): the denormal scales
# (0, 1), the smallest normal one, around 2^0, and 254, whose levels 8 and 12
# overflow to inf; 255 (NaN in the OCP spec) is refused by ggml's validation
E8M0_EXPONENTS = [0, 1, 2, 119, 127, 128, 140, 254]

# Our own shim: what ggml-quants.c and ggml-cpu/quants.c need from the rest of
# ggml (an abort hook and the f16 lookup table), plus row converters for f16/bf16.
SHIM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "ggml-impl.h"
float ggml_table_f32_f16[1 << 16];
__attribute__((constructor)) static void tg_init_table(void) {
  for (int i = 0; i < 65536; ++i) ggml_table_f32_f16[i] = ggml_compute_fp16_to_fp32((ggml_fp16_t)i);
}
void ggml_abort(const char *file, int line, const char *fmt, ...) {
  fprintf(stderr, "ggml_abort %s:%d %s\n", file, line, fmt); abort();
}
size_t ggml_type_size(enum ggml_type t) { (void)t; abort(); }
size_t ggml_row_size(enum ggml_type t, int64_t n) { (void)t; (void)n; abort(); }
const char *ggml_type_name(enum ggml_type t) { (void)t; return "?"; }
void tg_f32_to_f16_row(const float *x, ggml_fp16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = GGML_FP32_TO_FP16(x[i]);
}
void tg_f32_to_bf16_row(const float *x, ggml_bf16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = GGML_FP32_TO_BF16(x[i]);
}
"""


def gguf_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:
        return "?"


def build_ggml(src, workdir):
    shim = os.path.join(workdir, "tg_shim.c")
    with open(shim, "w") as f:
        f.write(SHIM_C)
    lib = os.path.join(workdir, "libggmlref.so")
    inc = ["-I" + os.path.join(src, "include"), "-I" + os.path.join(src, "src"),
           "-I" + os.path.join(src, "src", "ggml-cpu")]
    objs = []
    for c in [os.path.join(src, "src", "ggml-quants.c"),
              os.path.join(src, "src", "ggml-cpu", "quants.c"), shim]:
        o = os.path.join(workdir, os.path.basename(os.path.dirname(c)) + "_" +
                         os.path.basename(c) + ".o")
        subprocess.check_call(["cc", "-O2", "-fPIC", "-std=gnu11", "-DNDEBUG", *inc, "-c", c,
                               "-o", o])
        objs.append(o)
    subprocess.check_call(["cc", "-shared", "-o", lib, *objs, "-lm"])
    return ctypes.CDLL(lib)


# ---- deterministic inputs ---------------------------------------------------

def splitmix64(state):
    mask = (1 << 64) - 1
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield z ^ (z >> 31)


def uniform(seed, n):
    """n floats in [-1, 1): 24 random bits, exact in f32."""
    g = splitmix64(seed)
    return np.array([((next(g) >> 40) - (1 << 23)) / float(1 << 23) for _ in range(n)],
                    dtype=np.float32)


def inputs():
    i = np.arange(ROW, dtype=np.float64)
    rows = []
    rows.append(np.zeros(ROW))                                   # 0 all zeros
    rows.append(np.full(ROW, 0.75))                              # 1 constant positive
    rows.append(np.full(ROW, -1.25))                             # 2 constant negative
    rows.append(0.1 + 2.0 * np.cos(i + 0.3))                     # 3 test-quantize-fns style
    rows.append(uniform(1, ROW))                                 # 4 uniform [-1, 1)
    u = uniform(2, 4 * ROW).reshape(4, ROW).sum(axis=0)          # 5 weight-like, ~N(0, 0.02)
    rows.append(u * 0.017)
    r = uniform(3, ROW) * 0.01                                   # 6 one huge outlier
    r[37] = 1000.0
    rows.append(r)
    rows.append(-np.abs(uniform(4, ROW)) - 0.001)                # 7 negatives only
    rows.append((i % 32) * 8.5 - 127.0)                          # 8 ties: d = 1 for Q8_0
    rows.append((i % 32) * 0.5 - 8.0)                            # 9 ties: d = 1 for Q4_0
    t = uniform(5, ROW) * 3e-30                                  # 10 tiny / f16-underflowing
    t[:16] = 0
    rows.append(t)
    m = uniform(6, ROW) * 60000.0                                # 11 zero sub-blocks + large
    m[(i // 16) % 3 == 0] = 0
    rows.append(m)
    x = np.stack([np.asarray(r_, dtype=np.float32) for r_ in rows])
    assert x.shape == (ROWS, ROW)
    return x


def mxfp4_edge_inputs():
    """One row of 8 MXFP4 blocks where ggml's float -> uint8_t exponent is out
    of range (undefined in C; the goldens record what ggml's x86-64 build
    does, which topos defines as its behaviour), and its other edges."""
    b = np.zeros((8, 32), dtype=np.float32)
    ramp = np.linspace(-1.0, 1.0, 32, dtype=np.float32)
    b[0, 0], b[0, 1] = 2.0 ** -149, -(2.0 ** -148)            # denormals: e wraps to 232
    b[1, :] = ramp * np.float32(2.0 ** -127)                    # amax 2^-127: e wraps to 253
    b[1, 5] = np.float32(1.5 * 2.0 ** -126)                     # ... to 255 (floor -126)
    b[2, :] = ramp * np.float32(2.0 ** -125)                    # amax 2^-125: e = 0, in range
    b[3, :] = ramp
    b[3, 3] = np.inf                                            # log2f(inf): e = 0
    b[4, :] = ramp * np.float32(1e-39)
    b[4, 30] = -np.inf                                          # ... and the rest near 2^-128
    b[5, :] = ramp * np.float32(3.0)
    b[5, 0], b[5, 17], b[5, 31] = np.nan, np.nan, np.nan        # NaN: skipped, nibble 0
    b[6, :] = ramp * np.float32(1e38)
    b[6, 9], b[6, 20] = np.float32(3.4028235e38), -np.float32(3.4028235e38)  # e = 253: levels 8, 12 are inf
    b[7, :] = ramp * np.float32(700.0)
    b[7, 12] = np.float32(1023.9999)                            # log2f rounds up to 10
    return b.reshape(1, 256)


MXFP4_EDGE_GGUF_PY_BLOCKS = [0, 1, 2, 3, 4, 6, 7]  # numpy's max propagates NaN: block 5 differs there

BULK_ROWS = 256    # rows of the hashed bulk test


def bulk_inputs():
    """BULK_ROWS x ROW values, each exact in f32: a 24-bit integer from splitmix64
    (seed 42, one draw per element, row-major) times 2^-(23 + r % 8), where r is
    the row; draws with low byte 0 are scaled by 64 more (outliers) and draws
    with low 6 bits equal to 1 become 0. tests/quant mirrors this formula."""
    g = splitmix64(42)
    out = np.zeros((BULK_ROWS, ROW), dtype=np.float32)
    for r in range(BULK_ROWS):
        for c in range(ROW):
            z = next(g)
            v = float((z >> 40) - (1 << 23)) * 2.0 ** -(23 + r % 8)
            if z & 0xFF == 0:
                v *= 64.0
            elif z & 0x3F == 1:
                v = 0.0
            out[r, c] = v
    return out


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# ---- references ---------------------------------------------------------------

def ggml_quantize(lib, name, x):
    flat = np.ascontiguousarray(x.reshape(-1), dtype=np.float32)
    n = flat.size
    fmt = {f[0]: f for f in FORMATS}[name]
    out = ctypes.create_string_buffer(n // fmt[1] * fmt[2])  # zeroed: Q8_K leaves bsums of zero blocks
    ptr = flat.ctypes.data_as(ctypes.c_void_p)
    if name == "f16":
        lib.tg_f32_to_f16_row(ptr, out, ctypes.c_int64(n))
    elif name == "bf16":
        lib.tg_f32_to_bf16_row(ptr, out, ctypes.c_int64(n))
    else:
        getattr(lib, "quantize_row_%s_ref" % name)(ptr, out, ctypes.c_int64(n))
    return bytes(out.raw)


def ggml_dequantize(lib, name, data, n):
    out = np.zeros(n, dtype=np.float32)
    buf = ctypes.create_string_buffer(data, len(data))
    getattr(lib, "dequantize_row_%s" % name)(buf, out.ctypes.data_as(ctypes.c_void_p),
                                              ctypes.c_int64(n))
    return out


def ggml_dot(lib, wname, n, w, a):
    s = ctypes.c_float(0)
    fn = getattr(lib, "ggml_vec_dot_%s_%s_generic" % (wname, PARTNER[wname]))
    wb = ctypes.create_string_buffer(w, len(w))
    ab = ctypes.create_string_buffer(a, len(a))
    fn(ctypes.c_int(n), ctypes.byref(s), ctypes.c_size_t(0), wb, ctypes.c_size_t(0), ab,
       ctypes.c_size_t(0), ctypes.c_int(1))
    return np.float32(s.value)


def gguf_quantize(name, x):
    if name == "f16":
        return x.astype(np.float16).tobytes()
    return gq.quantize(x, GGUF_TYPE[name]).tobytes()


def gguf_dequantize(name, data, n):
    if name == "f16":
        return np.frombuffer(data, dtype=np.float16).astype(np.float32)
    raw = np.frombuffer(data, dtype=np.uint8)
    return gq.dequantize(raw, GGUF_TYPE[name]).reshape(-1).astype(np.float32)


def random_blocks(name, seed):
    """Random block bytes (256 elements worth) with finite scale fields."""
    fmt = {f[0]: f for f in FORMATS}[name]
    nbytes = ROW // fmt[1] * fmt[2]
    g = splitmix64(seed)
    data = bytearray((next(g) >> 56) for _ in range(nbytes))

    def finite_half(v):  # exponent 0..29: finite, up to 2^14 scale; subnormals included
        return (v & 0x83FF) | ((v >> 10) % 30) << 10

    if name in ("f16", "bf16"):
        for o in range(0, nbytes, 2):
            v = data[o] | data[o + 1] << 8
            if name == "f16":
                v = finite_half(v)
            elif (v >> 7) & 0xFF == 0xFF:  # bf16: keep finite
                v &= ~(1 << 14)
            data[o], data[o + 1] = v & 0xFF, v >> 8
    elif name == "mxfp4":
        for i, b in enumerate(range(0, nbytes, fmt[2])):
            data[b] = E8M0_EXPONENTS[i % len(E8M0_EXPONENTS)]
    elif name == "q8_K":
        for b in range(0, nbytes, fmt[2]):
            d = np.float32(((next(g) >> 40) - (1 << 23)) / float(1 << 30))
            data[b:b + 4] = d.tobytes()
    else:
        for b in range(0, nbytes, fmt[2]):
            for off in HALF_FIELDS[name]:
                v = finite_half(data[b + off] | data[b + off + 1] << 8)
                data[b + off], data[b + off + 1] = v & 0xFF, v >> 8
    return bytes(data)


# ---- output -----------------------------------------------------------------

def hex_literal(data, indent="    "):
    h = data.hex()
    lines = [h[i:i + 120] for i in range(0, len(h), 120)] or [""]
    return "\n".join(indent + '"' + line + '"' for line in lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ggml-src", required=True, help="a ggml checkout (has src/ggml-quants.c)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "quant", "golden", "quant_goldens.h"))
    ap.add_argument("--ggml-commit", default="unknown",
                    help="commit id to record when --ggml-src is not a git checkout")
    args = ap.parse_args()

    commit = args.ggml_commit
    try:
        commit = subprocess.check_output(["git", "-C", args.ggml_src, "rev-parse", "HEAD"],
                                         stderr=subprocess.DEVNULL).decode().strip()
    except Exception:
        pass

    x = inputs()
    flat = x.reshape(-1)
    n_all = flat.size
    report = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_ggml(args.ggml_src, tmp)
        quant = {}
        for name, be, bb, gq_q, gq_dq in FORMATS:
            q = ggml_quantize(lib, name, x)
            route = "ggml C"
            if gq_q:
                other = gguf_quantize(name, x)
                assert other == q, "gguf-py and ggml C disagree on quantizing " + name
                route = "ggml C == gguf-py"
            quant[name] = q
            report.append("quantize   %-5s %s" % (name, route))

        deq = {}
        for k, (name, be, bb, gq_q, gq_dq) in enumerate(FORMATS):
            if name == "q8_1":
                continue  # ggml has no dequantize_row_q8_1
            data = random_blocks(name, 1000 + k)
            if name in ("f16", "bf16"):
                y = gguf_dequantize(name, data, ROW)
                route = "gguf-py/numpy"
            else:
                y = ggml_dequantize(lib, name, data, ROW)
                route = "ggml C"
                if gq_dq:
                    other = gguf_dequantize(name, data, ROW)
                    assert other.tobytes() == y.tobytes(), "dequantize mismatch for " + name
                    route = "ggml C == gguf-py"
            deq[name] = (data, y)
            report.append("dequantize %-5s %s" % (name, route))

        # dots: weights = input rows 0..DOT_ROWS-1 quantized; activations = the same
        # rows in reverse order quantized to the partner; plus one single-row pair.
        # (Rows 10-11 are left out: 60000-sized values overflow Q8_1's f16 sum.)
        act_src = x[:DOT_ROWS][::-1].copy()
        n_dot = DOT_ROWS * ROW
        dots = []
        for name, _, _, _, _ in FORMATS:
            if name not in PARTNER:
                continue
            partner = PARTNER[name]
            fmt = {f[0]: f for f in FORMATS}
            wb = ROW // fmt[name][1] * fmt[name][2]
            ab = ROW // fmt[partner][1] * fmt[partner][2]
            w = quant[name][:DOT_ROWS * wb]
            a = ggml_quantize(lib, partner, act_src)
            full = ggml_dot(lib, name, n_dot, w, a)
            one = ggml_dot(lib, name, ROW, w[3 * wb:4 * wb], a[4 * ab:5 * ab])
            dots.append((name, full, one))
            report.append("vec_dot    %-5s x %-5s ggml C generic" % (name, partner))

        edge = mxfp4_edge_inputs()
        edge_q = ggml_quantize(lib, "mxfp4", edge)
        with np.errstate(all="ignore"):
            other = gguf_quantize("mxfp4", edge)
        for blk in MXFP4_EDGE_GGUF_PY_BLOCKS:
            assert other[17 * blk:17 * (blk + 1)] == edge_q[17 * blk:17 * (blk + 1)], \
                "mxfp4 edge block %d: gguf-py and ggml C disagree" % blk
        report.append("edges      mxfp4 ggml C (x86-64), gguf-py agreeing but on the NaN block")

    # bulk: hashes of quantized bytes and of per-row dot products
    bulk = bulk_inputs()
    bulk_rev = bulk[::-1].copy()
    bulk_hashes = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_ggml(args.ggml_src, tmp)
        fmt = {f[0]: f for f in FORMATS}
        for name, be, bb, gq_q, gq_dq in FORMATS:
            q = ggml_quantize(lib, name, bulk)
            if gq_q:
                assert gguf_quantize(name, bulk) == q, "bulk: gguf-py and ggml C disagree: " + name
            dot_hash = 0
            if name in PARTNER:
                a = ggml_quantize(lib, PARTNER[name], bulk_rev)
                wb = ROW // be * bb
                ab = ROW // fmt[PARTNER[name]][1] * fmt[PARTNER[name]][2]
                bits = bytearray()
                for r in range(BULK_ROWS):
                    v = ggml_dot(lib, name, ROW, q[r * wb:(r + 1) * wb], a[r * ab:(r + 1) * ab])
                    bits += np.float32(v).tobytes()
                dot_hash = fnv1a64(bits)
            bulk_hashes.append((name, fnv1a64(q), dot_hash))
            report.append("bulk       %-5s ggml C%s" % (name, " == gguf-py" if gq_q else ""))

    out = []
    out.append("/* Generated by scripts/gen_quant_goldens.py from ggml %s and gguf-py %s;"
               % (commit, gguf_version()))
    out.append(" * do not edit. Routes:")
    for line in report:
        out.append(" *   " + line)
    out.append(" * Hex strings are little-endian bytes. */")
    out.append("#ifndef TOPOS_TESTS_QUANT_GOLDENS_H")
    out.append("#define TOPOS_TESTS_QUANT_GOLDENS_H")
    out.append("")
    out.append("#define TG_ROW %d" % ROW)
    out.append("#define TG_ROWS %d" % ROWS)
    out.append("#define TG_DOT_ROWS %d" % DOT_ROWS)
    out.append("")
    out.append("/* TG_ROWS x TG_ROW f32 inputs (see inputs() in the script for each row's case) */")
    out.append("static const char tg_inputs_hex[] =")
    out.append(hex_literal(flat.astype("<f4").tobytes()) + ";")
    out.append("")
    out.append("typedef struct tg_format_golden {")
    out.append("  const char *name;          /* topos_dtype_parse name */")
    out.append("  const char *quantized_hex; /* all TG_ROWS rows quantized by ggml */")
    out.append("  const char *random_hex;    /* TG_ROW elements of random blocks, or NULL */")
    out.append("  const char *dequant_hex;   /* their f32 dequantization by ggml */")
    out.append("} tg_format_golden;")
    out.append("")
    for name, *_ in FORMATS:
        out.append("static const char tg_%s_quantized[] =" % name)
        out.append(hex_literal(quant[name]) + ";")
        if name in deq:
            out.append("static const char tg_%s_random[] =" % name)
            out.append(hex_literal(deq[name][0]) + ";")
            out.append("static const char tg_%s_dequant[] =" % name)
            out.append(hex_literal(deq[name][1].astype("<f4").tobytes()) + ";")
    out.append("")
    out.append("static const tg_format_golden tg_formats[] = {")
    for name, *_ in FORMATS:
        if name in deq:
            out.append('    {"%s", tg_%s_quantized, tg_%s_random, tg_%s_dequant},'
                       % (name, name, name, name))
        else:
            out.append('    {"%s", tg_%s_quantized, NULL, NULL},' % (name, name))
    out.append("};")
    out.append("")
    out.append("/* ggml_vec_dot_<w>_<partner>_generic: weights = input rows 0..TG_DOT_ROWS-1")
    out.append(" * quantized to w; activations = those rows in reverse order quantized to the partner;")
    out.append(" * `one`: weight row 3 with activation row 4 (of the reversed matrix). */")
    out.append("typedef struct tg_dot_golden {")
    out.append("  const char *weight;")
    out.append("  uint32_t full_bits, one_bits;")
    out.append("} tg_dot_golden;")
    out.append("static const tg_dot_golden tg_dots[] = {")
    for name, full, one in dots:
        out.append('    {"%s", 0x%08xu, 0x%08xu}, /* %.9g, %.9g */'
                   % (name, int(np.float32(full).view(np.uint32)),
                      int(np.float32(one).view(np.uint32)), full, one))
    out.append("};")
    out.append("")
    out.append("/* MXFP4 edge blocks (mxfp4_edge_inputs() in the script: exponents out of uint8_t range,")
    out.append(" * infinities, NaNs, FLT_MAX, log2f rounding up) and ggml's bytes for them */")
    out.append("static const char tg_mxfp4_edge_inputs_hex[] =")
    out.append(hex_literal(edge.reshape(-1).astype("<f4").tobytes()) + ";")
    out.append("static const char tg_mxfp4_edge_quantized[] =")
    out.append(hex_literal(edge_q) + ";")
    out.append("")
    out.append("/* Bulk test: TG_BULK_ROWS rows from the formula in bulk_inputs(); FNV-1a 64 of")
    out.append(" * the quantized bytes and of the f32 bits of the per-row dots (weight row r with")
    out.append(" * row r of the reversed matrix quantized to the partner; 0 = no dot). */")
    out.append("#define TG_BULK_ROWS %d" % BULK_ROWS)
    out.append("typedef struct tg_bulk_golden {")
    out.append("  const char *name;")
    out.append("  uint64_t quantized_fnv, dots_fnv;")
    out.append("} tg_bulk_golden;")
    out.append("static const tg_bulk_golden tg_bulk[] = {")
    for name, hq, hd in bulk_hashes:
        out.append('    {"%s", 0x%016xull, 0x%016xull},' % (name, hq, hd))
    out.append("};")
    out.append("")
    out.append("#endif")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(report))
    print("wrote", os.path.abspath(args.out))


if __name__ == "__main__":
    main()
