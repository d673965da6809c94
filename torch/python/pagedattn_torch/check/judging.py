"""One case through one subject, judged.

The subject runs twice on `device`: with NaN garbage in every cache slot no live token reads,
and with finite values there. Every output it gets (out; for V2 exp_sums, max_logits and
tmp_out, which vLLM allocates in the output dtype) lies inside a larger buffer whose guard
regions hold a fixed bit pattern; `out` starts as NaN. After each call the guards and every
input are compared bit for bit with what they were. The garbage run's `out` is judged
against the exact output and the proven bounds, computed on the host by
torch.ops.pagedattn.judge (torch/src/judge.cpp: pagedattn::ref and pagedattn::bound); the
clean run's `out` must equal it bit for bit.

A case is
    exact-class  every element within kernel_error_bound of our numerics,
    vllm-class   every element within the bound of Numerics::vllm_compatible,
    wrong        anything else: an element outside both bounds, a finite element where the
                 exact row is NaN (a non-finite live input) or a non-finite one where it is
                 finite, a write outside an output, a modified input, an output changed by
                 garbage past seq_len, or an exception on a valid case.
"""
import dataclasses
import math
import traceback
from typing import Optional

import torch

from . import cases as cases_mod
from . import formats

EXACT, VLLM, WRONG = "exact-class", "vllm-class", "wrong"
RANK = {EXACT: 0, VLLM: 1, WRONG: 2}
GUARD = 64  # elements of guard region on each side of every output
_GUARD_BITS = {1: 0x5A, 2: 0x7D5A, 4: 0x7FA5A5A5}  # NaN payloads no arithmetic produces


@dataclasses.dataclass
class Verdict:
    verdict: str
    reason: str = ""
    err_ulps: float = 0.0            # max over elements of |out - exact| / ulp(exact)
    over_ours: float = 0.0           # max of |out - exact| / bound (our numerics)
    over_vllm: float = 0.0           # max of |out - exact| / bound (vLLM's numerics)
    where: str = ""                  # the element with the largest error over our bound
    got: Optional[float] = None
    exact: Optional[float] = None
    out: Optional[torch.Tensor] = None  # the garbage run's out (host), for the replay folder


@dataclasses.dataclass
class Reference:
    exact: torch.Tensor      # float64 [S, H, D]
    exact_err: torch.Tensor  # |exact - the exact result| <= this (the reference's own bound)
    ulp: torch.Tensor
    rounded: torch.Tensor    # the exact output rounded to the output dtype, as float64
    bounds: dict             # version -> (ours, vllm), float64 [S, H, D]


def reference(case, profile):
    """The exact output and both bounds for V1 and for V2 at 512-token partitions."""
    exact, exact_err, ulp, bits, bounds = torch.ops.pagedattn.judge(
        case.query, case.key_cache, case.value_cache, case.num_kv_heads, case.scale,
        case.block_tables, case.seq_lens, case.block_size, case.alibi_slopes,
        case.kv_cache_dtype, case.k_scale, case.v_scale, [0, cases_mod.PARTITION_SIZE], profile)
    width = {torch.float32: torch.int32}.get(case.dtype, torch.int16)
    rounded = bits.to(torch.int64)
    if width == torch.int16:
        rounded = torch.where(rounded >= 0x8000, rounded - 0x10000, rounded)
    else:
        rounded = torch.where(rounded >= 2 ** 31, rounded - 2 ** 32, rounded)
    rounded = rounded.to(width).view(case.dtype).double()
    return Reference(exact, exact_err, ulp, rounded, {"v1": (bounds[0, 0], bounds[0, 1]),
                                                      "v2": (bounds[1, 0], bounds[1, 1])})


def _guarded(shape, dtype, device, fill):
    n = 1
    for s in shape:
        n *= s
    buf = torch.empty(n + 2 * GUARD, dtype=dtype, device=device)
    formats.bits_view(buf).fill_(_GUARD_BITS[buf.element_size()])
    inner = buf[GUARD:GUARD + n]
    inner.fill_(fill)
    return buf, inner.view(shape)


