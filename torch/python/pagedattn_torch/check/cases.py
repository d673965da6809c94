"""The check's cases: a small, printable Spec that Hypothesis draws and shrinks, and the
decode step it builds on the host in vLLM's layout (build()).

What the cases cover, after property_tests/generators.cpp: every dtype (float32, float16,
bfloat16), caches "auto", fp8 E4M3 and E5M2 with k/v scales, every head size and block size,
1-2 KV heads with 1, 2 or 4 query heads each (MHA, GQA; MQA is one KV head), ALiBi, 1-3
sequences with lengths weighted toward 1, block edges and V2's 512-token partition edges,
seq_len 0, max_seq_len past every sequence (trailing empty partitions), physical blocks
distinct in random order or repeated (shared), NaN garbage in every unused cache slot,
logits shaped exactly (spreads to exp's underflow edge and past it, levels far from 0,
ties, one dominant token, partitions whose maxima differ), values uniform, subnormal (with
signed zeros) or near the format's maximum, and NaN or inf in one live input.

Key-path sensitivity: the default ("normal") logits are scale * q.k with q, k uniform in
[-1, 1] and scale = 6 / sqrt(head_size), a spread of about 2 per logit (vLLM's test draws
q, k in +-head_size^-0.5: a spread of about 0.003, a softmax so flat that a random key cache
passes it); the shaped logits put the whole logit into key element 0.
"""
import dataclasses
import math
from typing import Optional, Tuple

import numpy as np
import torch
from hypothesis import strategies as st

from . import formats

PARTITION_SIZE = 512  # vLLM's _PARTITION_SIZE: the V2 signature has no partition argument
HEAD_SIZES = (32, 64, 80, 96, 112, 120, 128, 192, 256)
BLOCK_SIZES = (8, 16, 32)
MAX_TOKENS = 3 * PARTITION_SIZE + 1
LOGITS = ("normal", "spread", "ties", "dominant", "steps")
VALUES = ("uniform", "subnormal", "nearmax")
POISON = ("none", "q", "k", "v", "slope")


@dataclasses.dataclass(frozen=True)
class Spec:
    dtype: str = "float32"
    cache: str = "auto"           # "auto", "fp8_e4m3" or "fp8_e5m2"
    kv_cache_dtype: str = "auto"  # the string the subject gets ("fp8" or "fp8_e4m3" for E4M3)
    k_scale: float = 1.0
    v_scale: float = 1.0
    head_size: int = 32
    block_size: int = 8
    num_kv_heads: int = 1
    gqa: int = 1                  # query heads per KV head
    alibi: bool = False
    seq_lens: Tuple[int, ...] = (1,)
    extra_len: int = 0            # max_seq_len = max(seq_lens) + extra_len
    blocks: str = "distinct"      # or "repeated"
    logits: str = "normal"
    span: float = 1.0             # shaped logits: the spread
    offset: float = 0.0           # shaped logits: the level
    q_lanes: str = "uniform"      # shaped logits: q elements 1.. (their keys are 0)
    values: str = "uniform"
    poison: str = "none"          # one live input made non-finite
    poison_value: float = math.nan
    scales: str = "float"         # k_scale/v_scale as floats or one-element tensors
    seed: int = 0

    @property
    def num_heads(self):
        return self.num_kv_heads * self.gqa

    @property
    def max_seq_len(self):
        return max(self.seq_lens) + self.extra_len

    def size(self):
        """What "small" means for a shrunk case."""
        return {"num_seqs": len(self.seq_lens), "num_heads": self.num_heads,
                "num_kv_heads": self.num_kv_heads, "head_size": self.head_size,
                "block_size": self.block_size, "max_seq_len": self.max_seq_len,
                "tokens": sum(self.seq_lens)}

    def __str__(self):
        s = "{%s cache=%s" % (self.dtype, self.cache)
        if self.cache != "auto":
            s += " (%s) k_scale=%g v_scale=%g" % (self.kv_cache_dtype, self.k_scale, self.v_scale)
        s += " D=%d B=%d kv_heads=%d gqa=%d%s seq_lens=[%s] max_seq_len=%d blocks=%s logits=%s" % (
            self.head_size, self.block_size, self.num_kv_heads, self.gqa,
            " alibi" if self.alibi else "", ",".join(map(str, self.seq_lens)), self.max_seq_len,
            self.blocks, self.logits)
        if self.logits != "normal":
            s += "(span=%g offset=%g q_lanes=%s)" % (self.span, self.offset, self.q_lanes)
        s += " v=%s" % self.values
        if self.poison != "none":
            s += " poison=%s:%r" % (self.poison, self.poison_value)
        return s + " scales=%s seed=%d}" % (self.scales, self.seed)

    def to_json(self):
        d = dataclasses.asdict(self)
        d["seq_lens"] = list(self.seq_lens)
        d["poison_value"] = repr(self.poison_value)
        return d

    @staticmethod
    def from_json(d):
        d = dict(d)
        d["seq_lens"] = tuple(d["seq_lens"])
        d["poison_value"] = float(d["poison_value"])
        return Spec(**d)


