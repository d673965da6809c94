"""Inputs and reference in the manner of vLLM's tests/kernels/test_attention.py (v0.6.3):
uniform(-scale, scale) queries and caches with scale = head_size**-0.5, ALiBi slopes
from randn, random block ids, sequence lengths random in [1, max] with the last at max;
the reference gathers K and V token by token through the block table and takes the
softmax in fp32. Written for these tests from vLLM's described method, not copied."""
import random

import numpy as np
import torch


def _fp8_e4m3_table():
    """All 256 E4M3 codes decoded exactly (bias 7, subnormals m * 2^-9, S.1111.111 NaN)."""
    vals = np.empty(256, dtype=np.float64)
    for b in range(256):
        e, m = (b >> 3) & 0xF, b & 0x7
        if e == 0xF and m == 0x7:
            mag = np.nan
        elif e == 0:
            mag = m * 2.0 ** -9
        else:
            mag = (8 + m) * 2.0 ** (e - 10)
        vals[b] = -mag if b & 0x80 else mag
    return vals


FP8_E4M3 = _fp8_e4m3_table()
_POS_CODES = np.arange(0, 0x7F)  # +0 .. 448, ascending, NaN (0x7f) excluded
_POS_VALUES = FP8_E4M3[_POS_CODES]


def to_fp8_e4m3(x):
    """float array -> E4M3 codes (uint8), nearest, ties to the even code, saturating."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    hi = np.clip(np.searchsorted(_POS_VALUES, a), 1, len(_POS_VALUES) - 1)
    lo = hi - 1
    dlo, dhi = a - _POS_VALUES[lo], _POS_VALUES[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    pick = np.where(a >= _POS_VALUES[-1], len(_POS_VALUES) - 1, pick)
    codes = _POS_CODES[pick].astype(np.uint8)
    return np.where(np.signbit(np.asarray(x, dtype=np.float64)), codes | 0x80, codes).astype(
        np.uint8)


def fp8_e4m3_decode(codes, dtype):
    """uint8 tensor of E4M3 codes -> `dtype` (exact: every E4M3 value fits f16/bf16/f32)."""
    return torch.from_numpy(FP8_E4M3[codes.numpy()].astype(np.float32)).to(dtype)


class Case:
    """One decode step's arguments, vLLM-test style."""

    def __init__(self, num_seqs, num_heads, num_kv_heads, head_size, block_size, use_alibi,
                 dtype, kv_cache_dtype, max_seq_len, num_blocks, seed=0):
        random.seed(seed)
        torch.manual_seed(seed)
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_size, self.block_size = head_size, block_size
        self.dtype, self.kv_cache_dtype = dtype, kv_cache_dtype
        self.scale = float(1.0 / (head_size ** 0.5))
        self.query = torch.empty(num_seqs, num_heads, head_size, dtype=dtype)
        self.query.uniform_(-self.scale, self.scale)
        self.alibi_slopes = torch.randn(num_heads, dtype=torch.float) if use_alibi else None
        lens = [random.randint(1, max_seq_len) for _ in range(num_seqs)]
        lens[-1] = max_seq_len
        self.max_seq_len = max_seq_len
        self.seq_lens = torch.tensor(lens, dtype=torch.int)
        blocks_per_seq = (max_seq_len + block_size - 1) // block_size
        self.block_tables = torch.tensor(
            [[random.randint(0, num_blocks - 1) for _ in range(blocks_per_seq)]
             for _ in range(num_seqs)], dtype=torch.int)
        fp8 = kv_cache_dtype != "auto"
        elem = 1 if fp8 else torch.tensor([], dtype=dtype).element_size()
        x = 16 // elem
        kshape = (num_blocks, num_kv_heads, head_size // x, block_size, x)
        vshape = (num_blocks, num_kv_heads, head_size, block_size)
        if fp8:  # uniform values rounded to E4M3, as vLLM's _generate_random_fp8
            self.key_cache = torch.from_numpy(to_fp8_e4m3(
                np.random.default_rng(seed).uniform(-self.scale, self.scale, kshape)))
            self.value_cache = torch.from_numpy(to_fp8_e4m3(
                np.random.default_rng(seed + 1).uniform(-self.scale, self.scale, vshape)))
        else:
            self.key_cache = torch.empty(kshape, dtype=dtype).uniform_(-self.scale, self.scale)
            self.value_cache = torch.empty(vshape, dtype=dtype).uniform_(-self.scale, self.scale)
        self.k_scale = self.v_scale = 1.0  # vLLM's test uses the default scale 1.0

    def with_alibi(self, use_alibi, seed=0):
        """Turns ALiBi on (slopes from randn, as vLLM) or off without redrawing the rest."""
        if use_alibi:
            g = torch.Generator().manual_seed(seed)
            self.alibi_slopes = torch.randn(self.num_heads, dtype=torch.float, generator=g)
        else:
            self.alibi_slopes = None
        return self

    def v1_args(self, out):
        return (out, self.query, self.key_cache, self.value_cache, self.num_kv_heads, self.scale,
                self.block_tables, self.seq_lens, self.block_size, self.max_seq_len,
                self.alibi_slopes, self.kv_cache_dtype, self.k_scale, self.v_scale, 0, 0, 0, 64,
                0)

    def v2_states(self, tmp_dtype=None, partition_size=512):
        s, h = self.query.shape[:2]
        p = (self.max_seq_len + partition_size - 1) // partition_size
        exp_sums = torch.empty(s, h, p, dtype=torch.float32)
        max_logits = torch.empty_like(exp_sums)
        # vLLM allocates tmp_out in the output dtype.
        tmp_out = torch.empty(s, h, p, self.head_size, dtype=tmp_dtype or self.dtype)
        return exp_sums, max_logits, tmp_out

    def v2_args(self, out, exp_sums, max_logits, tmp_out):
        a = self.v1_args(out)
        return a[:1] + (exp_sums, max_logits, tmp_out) + a[1:]

    def caches_in_dtype(self):
        """The caches as the reference reads them (fp8 decoded into the dtype, as vLLM's
        test does with convert_fp8 and scale 1)."""
        if self.kv_cache_dtype == "auto":
            return self.key_cache, self.value_cache
        return (fp8_e4m3_decode(self.key_cache, self.dtype),
                fp8_e4m3_decode(self.value_cache, self.dtype))


def _einsum_in(dtype, spec, a, b):
    # torch 1.13 on CPU has no half matmul: form the product in fp32 and round once to the
    # dtype, as a GPU GEMM accumulating in fp32 does for vLLM's test.
    return torch.einsum(spec, a.float(), b.float()).to(dtype)


def ref_masked_attention(query, key, value, scale, attn_mask=None):
    attn = scale * _einsum_in(query.dtype, "qhd,khd->hqk", query, key).float()
    if attn_mask is not None:
        attn = attn + attn_mask.float()
    attn = torch.softmax(attn, dim=-1).to(value.dtype)  # fp32 softmax, then the dtype
    return _einsum_in(value.dtype, "hqk,khd->qhd", attn, value)


def reference(case, block_tables=None):
    """vLLM's ref_single_query_cached_kv_attention: per sequence, gather every token's K
    and V through the block table, repeat KV heads for GQA, ALiBi bias (i - len + 1)."""
    key_cache, value_cache = case.caches_in_dtype()
    tables = (case.block_tables if block_tables is None else block_tables).tolist()
    out = torch.empty_like(case.query)
    nh, nkv, d, bs = case.num_heads, case.num_kv_heads, case.head_size, case.block_size
    for i, seq_len in enumerate(case.seq_lens.tolist()):
        j = torch.arange(seq_len)
        blocks = torch.tensor(tables[i])[j // bs].long()
        offsets = (j % bs).long()
        keys = key_cache[blocks, :, :, offsets, :].reshape(seq_len, nkv, d)
        values = value_cache[blocks, :, :, offsets]  # [seq_len, nkv, d]
        if nh // nkv > 1:
            keys = torch.repeat_interleave(keys, nh // nkv, dim=1)
            values = torch.repeat_interleave(values, nh // nkv, dim=1)
        mask = None
        if case.alibi_slopes is not None:
            bias = (torch.arange(seq_len).int() - seq_len + 1).float()
            mask = case.alibi_slopes.view(-1, 1, 1) * bias.view(1, 1, -1)
        out[i] = ref_masked_attention(case.query[i].unsqueeze(0), keys, values, case.scale,
                                      mask).view(nh, d)
    return out


def vllm_tolerances(kv_cache_dtype):
    """vLLM's test tolerances: atol 1e-3, rtol 1e-5; fp8 caches atol 1e-2 (quantization)."""
    return (1e-2, 1e-5) if kv_cache_dtype != "auto" else (1e-3, 1e-5)
