"""Paged attention in plain PyTorch, written from vLLM's contract (fp32 arithmetic): the kind
of fallback a port is patched with, done carefully. The check judges V1 at least
vllm-class and V2 (whose partials go through tmp_out in the output dtype, as vLLM allocates
it) at least vllm-class; torch/tests/test_check_subjects.py asserts both. known_wrong.py
builds its wrong variants from the same code with one deviation each.

Contract (per sequence s with L = seq_lens[s] tokens, query head h, KV head h // (H / KV)):
    token t is slot t % B of block block_tables[s][t // B]; keys [blk, kvh, d/x, slot, x],
    values [blk, kvh, d, slot]; fp8 codes decode and are scaled by k_scale / v_scale;
    x_t = scale * q.k_t + slope_h * (t - L + 1);  out = sum_t softmax(x)_t v_t;  L = 0: 0;
    a NaN or inf in a live q, k, v element or slope makes the whole row NaN; nothing past
    seq_len is read. V2: 512-token partitions, each writing max_logits (m_p), exp_sums
    (s_p = sum exp(x - m_p)) and tmp_out (the partition's normalized output); the reduce
    weights partition p by s_p exp(m_p - M).
"""
import math

import torch

from . import formats

PARTITION_SIZE = 512


class Deviation:
    """The knobs known_wrong.py turns (all off: the careful implementation)."""
    extra_tokens = 0          # read this many slots past seq_len
    round_robin_gqa = False   # KV head h % KV instead of h // (H / KV)
    nan_keys_to_numbers = False
    fp16_partials = False     # P.V partial sums per block rounded to and summed in fp16
    whole_blocks = False      # read every slot of the last block and mask by multiplying
    max_over_garbage = False  # the softmax max over every slot of the last block
    reduce_rescale = True     # the reduce's exp(m_p - M)
    random_keys = False       # a random key cache in place of the real one


CAREFUL = Deviation()


def _value(x):
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


def _gather(cache, table, tokens, block_size, is_key):
    t = torch.arange(tokens, device=cache.device)
    blocks = table[torch.div(t, block_size, rounding_mode="floor")].long()
    slots = t % block_size
    if is_key:  # [L, KV, D/x, x] -> [L, KV, D]
        g = cache[blocks, :, :, slots, :]
        return g.reshape(tokens, cache.shape[1], -1)
    return cache[blocks, :, :, slots]  # [L, KV, D]


def _dequant(x, kv_cache_dtype, scale):
    if kv_cache_dtype == "auto":
        return x.float()
    table = formats.decode_table(formats.KV_CACHE_DTYPES[kv_cache_dtype], x.device)
    return table[x.long()] * scale


def weighted_sum(w, v):
    """sum_t w[h, t] v[t, h, :] in fp32 with weights w summing to 1 per row: each (h, d)
    column is first scaled by a power of two that brings its largest |v| to at most 2^100,
    so no partial sum overflows when values are near FLT_MAX (exact scaling: powers of two)."""
    big = v.abs().amax(dim=0)  # [H, D]
    shift = torch.where(big > 2.0 ** 100, torch.floor(torch.log2(big)) - 100,
                        torch.zeros_like(big))
    f = torch.exp2(-shift)
    out = torch.einsum("ht,thd->hd", w, v * f)
    return out / f


def _logits(q, k, slopes, scale, live):
    """x[h, t] = scale q_h.k_t + slope_h (t - live + 1) for every token read."""
    logits = torch.einsum("hd,thd->ht", q, k) * scale
    if slopes is not None:
        t = torch.arange(k.shape[0], device=q.device)
        logits = logits + slopes[:, None] * (t - live + 1).float()
    return logits


def _poisoned(q, k, v, slopes, live):
    """The rows that read a non-finite live input (the contract: those rows are NaN)."""
    bad = ~torch.isfinite(q).all(dim=1) | ~torch.isfinite(k[:live]).all(dim=2).all(dim=0) \
        | ~torch.isfinite(v[:live]).all(dim=2).all(dim=0)
    if slopes is not None:
        bad = bad | ~torch.isfinite(slopes)
    return bad