def _seq_len(block_size):
    """Weighted toward 1, block edges and partition edges (as generators.cpp's gen_seq_len)."""
    b, p = block_size, PARTITION_SIZE
    edges = sorted({e for e in (b - 1, b, b + 1, 2 * b - 1, 2 * b + 1, p - 1, p, p + 1,
                                2 * p - 1, 2 * p, 2 * p + 1, 3 * p + 1) if 1 <= e <= MAX_TOKENS})
    live = st.one_of(st.just(1), st.integers(1, b + 2), st.sampled_from(edges),
                     st.integers(1, MAX_TOKENS))
    return st.one_of(live, live, live, live, live, live, st.just(0))


@st.composite
def specs(draw, scale_forms=("float", "tensor")):
    """Every case the check draws; shrinks toward float32, head 32, block 8, one sequence
    of one token, uniform values, no poison."""
    dtype = draw(st.sampled_from(tuple(formats.SCALAR)))
    cache = draw(st.sampled_from(("auto",) * 4 + (formats.E4M3, formats.E5M2)))
    kv, ks, vs = "auto", 1.0, 1.0
    if cache != "auto":
        kv = draw(st.sampled_from(("fp8", "fp8_e4m3"))) if cache == formats.E4M3 else "fp8_e5m2"
        ks = draw(st.sampled_from((1.0, 0.5, 2.0, 0.0625, 3.0)))
        vs = draw(st.sampled_from((1.0, 0.25, 4.0, 0.1)))
    head_size = draw(st.sampled_from(HEAD_SIZES))
    if cache != "auto" and head_size % 16:
        head_size = 128  # fp8 keys come in 16-byte chunks: 120 is no fp8 layout
    block_size = draw(st.sampled_from(BLOCK_SIZES))
    num_kv_heads = draw(st.integers(1, 2))
    gqa = draw(st.sampled_from((1, 2, 4)))
    alibi = draw(st.sampled_from((False, False, False, True)))
    seq_lens = tuple(draw(st.lists(_seq_len(block_size), min_size=1, max_size=3)))
    if max(seq_lens) == 0:
        seq_lens = (1,) + seq_lens[1:]
    extra_len = draw(st.sampled_from((0, 0, 0, 0, 1, PARTITION_SIZE, 2 * PARTITION_SIZE + 3)))
    blocks = draw(st.sampled_from(("distinct", "distinct", "distinct", "repeated")))
    logits = draw(st.sampled_from(("normal",) * 3 + ("spread", "spread", "ties", "dominant",
                                                     "steps")))
    span, offset, q_lanes = 1.0, 0.0, "uniform"
    if logits != "normal":
        # Spreads past fp32 exp's underflow edge (exp(-103.97) is its last subnormal) and
        # levels where exp of an unshifted logit overflows (> 88.7).
        span = draw(st.sampled_from((1.0, 10.0, 30.0, 80.0, 88.0, 89.0, 104.0, 110.0, 200.0)))
        offset = draw(st.sampled_from((0.0, 100.0, -100.0, 1000.0, -3000.0)))
        q_lanes = draw(st.sampled_from(VALUES))
    values = draw(st.sampled_from(VALUES))
    poison = draw(st.sampled_from(("none",) * 6 + ("q", "k", "v", "slope")))
    if poison == "slope" and not alibi:
        poison = "k"
    poison_value = draw(st.sampled_from((math.nan, math.inf, -math.inf))) if poison != "none" \
        else math.nan
    scales = draw(st.sampled_from(tuple(scale_forms)))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Spec(dtype, cache, kv, ks, vs, head_size, block_size, num_kv_heads, gqa, alibi,
                seq_lens, extra_len, blocks, logits, span, offset, q_lanes, values, poison,
                poison_value, scales, seed)


