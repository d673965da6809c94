"""The check's loop: Hypothesis draws Specs (cases.specs), each is built and judged
(judging.py); a wrong case is raised, so Hypothesis shrinks it to a small one, which is
written as a replay folder. Hypothesis (Debian's python3-hypothesis) because it shrinks any
composite strategy without hand-written shrinkers and replays a seed exactly."""
import collections
import os
import re
import time

import torch
from hypothesis import HealthCheck, Phase, Verbosity, errors, given, seed as hyp_seed, settings

from . import cases as cases_mod
from . import judging, replay
from .judging import RANK, WRONG
from .results import Result, VersionResult

DEFAULT_CASES = 200  # per version; measured in torch/README.md ("The check")


class _Wrong(Exception):
    def __init__(self, spec, verdict):
        super().__init__(verdict.reason)
        self.spec, self.verdict = spec, verdict


class CaseCache:
    """Built cases and their references by Spec: V1 and V2 (and a second version's run over
    the same seed) judge the same draws, and the reference is the costly part."""

    def __init__(self, profile, size=512):
        self.profile, self.size, self.items = profile, size, collections.OrderedDict()

    def get(self, spec):
        if spec in self.items:
            self.items.move_to_end(spec)
            return self.items[spec]
        case = cases_mod.build(spec)
        entry = (case, judging.reference(case, self.profile))
        self.items[spec] = entry
        if len(self.items) > self.size:
            self.items.popitem(last=False)
        return entry


def _worst_of(case, v):
    return {"case": case.describe(), "err_ulps": v.err_ulps, "over_ours": v.over_ours,
            "over_vllm": v.over_vllm, "where": v.where, "got": v.got, "exact": v.exact}


def _slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "impl"


def scale_forms(subject, device):
    """The scale forms (floats, one-element tensors) the subject accepts, from a call on
    the smallest case; a subject that accepts neither gets both (and is judged wrong)."""
    case = cases_mod.build(cases_mod.probe_spec())
    forms = []
    for form in ("float", "tensor"):
        case.scales = form
        ok = True
        for version in subject.versions:
            _, why = judging.run_once(subject, version, case, "clean", device)
            ok = ok and not why.startswith("raised")
        if ok:
            forms.append(form)
    return tuple(forms) or ("float", "tensor")


def run_version(subject, version, device, cases, seed, forms, cache, failure_dir, names):
    """One version: `cases` draws, the first wrong one shrunk."""
    r = VersionResult(version)
    state = {"calls": 0, "failed_at": None, "worst_key": None, "last": None}
    start = time.perf_counter()

    def one(spec):
        case, ref = cache.get(spec)
        v = judging.judge_case(subject, version, case, ref, device)
        state["calls"] += 1
        if v.verdict == WRONG:
            if state["failed_at"] is None:
                state["failed_at"] = state["calls"]
            state["last"] = (spec, case, ref, v)
            raise _Wrong(spec, v)
        if RANK[v.verdict] > RANK[r.verdict]:
            r.verdict = v.verdict
        key = (v.over_ours, v.err_ulps)
        if state["worst_key"] is None or key > state["worst_key"]:
            state["worst_key"], r.worst = key, _worst_of(case, v)

    test = settings(max_examples=cases, database=None, deadline=None,
                    phases=(Phase.generate, Phase.shrink), derandomize=False,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    verbosity=Verbosity.quiet, print_blob=False)(
        hyp_seed(seed)(given(cases_mod.specs(forms))(one)))
    final = None
    try:
        test()
    except _Wrong as w:  # Hypothesis re-raises the shrunk case's failure
        final = (w.spec, w.verdict)
    except errors.Flaky:  # the subject is not deterministic: the last failure seen
        final = (state["last"][0], state["last"][3]) if state["last"] else None
    r.seconds = time.perf_counter() - start
    r.cases = state["calls"]
    if final is not None:
        spec, v = final
        case, ref = cache.get(spec)
        r.verdict = WRONG
        r.shrink_steps = state["calls"] - state["failed_at"]
        r.failure = {"reason": v.reason, "case": case.describe(), "size": spec.size(),
                     "spec": spec.to_json(), "err_ulps": v.err_ulps, "over_ours": v.over_ours,
                     "over_vllm": v.over_vllm}
        if failure_dir:
            folder = os.path.join(failure_dir, _slug("%s-%s-%s" % (names[0], names[1], version)))
            meta = replay.write(folder, case, v, version, names[0], names[1], names[2],
                                ref.exact)
            r.failure.update(replay_dir=folder, reproduce=meta["reproduce"],
                             pagedattn_run=meta["pagedattn_run"])
    return r


def judge_one(subject, version, case, device, profile):
    """--case DIR: one saved case, no drawing."""
    r = VersionResult(version)
    start = time.perf_counter()
    ref = judging.reference(case, profile)
    v = judging.judge_case(subject, version, case, ref, device)
    r.seconds, r.cases, r.verdict = time.perf_counter() - start, 1, v.verdict
    if v.verdict == WRONG:
        r.failure = {"reason": v.reason, "case": case.describe(), "err_ulps": v.err_ulps,
                     "over_ours": v.over_ours, "over_vllm": v.over_vllm,
                     "size": case.spec.size() if case.spec else None}
    else:
        r.worst = _worst_of(case, v)
    return r


def new_result(impl, device, profile, seed, cases):
    return Result(impl, str(device), profile, seed, cases, torch.__version__)