def _guard_damage(name, buf, n):
    want = _GUARD_BITS[buf.element_size()]
    bits = formats.bits_view(buf.cpu())
    # Compare in int64: the pattern as a signed value of the element's width.
    w = 8 * buf.element_size()
    want = want - (1 << w) if want >= 1 << (w - 1) else want
    before = (bits[:GUARD].long() != want).nonzero()
    after = (bits[GUARD + n:].long() != want).nonzero()
    parts = []
    if len(before):
        parts.append("%d element(s) before %s (the nearest %d before its start)" % (
            len(before), name, GUARD - int(before.max())))
    if len(after):
        parts.append("%d element(s) after %s (the nearest %d past its end)" % (
            len(after), name, int(after.min()) + 1))
    return "; ".join(parts)


def _device_inputs(case, variant, device, scales):
    key = case.key_cache if variant == "garbage" else case.clean_key_cache
    value = case.value_cache if variant == "garbage" else case.clean_value_cache
    c = {"query": case.query.to(device), "key_cache": key.to(device),
         "value_cache": value.to(device), "num_kv_heads": case.num_kv_heads,
         "scale": case.scale, "block_tables": case.block_tables.to(device),
         "seq_lens": case.seq_lens.to(device), "block_size": case.block_size,
         "max_seq_len": case.max_seq_len,
         "alibi_slopes": None if case.alibi_slopes is None else case.alibi_slopes.to(device),
         "kv_cache_dtype": case.kv_cache_dtype}
    if scales == "tensor":
        form = (scales, torch.tensor([case.k_scale], dtype=torch.float32, device=device),
                torch.tensor([case.v_scale], dtype=torch.float32, device=device))
    else:
        form = (scales, case.k_scale, case.v_scale)
    return c, form