@dataclasses.dataclass
class Case:
    """One decode step's inputs on the host, twice: `garbage` caches hold NaN in every slot
    no live token reads, `clean` caches hold finite values there; all else is shared."""
    query: torch.Tensor
    key_cache: torch.Tensor
    value_cache: torch.Tensor
    clean_key_cache: torch.Tensor
    clean_value_cache: torch.Tensor
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    alibi_slopes: Optional[torch.Tensor]
    num_kv_heads: int
    scale: float
    block_size: int
    max_seq_len: int
    kv_cache_dtype: str
    k_scale: float
    v_scale: float
    scales: str = "float"
    spec: Optional[Spec] = None

    @property
    def dtype(self):
        return self.query.dtype

    @property
    def fp8(self):
        return self.kv_cache_dtype != "auto"

    def describe(self):
        if self.spec is not None:
            return str(self.spec)
        s, h, d = self.query.shape
        return "{%s kv_cache_dtype=%s D=%d B=%d heads=%d kv_heads=%d seq_lens=%s (loaded)}" % (
            str(self.dtype).replace("torch.", ""), self.kv_cache_dtype, d, self.block_size, h,
            self.num_kv_heads, self.seq_lens.tolist())


def _class_values(rng, cls, shape, fmt, scale, out_fmt):
    """Values of a class in format `fmt` (fp8 values times their dequantization scale)."""
    if cls == "subnormal":
        tiny = formats.min_subnormal(fmt) * scale
        pick = rng.integers(0, 4, shape)
        mag = tiny * rng.integers(1, 65, shape) * np.where(rng.integers(0, 2, shape), 1, -1)
        return np.where(pick == 0, 0.0, np.where(pick == 1, -0.0, mag))
    if cls == "nearmax":
        # A finite exact output must be representable for "finite in, finite out" to be a
        # claim: fp8 times its scale stays within 0.75 of the output's maximum (fp8 rounding
        # moves a value by at most 2^-3 relative).
        mx = formats.format_max(fmt) * scale
        if fmt != out_fmt:
            mx = min(mx, 0.75 * formats.format_max(out_fmt))
        sign = np.where(rng.integers(0, 2, shape), 1.0, -1.0)
        return mx * (0.5 + 0.5 * np.abs(rng.uniform(-1, 1, shape))) * sign
    return rng.uniform(-1, 1, shape)


def _store(values, fmt, scale, dtype):
    """float64 values -> a host tensor in the storage format (fp8: codes of values / scale)."""
    if fmt in (formats.E4M3, formats.E5M2):
        return torch.from_numpy(formats.encode_fp8(values / scale, fmt))
    return torch.from_numpy(np.ascontiguousarray(values)).to(dtype)


