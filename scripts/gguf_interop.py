#!/usr/bin/env python3
"""Interop between topos and gguf-py (the reference Python GGUF library).

  gguf_interop.py write PATH   write PATH with gguf-py: metadata of many types
                               and f32 / f16 / q8_0 tensors (tests/io reads it)
  gguf_interop.py check PATH   read PATH (written by topos, same content) with
                               gguf-py, print it and check every value; exit 1
                               on any mismatch

Both directions use the one EXPECTED table below; tests/io/gguf_interop_test.c
mirrors it. The q8_0 tensor is quantized by gguf-py (bit-exact with ggml's
reference) and by topos; their bytes must be identical.
"""
import math
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as VT
from gguf import GGMLQuantizationType as QT

# key -> (gguf value type, element type or None, value)
EXPECTED = {
    "general.architecture": (VT.STRING, None, "llama"),
    "general.name": (VT.STRING, None, "gguf-py interop"),
    "test.u8": (VT.UINT8, None, 200),
    "test.i8": (VT.INT8, None, -5),
    "test.u16": (VT.UINT16, None, 60000),
    "test.i16": (VT.INT16, None, -30000),
    "test.u32": (VT.UINT32, None, 4000000000),
    "test.i32": (VT.INT32, None, -2000000000),
    "test.u64": (VT.UINT64, None, 2**63 + 5),
    "test.i64": (VT.INT64, None, -(2**62)),
    "test.f32": (VT.FLOAT32, None, 1.5),
    "test.f64": (VT.FLOAT64, None, math.pi),
    "test.bool": (VT.BOOL, None, True),
    "test.string": (VT.STRING, None, "h\u00e9llo w\u00f6rld"),
    "test.arr_i32": (VT.ARRAY, VT.INT32, [1, -2, 3]),
    "test.arr_f32": (VT.ARRAY, VT.FLOAT32, [0.5, -2.0, 0.25]),
    "test.arr_str": (VT.ARRAY, VT.STRING, ["<s>", "a", "\u2581the"]),
    "test.arr_bool": (VT.ARRAY, VT.BOOL, [True, False, True]),
}


def tensors():
    """name -> (numpy array in row-major topos shape, ggml type of the file)."""
    f32 = ((np.arange(24, dtype=np.float32) - 12) / 4).reshape(3, 8)
    f16 = (np.arange(32, dtype=np.float32) / 8).astype(np.float16)
    # Exactly reproducible in C: ((i*37) % 64 - 31.5) / 7, each step one f32 rounding.
    k = ((np.arange(64) * 37) % 64).astype(np.float32)
    src = ((k - np.float32(31.5)) / np.float32(7)).astype(np.float32).reshape(2, 32)
    return {"t.f32": (f32, QT.F32), "t.f16": (f16, QT.F16), "t.q8_0.src": (src, QT.F32),
            "t.q8_0": (src, QT.Q8_0)}


def write(path):
    w = gguf.GGUFWriter(path, "llama")
    for key, (vt, sub, value) in EXPECTED.items():
        if key == "general.architecture":
            if not any(key in kv for kv in w.kv_data):  # newer gguf-py adds it itself
                w.add_architecture()
        elif vt == VT.ARRAY:
            w.add_key_value(key, value, VT.ARRAY, sub_type=sub)
        else:
            w.add_key_value(key, value, vt)
    for name, (array, qt) in tensors().items():
        if qt == QT.Q8_0:
            w.add_tensor(name, gguf.quants.quantize(array, QT.Q8_0), raw_dtype=QT.Q8_0)
        else:
            w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path}")


def same(a, b):
    if isinstance(b, float):
        return float(a) == b or abs(float(a) - b) <= abs(b) * 1e-7  # f32 values are exact here
    if isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check(path):
    r = gguf.GGUFReader(path)
    bad = []
    fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
    print(f"{path}: {len(fields)} keys, {len(r.tensors)} tensors")
    for key, (vt, sub, value) in EXPECTED.items():
        f = fields.get(key)
        if f is None:
            bad.append(f"missing key {key}")
            continue
        got = f.contents()
        types = list(f.types)
        print(f"  {key:24s} {[t.name for t in types]} {got!r}")
        if types[0] != vt or (sub is not None and types[1] != sub):
            bad.append(f"{key}: types {types}, expected {vt} {sub}")
        elif not same(got, value):
            bad.append(f"{key}: {got!r} != {value!r}")
    if set(fields) != set(EXPECTED):
        bad.append(f"key sets differ: {sorted(set(fields) ^ set(EXPECTED))}")
    expected = tensors()
    for t in r.tensors:
        print(f"  tensor {t.name:12s} {t.tensor_type.name:5s} ne={list(map(int, t.shape))} "
              f"offset={t.data_offset} bytes={t.n_bytes}")
        if t.name not in expected:
            bad.append(f"unexpected tensor {t.name}")
            continue
        array, qt = expected.pop(t.name)
        if t.tensor_type != qt:
            bad.append(f"{t.name}: type {t.tensor_type.name}, expected {qt.name}")
            continue
        if list(map(int, t.shape)) != list(reversed(array.shape)):
            bad.append(f"{t.name}: ne {list(t.shape)}, expected {list(reversed(array.shape))}")
        if qt == QT.Q8_0:
            want = gguf.quants.quantize(array, QT.Q8_0).tobytes()
            if bytes(t.data.tobytes()) != want:
                bad.append(f"{t.name}: q8_0 bytes differ from gguf-py's quantization")
        elif t.data.tobytes() != array.tobytes():
            bad.append(f"{t.name}: data differs")
    bad += [f"missing tensor {n}" for n in expected]
    for b in bad:
        print("MISMATCH:", b)
    print("ok" if not bad else f"{len(bad)} mismatches")
    return 0 if not bad else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        sys.exit(2)
    sys.exit(write(sys.argv[2]) or 0 if sys.argv[1] == "write" else check(sys.argv[2]))
