"""A failing case as a replay folder in `pagedattn run`'s format, and back.

    DIR/query.npy key_cache.npy value_cache.npy block_tables.npy seq_lens.npy [alibi_slopes.npy]
        the inputs the subject failed on (NaN garbage in unused cache slots); bfloat16 arrays
        as '<u2' bits (`pagedattn run --bf16`), fp8 caches as '|u1' codes
    DIR/clean/...   the same inputs with finite values in the unused slots
    DIR/case.json   the scalars (scale, k_scale, v_scale, kv_cache_dtype, max_seq_len), the
                    Spec, the verdict and the commands
    DIR/out_subject.npy  the subject's out;  DIR/exact.npy  the exact output (float64)
"""
import json
import os
import shlex
import sys

import numpy as np
import torch

from . import cases as cases_mod

_FILES = ("query", "key_cache", "value_cache", "block_tables", "seq_lens", "alibi_slopes")


def _to_numpy(t):
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)
    return t.contiguous().numpy()


def _from_numpy(a, dtype):
    if dtype == torch.bfloat16 and a.dtype == np.uint16:  # bfloat16 bits
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _save_inputs(folder, case, key, value):
    os.makedirs(folder, exist_ok=True)
    arrays = {"query": case.query, "key_cache": key, "value_cache": value,
              "block_tables": case.block_tables, "seq_lens": case.seq_lens,
              "alibi_slopes": case.alibi_slopes}
    for name in _FILES:
        path = os.path.join(folder, name + ".npy")
        if arrays[name] is None:
            if os.path.exists(path):
                os.remove(path)
            continue
        np.save(path, _to_numpy(arrays[name]))


def run_command(folder, case, version, profile):
    """`pagedattn run` on the folder: this project's kernels on the failing inputs."""
    cmd = [os.environ.get("PAGEDATTN_CLI", "pagedattn"), "run", folder, "--out", os.path.join(folder, "pagedattn"),
           "--kernel", version, "--profile", profile, "--scale", repr(case.scale)]
    if case.kv_cache_dtype != "auto":
        cmd += ["--kv-cache-dtype", case.kv_cache_dtype, "--k-scale", repr(case.k_scale),
                "--v-scale", repr(case.v_scale)]
    if case.dtype == torch.bfloat16:
        cmd.append("--bf16")
    return " ".join(shlex.quote(c) for c in cmd)


def check_command(impl, version, device, profile, folder):
    """The one line that judges the subject on this folder again: this interpreter, with the
    environment that found the package and the library."""
    env = ["%s=%s" % (k, shlex.quote(os.environ[k])) for k in ("PYTHONPATH", "PAGEDATTN_TORCH_LIB")
           if os.environ.get(k)]
    cmd = [sys.executable or "python3", "-m", "pagedattn_torch.check", impl, "--version", version,
           "--device", device, "--profile", profile, "--case", folder]
    return " ".join(env + [shlex.quote(c) for c in cmd])


def write(folder, case, verdict, version, impl, device, profile, exact):
    _save_inputs(folder, case, case.key_cache, case.value_cache)
    _save_inputs(os.path.join(folder, "clean"), case, case.clean_key_cache,
                 case.clean_value_cache)
    if verdict.out is not None:
        np.save(os.path.join(folder, "out_subject.npy"), _to_numpy(verdict.out))
    np.save(os.path.join(folder, "exact.npy"), exact.numpy())
    meta = {
        "implementation": impl, "version": version, "device": device, "profile": profile,
        "verdict": verdict.verdict, "reason": verdict.reason,
        "case": case.describe(), "spec": case.spec.to_json() if case.spec else None,
        "scale": case.scale, "k_scale": case.k_scale, "v_scale": case.v_scale,
        "kv_cache_dtype": case.kv_cache_dtype, "max_seq_len": case.max_seq_len,
        "scales": case.scales, "dtype": str(case.dtype).replace("torch.", ""),
        "reproduce": check_command(impl, version, device, profile, folder),
        "pagedattn_run": run_command(folder, case, version, profile),
    }
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def load(folder):
    """A replay folder written by write() -> Case (no Spec unless case.json has one)."""
    from .subjects import UsageError
    path = os.path.join(folder, "case.json")
    try:
        with open(path) as f:
            meta = json.load(f)
        dtype = {"float32": torch.float32, "float16": torch.float16,
                 "bfloat16": torch.bfloat16}[meta["dtype"]]
        arrays = {}
        for sub in ("", "clean"):
            for name in _FILES:
                p = os.path.join(folder, sub, name + ".npy")
                if os.path.exists(p):
                    arrays[(sub, name)] = np.load(p)
        q = _from_numpy(arrays[("", "query")], dtype)
        cache_dtype = dtype if meta["kv_cache_dtype"] == "auto" else torch.uint8
        key = _from_numpy(arrays[("", "key_cache")], cache_dtype)
        value = _from_numpy(arrays[("", "value_cache")], cache_dtype)
        ckey = _from_numpy(arrays[("clean", "key_cache")], cache_dtype)
        cvalue = _from_numpy(arrays[("clean", "value_cache")], cache_dtype)
        alibi = arrays.get(("", "alibi_slopes"))
        spec = cases_mod.Spec.from_json(meta["spec"]) if meta.get("spec") else None
        return cases_mod.Case(
            query=q, key_cache=key, value_cache=value, clean_key_cache=ckey,
            clean_value_cache=cvalue,
            block_tables=torch.from_numpy(arrays[("", "block_tables")].astype(np.int32)),
            seq_lens=torch.from_numpy(arrays[("", "seq_lens")].astype(np.int32)),
            alibi_slopes=None if alibi is None else torch.from_numpy(alibi.astype(np.float32)),
            num_kv_heads=int(key.shape[1]), scale=float(meta["scale"]),
            block_size=int(key.shape[3]), max_seq_len=int(meta["max_seq_len"]),
            kv_cache_dtype=meta["kv_cache_dtype"], k_scale=float(meta["k_scale"]),
            v_scale=float(meta["v_scale"]), scales=meta.get("scales", "float"), spec=spec)
    except (OSError, KeyError, ValueError) as e:
        raise UsageError("--case %s: not a replay folder written by the check (%s: %s)"
                         % (folder, type(e).__name__, e)) from None