def build(spec):
    """The decode step of a Spec, deterministic in spec.seed."""
    rng = np.random.default_rng(spec.seed)
    S, H, KV, D, B = len(spec.seq_lens), spec.num_heads, spec.num_kv_heads, spec.head_size, \
        spec.block_size
    dtype = formats.SCALAR[spec.dtype]
    fmt = spec.dtype if spec.cache == "auto" else spec.cache
    x = 16 // (1 if spec.cache != "auto" else torch.tensor([], dtype=dtype).element_size())
    ks, vs = (spec.k_scale, spec.v_scale) if spec.cache != "auto" else (1.0, 1.0)
    width = max(1, -(-spec.max_seq_len // B))
    need = [-(-n // B) for n in spec.seq_lens]
    if spec.blocks == "repeated":  # prefix sharing: logical blocks drawn from a small pool
        pool = max(1, sum(need) // 2)
        ids = [rng.integers(0, pool, n).tolist() for n in need]
        used = pool
    else:
        perm = rng.permutation(sum(need)).tolist()
        ids, at = [], 0
        for n in need:
            ids.append(perm[at:at + n])
            at += n
        used = sum(need)
    num_blocks = used + 2  # two spare blocks no sequence reads: table padding points there
    spare = num_blocks - 1
    tables = np.full((S, width), spare, dtype=np.int32)
    for s, row in enumerate(ids):
        tables[s, :len(row)] = row
    live = np.zeros((num_blocks, B), dtype=bool)
    for s, n in enumerate(spec.seq_lens):
        for t in range(n):
            live[tables[s, t // B], t % B] = True

    # Logical caches [block, kv head, slot, d] in float64, then the storage layouts.
    k = rng.uniform(-1, 1, (num_blocks, KV, B, D))
    v = _class_values(rng, spec.values, (num_blocks, KV, B, D), fmt, vs, spec.dtype)
    q = rng.uniform(-1, 1, (S, H, D))
    scale = float(np.float32(6.0 / math.sqrt(D)))
    if spec.logits != "normal":
        # q = (1, lanes), k = (x_t, 0, ...): the logit of token t is x_t exactly (rounded to
        # the key's format), lanes meet zero keys.
        scale = 1.0
        q[:, :, 0] = 1.0
        q[:, :, 1:] = _class_values(rng, spec.q_lanes, (S, H, D - 1), spec.dtype, 1.0,
                                    spec.dtype)
        k[:, :, :, 1:] = 0.0
        for s, n in enumerate(spec.seq_lens):
            if n == 0:
                continue
            dominant = int(rng.integers(0, n))
            steps = 10.0 * rng.integers(0, 8, n // PARTITION_SIZE + 1)
            for kvh in range(KV):
                u = rng.uniform(0, 1, n)
                t = np.arange(n)
                xt = {"spread": spec.offset - spec.span * u,
                      "ties": np.full(n, spec.offset),
                      "dominant": spec.offset + np.where(t == dominant, spec.span, 0.0),
                      "steps": spec.offset + steps[t // PARTITION_SIZE] + u}[spec.logits]
                k[tables[s, t // B], kvh, t % B, 0] = xt
    alibi = rng.standard_normal(H).astype(np.float32) if spec.alibi else None

    if spec.poison != "none":
        live_seqs = [s for s, n in enumerate(spec.seq_lens) if n > 0]
        s = live_seqs[int(rng.integers(0, len(live_seqs)))]
        t = int(rng.integers(0, spec.seq_lens[s]))
        h, d = int(rng.integers(0, H)), int(rng.integers(0, D))
        blk, slot = tables[s, t // B], t % B
        if spec.poison == "q":
            q[s, h, d] = spec.poison_value
        elif spec.poison == "k":
            k[blk, h // spec.gqa, slot, d] = spec.poison_value
        elif spec.poison == "v":
            v[blk, h // spec.gqa, slot, d] = spec.poison_value
        else:
            alibi[h] = spec.poison_value

    def layouts(kk, vv):
        key = kk.reshape(num_blocks, KV, B, D // x, x).transpose(0, 1, 3, 2, 4)
        value = vv.transpose(0, 1, 3, 2)
        return (_store(np.ascontiguousarray(key), fmt, ks, dtype).contiguous(),
                _store(np.ascontiguousarray(value), fmt, vs, dtype).contiguous())

    clean_k, clean_v = layouts(k, v)
    dead = ~live[:, None, :, None]  # [block, 1, slot, 1]
    garbage_k, garbage_v = layouts(np.where(dead, np.nan, k), np.where(dead, np.nan, v))
    return Case(
        query=torch.from_numpy(q).to(dtype).contiguous(),
        key_cache=garbage_k, value_cache=garbage_v,
        clean_key_cache=clean_k, clean_value_cache=clean_v,
        block_tables=torch.from_numpy(tables), seq_lens=torch.tensor(spec.seq_lens,
                                                                    dtype=torch.int32),
        alibi_slopes=None if alibi is None else torch.from_numpy(alibi),
        num_kv_heads=KV, scale=scale, block_size=B, max_seq_len=spec.max_seq_len,
        kv_cache_dtype=spec.kv_cache_dtype, k_scale=float(np.float32(ks)),
        v_scale=float(np.float32(vs)), scales=spec.scales, spec=spec)


def probe_spec():
    """The smallest case: what a subject is first called with (to learn its scale form)."""
    return Spec()
