"""Check any paged-attention implementation, on any torch device.

    python3 -m pagedattn_torch.check IMPL [--version v1|v2|both] [--device DEV] [--cases N]
        [--seed S] [--profile NAME] [--json FILE] [--replay-dir DIR] [--case DIR]

    from pagedattn_torch.check import check
    result = check("mymodule:paged_attention_v2", device="cuda")
    assert result.ok, "\\n".join(result.lines())

IMPL: `pagedattn` (this project's operators), `vllm` (vllm._custom_ops), a module holding
paged_attention_v1 / _v2, or `module:function` (any callable with vLLM 0.6.x's signature,
k_scale / v_scale as floats or as one-element tensors). Inputs are made on the host and
moved to DEV; outputs come back and are judged on the host against this project's exact
reference and proven error bound (torch.ops.pagedattn.judge). Verdicts: exact-class,
vllm-class, wrong (judging.py says what each means).
"""
import os

from . import engine, replay
from .judging import EXACT, RANK as RANK_OF, VLLM, WRONG
from .results import Result, VersionResult
from .subjects import UsageError, check_device, check_profile, default_profile, resolve

__all__ = ["check", "Result", "VersionResult", "UsageError", "EXACT", "VLLM", "WRONG",
           "RANK_OF", "DEFAULT_CASES"]

DEFAULT_CASES = engine.DEFAULT_CASES
DEFAULT_REPLAY_DIR = "pagedattn-check-replay"
VERSIONS = ("v1", "v2", "both")


def _check_args(version, cases, seed, json_path, replay_dir, case_dir):
    if version not in VERSIONS:
        raise UsageError("--version: must be one of {v1, v2, both}, got %r" % (version,))
    if not isinstance(cases, int) or isinstance(cases, bool) or cases < 1:
        raise UsageError("--cases: must be an integer >= 1, got %r" % (cases,))
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise UsageError("--seed: must be an integer >= 0, got %r" % (seed,))
    if json_path is not None:
        folder = os.path.dirname(os.path.abspath(json_path))
        if os.path.isdir(json_path) or not os.path.isdir(folder):
            raise UsageError("--json: must name a file in an existing folder, got %r"
                             % (json_path,))
    if replay_dir is not None and os.path.exists(replay_dir) and not os.path.isdir(replay_dir):
        raise UsageError("--replay-dir: must name a folder, got %r, which is a file"
                         % (replay_dir,))
    if case_dir is not None and not os.path.isfile(os.path.join(case_dir, "case.json")):
        raise UsageError("--case: must name a replay folder (with case.json) written by a "
                         "failed check, got %r" % (case_dir,))


def check(impl, version="both", device="cpu", cases=DEFAULT_CASES, seed=0, profile=None,
          json_path=None, replay_dir=DEFAULT_REPLAY_DIR, case_dir=None, echo=None):
    """Judges IMPL and returns a Result (result.ok: no version is wrong; result.lines():
    the report ending with the verdict line). Bad arguments raise UsageError naming the
    argument and the allowed values before anything runs or is written. `echo(line)` is
    called with progress lines. replay_dir=None writes no replay folder."""
    _check_args(version, cases, seed, json_path, replay_dir, case_dir)
    dev = check_device(device)
    subject = resolve(impl, version)
    import pagedattn_torch as pa
    if impl == "pagedattn" and dev.type == "cuda" and not pa.has_cuda_backend():
        raise UsageError("IMPL pagedattn with --device %s: this libpagedattn_torch has no CUDA "
                         "backend (%s); build it against this CUDA-enabled torch with nvcc"
                         % (device, pa.library_path))
    # Checked even when defaulted: the profile files must be found (emulator/profiles, or
    # $EMU_PROFILE_PATH) for the judge's warp width.
    prof = check_profile(profile or default_profile(dev))
    result = engine.new_result(impl, dev, prof, seed, cases)
    previous = pa.get_profile()
    if impl == "pagedattn" and dev.type == "cpu":
        pa.set_profile(prof)  # the emulator (CPU key) runs under the profile judged
    try:
        if case_dir is not None:
            case = replay.load(case_dir)
            for v in subject.versions:
                result.versions.append(engine.judge_one(subject, v, case, dev, prof))
            return _finish(result, json_path)
        forms = engine.scale_forms(subject, dev)
        cache = engine.CaseCache(prof)
        for v in subject.versions:
            if echo:
                echo("checking %s %s on %s (profile %s, seed %d, %d cases, scales as %s)" % (
                    impl, v, dev, prof, seed, cases, " and ".join(forms)))
            result.versions.append(engine.run_version(subject, v, dev, cases, seed, forms, cache,
                                                      replay_dir, (impl, str(dev), prof)))
    finally:
        pa.set_profile(previous)
    return _finish(result, json_path)


def _finish(result, json_path):
    if json_path:
        result.write_json(json_path)
    return result