def _sequence(query, key_cache, value_cache, num_kv_heads, table, L, block_size,
              kv_cache_dtype, k_scale, v_scale, dev):
    """q [H, D], keys and values [n, H, D] (fp32) of one sequence, and the number of tokens
    taken as live (L, but for the deviations)."""
    H = query.shape[0]
    live = L + dev.extra_tokens
    n = -(-L // block_size) * block_size if (dev.whole_blocks or dev.max_over_garbage) else live
    k = _dequant(_gather(key_cache, table, n, block_size, True), kv_cache_dtype, k_scale)
    v = _dequant(_gather(value_cache, table, n, block_size, False), kv_cache_dtype, v_scale)
    if dev.nan_keys_to_numbers:
        k = torch.nan_to_num(k)
    heads = torch.arange(H, device=query.device)
    kv_of = heads % num_kv_heads if dev.round_robin_gqa else \
        torch.div(heads, H // num_kv_heads, rounding_mode="floor")
    return query.float(), k[:, kv_of], v[:, kv_of], live


def _softmax_v(logits, v, live, dev):
    """Normalized softmax weights over tokens < live, times v, in fp32; with the max m and
    the exp-sum s of that partition."""
    if dev.max_over_garbage:  # every slot of the last block, NaN read as -inf
        m = torch.where(torch.isnan(logits), torch.full_like(logits, -math.inf),
                        logits).amax(dim=1, keepdim=True)
    else:
        m = logits[:, :live].amax(dim=1, keepdim=True)
    if dev.whole_blocks:  # mask by multiplying: 0 * NaN is NaN (vLLM bug #641)
        e = torch.exp(logits - m) * (torch.arange(logits.shape[1], device=v.device) < live)
    else:
        e, v = torch.exp(logits[:, :live] - m), v[:live]
    s = e.sum(dim=1, keepdim=True)
    w = e / s
    if not dev.fp16_partials:
        return weighted_sum(w, v), m.squeeze(1), s.squeeze(1)
    acc = torch.zeros(v.shape[1], v.shape[2], dtype=torch.float16, device=v.device)
    for b in range(0, v.shape[0], 16):
        acc = acc + torch.einsum("ht,thd->hd", w[:, b:b + 16], v[b:b + 16]).half()
    return acc.float(), m.squeeze(1), s.squeeze(1)


def _sequences(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens,
               block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale, dev):
    """Per sequence with tokens: (s, L, q, k, v, live, logits, slopes); sequences of no
    tokens get out = 0 (the contract's empty sum) and are skipped."""
    ks, vs = _value(k_scale), _value(v_scale)
    if dev.random_keys:
        key_cache = _random_like(key_cache, kv_cache_dtype)
    slopes = None if alibi_slopes is None else alibi_slopes.float()
    for s, L in enumerate(seq_lens.tolist()):
        if L == 0:
            out[s].zero_()
            continue
        q, k, v, live = _sequence(query[s], key_cache, value_cache, num_kv_heads,
                                  block_tables[s], L, block_size, kv_cache_dtype, ks, vs, dev)
        yield s, L, q, k, v, live, _logits(q, k, slopes, scale, live), slopes


# vLLM's names and full signatures (the trailing tp_rank and block-sparse arguments are
# taken and ignored), so `pagedattn_torch.check.contract_torch` is an IMPL; `dev` is how
# known_wrong.py turns one knob.
def paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                       seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                       v_scale, tp_rank=0, blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0, *,
                       dev=CAREFUL):
    for s, L, q, k, v, live, logits, slopes in _sequences(
            out, query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens,
            block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale, dev):
        y, _, _ = _softmax_v(logits, v, live, dev)
        y[_poisoned(q, k, v, slopes, live)] = math.nan
        out[s].copy_(y.to(out.dtype))


def paged_attention_v2(out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache,
                       num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                       alibi_slopes, kv_cache_dtype, k_scale, v_scale, tp_rank=0,
                       blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0, *,
                       dev=CAREFUL):
    P = PARTITION_SIZE
    for s, L, q, k, v, live, logits, slopes in _sequences(
            out, query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens,
            block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale, dev):
        parts = -(-L // P)
        for p in range(parts):  # partitions past seq_len write nothing (as vLLM)
            lo, hi = p * P, min((p + 1) * P, L)
            o, m, e = _softmax_v(logits[:, lo:hi], v[lo:hi], hi - lo, dev)
            max_logits[s, :, p] = m
            exp_sums[s, :, p] = e
            tmp_out[s, :, p] = o.to(tmp_out.dtype)
        m = max_logits[s, :, :parts]
        big_m = m.amax(dim=1, keepdim=True)
        w = exp_sums[s, :, :parts] * (torch.exp(m - big_m) if dev.reduce_rescale else 1.0)
        w = w / w.sum(dim=1, keepdim=True)
        y = weighted_sum(w, tmp_out[s, :, :parts].float().transpose(0, 1))
        y[_poisoned(q, k, v, slopes, live)] = math.nan
        out[s].copy_(y.to(out.dtype))


def _random_like(cache, kv_cache_dtype):
    """A cache of the same shape whose elements are drawn (with replacement, fixed seed) from
    the cache's own finite elements: the same distribution, none of the structure."""
    flat = cache.reshape(-1)
    finite = flat[torch.isfinite(_dequant(flat, kv_cache_dtype, 1.0))]
    g = torch.Generator(device="cpu").manual_seed(1234)
    pick = torch.randint(0, max(1, finite.numel()), (flat.numel(),), generator=g)
    return finite[pick.to(cache.device)].reshape(cache.shape)
