"""Element formats the check needs and torch 1.13 lacks: the two fp8 formats of vLLM's caches
(OCP E4M3 "fn": bias 7, no infinity, NaN = S.1111.111, max 448; E5M2: bias 15, inf and NaN at
exponent 31, max 57344), decoded exactly from their formulas, encoded by nearest (ties to the
even code, saturating at the largest finite value); and each format's largest finite value
and smallest subnormal."""
import math

import numpy as np
import torch

E4M3, E5M2 = "fp8_e4m3", "fp8_e5m2"
# kv_cache_dtype strings vLLM accepts, by format ("fp8" is E4M3 in vLLM 0.6.x).
KV_CACHE_DTYPES = {"auto": "auto", "fp8": E4M3, "fp8_e4m3": E4M3, "fp8_e5m2": E5M2}
NAN_CODE = {E4M3: 0x7F, E5M2: 0x7F}


def _decode(code, fmt):
    sign = -1.0 if code & 0x80 else 1.0
    if fmt == E4M3:
        e, m, mbits, bias = (code >> 3) & 0xF, code & 0x7, 3, 7
        if e == 0xF and m == 0x7:
            return math.nan
    else:
        e, m, mbits, bias = (code >> 2) & 0x1F, code & 0x3, 2, 15
        if e == 0x1F:
            return math.nan if m else sign * math.inf
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mbits)
    return sign * (m + 2 ** mbits) * 2.0 ** (e - bias - mbits)


DECODE = {f: np.array([_decode(c, f) for c in range(256)], dtype=np.float64) for f in (E4M3, E5M2)}


def _positive_finite(fmt):
    codes = [c for c in range(0x80) if math.isfinite(DECODE[fmt][c])]
    return np.array(codes, dtype=np.uint8), DECODE[fmt][codes]


_POSITIVE = {f: _positive_finite(f) for f in (E4M3, E5M2)}


def encode_fp8(x, fmt):
    """float64 array -> codes (uint8): nearest, ties to the even code, saturating; NaN -> the
    NaN code; +-inf -> inf codes in E5M2, the NaN code in E4M3 (it has no infinity)."""
    x = np.asarray(x, dtype=np.float64)
    codes, values = _POSITIVE[fmt]
    a = np.abs(np.where(np.isfinite(x), x, 0.0))
    hi = np.clip(np.searchsorted(values, a), 1, len(values) - 1)
    lo = hi - 1
    dlo, dhi = a - values[lo], values[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(codes[lo] % 2 == 0, lo, hi)))
    pick = np.where(a >= values[-1], len(values) - 1, pick)
    out = codes[pick] | np.where(np.signbit(x), 0x80, 0).astype(np.uint8)
    out = np.where(np.isnan(x), NAN_CODE[fmt], out)
    if fmt == E5M2:
        out = np.where(np.isposinf(x), 0x7C, np.where(np.isneginf(x), 0xFC, out))
    else:
        out = np.where(np.isinf(x), NAN_CODE[fmt], out)
    return out.astype(np.uint8)


def decode_table(fmt, device):
    """The 256 values of a format as a float32 tensor (every fp8 value is a float32)."""
    return torch.from_numpy(DECODE[fmt].astype(np.float32)).to(device)


SCALAR = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_MAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0,
        "bfloat16": float.fromhex("0x1.fep127"), E4M3: 448.0, E5M2: 57344.0}
_MIN_SUBNORMAL = {"float32": 2.0 ** -149, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -133,
                  E4M3: 2.0 ** -9, E5M2: 2.0 ** -16}


def format_max(fmt):
    return _MAX[fmt]


def min_subnormal(fmt):
    return _MIN_SUBNORMAL[fmt]


def bits_view(t):
    """The tensor's elements as integers of the same width (bitwise comparison: NaN == NaN)."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t if t.dtype == width else t.view(width)