def run_once(subject, version, case, variant, device):
    """One call; returns (out on the host, "" or why the run is wrong)."""
    c, form = _device_inputs(case, variant, device, case.scales)
    given = dict(c, k_scale=form[1], v_scale=form[2])
    snapshot = {k: v.clone() for k, v in given.items() if isinstance(v, torch.Tensor)}
    S, H, D = case.query.shape
    buffers = []
    out_buf, out = _guarded((S, H, D), case.dtype, device, math.nan)
    buffers.append(("out", out_buf, out.numel()))
    states = ()
    if version == "v2":
        P = max(1, -(-case.max_seq_len // cases_mod.PARTITION_SIZE))
        es_buf, exp_sums = _guarded((S, H, P), torch.float32, device, math.nan)
        ml_buf, max_logits = _guarded((S, H, P), torch.float32, device, math.nan)
        tmp_buf, tmp_out = _guarded((S, H, P, D), case.dtype, device, math.nan)
        buffers += [("exp_sums", es_buf, exp_sums.numel()),
                    ("max_logits", ml_buf, max_logits.numel()), ("tmp_out", tmp_buf,
                                                                 tmp_out.numel())]
        states = (exp_sums, max_logits, tmp_out)
    try:
        subject.call(version, out, states, c, form)
        host = out.cpu()  # waits for the device
    except Exception as e:
        last = traceback.extract_tb(e.__traceback__)[-1]
        return None, "raised %s: %s (at %s:%d)" % (type(e).__name__, str(e).splitlines()[0]
                                                  if str(e) else "", last.filename, last.lineno)
    for name, buf, n in buffers:
        damage = _guard_damage(name, buf, n)
        if damage:
            return host, "wrote outside its outputs: " + damage
    for name, before in snapshot.items():
        if not torch.equal(formats.bits_view(given[name].cpu().contiguous()),
                           formats.bits_view(before.cpu().contiguous())):
            return host, "modified its input %s" % name
    return host, ""


def _where(i, shape):
    _, H, D = shape
    return "seq %d head %d d %d" % (i // (H * D), (i // D) % H, i % D)


def judge_outputs(out, ref, version):
    """Classifies one out against the exact output and the two bounds."""
    ours, vllm = ref.bounds[version]
    got = out.double()
    exact = ref.exact
    nan_required = torch.isnan(exact)
    finite_got = torch.isfinite(got)
    overflowed = torch.isinf(ref.rounded) & ~nan_required  # exact past the format's range
    bad_nan = (nan_required & ~torch.isnan(got)) | (~nan_required & ~finite_got & ~overflowed) \
        | (overflowed & (got != ref.rounded))
    diff = torch.where(nan_required | overflowed, torch.zeros_like(got), (got - exact).abs())
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    zero, inf = torch.zeros_like(diff), torch.full_like(diff, math.inf)
    # The ratio is never below the true |got - exact result| / bound, as in C++
    # (testing::ratio_over_bound, testing/include/pagedattn_testing/judge.h): the reference's
    # own error counts, and each rounded step moves to the next double up.
    err = torch.where(nan_required | overflowed, zero,
                      torch.where(torch.isnan(ref.exact_err), inf, ref.exact_err))
    diff_up = torch.where(diff > 0, torch.nextafter(diff, inf), diff)
    e = torch.where(err > 0, torch.nextafter(diff_up + err, inf), diff_up)

    def over(bound):
        b = torch.where(torch.isnan(bound), zero, bound)
        # Equal to the reference's value with its error within the bound: 0 (at most
        # err / b <= 1 off the exact result). e / 0 is inf for e > 0.
        r = torch.where((diff == 0) & (err <= b), zero,
                        torch.where(e == 0, zero, torch.nextafter(e / b, inf)))
        return torch.where(bad_nan, inf, r)

    r_ours, r_vllm = over(ours), over(vllm)
    ulps = torch.where(bad_nan, torch.full_like(diff, math.inf), diff / ref.ulp)
    i = int(torch.argmax(torch.where(torch.isnan(r_ours), torch.full_like(r_ours, math.inf),
                                     r_ours)).item()) if r_ours.numel() else 0
    v = Verdict(EXACT, "", float(ulps.max()) if ulps.numel() else 0.0,
                float(r_ours.max()) if r_ours.numel() else 0.0,
                float(r_vllm.max()) if r_vllm.numel() else 0.0)
    if r_ours.numel():
        v.where = _where(i, out.shape)
        v.got, v.exact = float(got.view(-1)[i]), float(exact.view(-1)[i])
    per_elem_ok = (r_ours <= 1) | (r_vllm <= 1)
    if bool(bad_nan.any()):
        j = int(bad_nan.view(-1).nonzero()[0])
        want = "NaN (a non-finite live input)" if bool(nan_required.view(-1)[j]) else "finite"
        v.verdict = WRONG
        v.reason = "%s where the exact output is %s: got %r at %s" % (
            "a finite value" if want.startswith("NaN") else "a non-finite value", want,
            float(got.view(-1)[j]), _where(j, out.shape))
    elif not bool(per_elem_ok.all()):
        v.verdict = WRONG
        j = int(torch.argmax(torch.minimum(r_ours, r_vllm)).item())
        v.reason = "error over both bounds at %s: got %r, exact %r (%.3g ulp, %.3g x our " \
                   "bound, %.3g x vLLM's)" % (_where(j, out.shape), float(got.view(-1)[j]),
                                              float(exact.view(-1)[j]), float(ulps.view(-1)[j]),
                                              float(r_ours.view(-1)[j]),
                                              float(r_vllm.view(-1)[j]))
    elif not bool((r_ours <= 1).all()):
        v.verdict = VLLM
    return v


def judge_case(subject, version, case, ref, device):
    """Both runs of one case, one Verdict."""
    out, why = run_once(subject, version, case, "garbage", device)
    if why:
        return Verdict(WRONG, why, math.inf, math.inf, math.inf, out=out)
    v = judge_outputs(out, ref, version)
    v.out = out
    if v.verdict == WRONG:
        return v
    clean, why = run_once(subject, version, case, "clean", device)
    if why:
        return Verdict(WRONG, why + " (in the run without NaN garbage)", math.inf, math.inf,
                       math.inf, out=out)
    if not torch.equal(formats.bits_view(clean), formats.bits_view(out)):
        diff = (formats.bits_view(clean) != formats.bits_view(out)).view(-1).nonzero()
        j = int(diff[0])
        return Verdict(WRONG, "output changed by the cache contents past seq_len: %d element(s) "
                       "differ between the runs with and without NaN garbage there, first at "
                       "%s (%r with garbage, %r without)" % (
                           len(diff), _where(j, out.shape), float(out.view(-1)[j]),
                           float(clean.view(-1)[j])), math.inf, math.inf, math.inf, out=out)
    return v
