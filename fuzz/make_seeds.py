#!/usr/bin/python3
"""Writes the seed corpora under fuzz/corpus/ (small valid inputs of each reader; the
fuzzers mutate from there). Run with /usr/bin/python3 (numpy); the output is committed."""
import io
import json
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = b"\n@@file@@\n"  # fuzz_replay.cpp's kSeparator


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


rng = np.random.default_rng(0)
write("npy", "f4_2x3", npy_bytes(rng.standard_normal((2, 3)).astype("<f4")))
write("npy", "i4_5", npy_bytes(np.arange(5, dtype="<i4")))
write("npy", "u1_scalar", npy_bytes(np.array(7, dtype="|u1")))
write("npy", "f2_empty", npy_bytes(np.zeros((0, 4), dtype="<f2")))
v2 = io.BytesIO()
np.lib.format.write_array(v2, np.ones((2, 2), dtype="<u2"), version=(2, 0))
write("npy", "u2_v2", v2.getvalue())

for name in ("a100", "bi-v100", "h200"):
    with open(os.path.join(HERE, "..", "emulator", "profiles", name + ".json"), "rb") as f:
        write("profile", name, f.read())

write("audit_config", "grid", json.dumps({"num-heads": [4, 8], "num_kv_heads": 4,
                                          "seq-lens": 70, "distribution": ["dominant"],
                                          "exp-mode": "up", "kernel": "v2"}).encode())
write("audit_config", "replay", json.dumps({"replay": "dir", "kv-cache-dtype": "fp8",
                                            "k-scale": 0.5, "fail-on": ["nonfinite"],
                                            "bf16": True}).encode())


def replay(scalar, cache, alibi):
    S, H, KVH, D, B, NB = 2, 2, 1, 32, 8, 4
    q = rng.uniform(-1, 1, (S, H, D)).astype(scalar)
    elem = np.dtype(cache if cache != "fp8" else "|u1")
    x = 16 // elem.itemsize
    if cache == "fp8":
        k = rng.integers(0, 120, (NB, KVH, D // x, B, x), dtype=np.uint8)
        v = rng.integers(0, 120, (NB, KVH, D, B), dtype=np.uint8)
    else:
        k = rng.uniform(-1, 1, (NB, KVH, D // x, B, x)).astype(cache)
        v = rng.uniform(-1, 1, (NB, KVH, D, B)).astype(cache)
    tables = np.array([[2, 0], [1, 3]], dtype="<i4")
    lens = np.array([13, 5], dtype="<i4")
    parts = [q, k, v, tables, lens] + ([np.array([0.5, 0.25], dtype="<f4")] if alibi else [])
    return SEP.join(npy_bytes(a) for a in parts)


# First byte: bit 0 --bf16, bits 1-2 kv-cache-dtype (0 auto, 1 fp8_e4m3, 2 fp8_e5m2).
write("replay", "f32_alibi", b"\x00" + replay("<f4", "<f4", True))
write("replay", "f16", b"\x00" + replay("<f2", "<f2", False))
write("replay", "f16_fp8_e4m3", b"\x02" + replay("<f2", "fp8", False))

for i in range(4):
    write("host_api", "random%d" % i, rng.integers(0, 256, 512, dtype=np.uint8).tobytes())
