"""Known-wrong paged attention, each contract_torch.py with one deviation: the subjects the
check must judge wrong (torch/tests/test_check_subjects.py asserts it, and that each
shrinks to a small case). Each is an IMPL: pagedattn_torch.check.known_wrong:NAME."""
import functools

import torch

from . import contract_torch as ct


def _deviation(fn, **knobs):
    """fn (contract_torch's V1 or V2) with one knob turned; its signature stays vLLM's."""
    d = ct.Deviation()
    for k, v in knobs.items():
        setattr(d, k, v)
    return functools.partial(fn, dev=d)


def _v1(**knobs):
    return _deviation(ct.paged_attention_v1, **knobs)


# V2 whose reduce weights partition p by s_p alone, dropping exp(m_p - M).
v2_no_rescale = _deviation(ct.paged_attention_v2, reduce_rescale=False)
# V1 reading one slot past seq_len (token L joins the softmax).
v1_reads_past_seq_len = _v1(extra_tokens=1)
# V1 mapping query head h to KV head h % num_kv_heads (round robin) instead of
# h // (num_heads / num_kv_heads).
v1_round_robin_gqa = _v1(round_robin_gqa=True)
# V1 whose P.V partial sums (per 16 tokens) are rounded to fp16 and summed in fp16.
v1_fp16_partials = _v1(fp16_partials=True)
# V1 turning a NaN (or inf) key element into a number (torch.nan_to_num) before the dot.
v1_nan_key_to_number = _v1(nan_keys_to_numbers=True)
# V1 reading the whole last block and masking slots past seq_len by a 0 weight: 0 * NaN.
v1_masks_by_multiplying = _v1(whole_blocks=True)
# V1 taking the softmax max over the whole last block (NaN garbage read as -inf): accurate,
# but its rounding depends on what lies past seq_len.
v1_max_over_garbage = _v1(max_over_garbage=True)
# V1 handed a random key cache in place of the real one (vLLM's own test passes it).
v1_random_keys = _v1(random_keys=True)


@functools.wraps(ct.paged_attention_v1)
def v1_writes_past_out(out, *args):
    """The careful V1, then one element stored past the end of `out` (an off-by-one in a
    kernel's store loop): right values, wrong memory."""
    ct.paged_attention_v1(out, *args)
    flat = torch.as_strided(out, (out.numel() + 1,), (1,), out.storage_offset())
    flat[out.numel()] = 0


@functools.wraps(ct.paged_attention_v1)
def v1_scales_query_in_place(out, query, key_cache, value_cache, num_kv_heads, scale, *args):
    """The careful V1 on a query pre-multiplied by scale in place (a saved multiply per
    token): about the right values, but the caller's query is changed."""
    query.mul_(scale)
    ct.paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, 1.0, *args)


ALL = {name: globals()[name] for name in (
    "v2_no_rescale", "v1_reads_past_seq_len", "v1_round_robin_gqa", "v1_fp16_partials",
    "v1_writes_past_out", "v1_scales_query_in_place", "v1_nan_key_to_number", "v1_masks_by_multiplying", "v1_max_over_garbage", "v1_random_keys")}
