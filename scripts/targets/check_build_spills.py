#!/usr/bin/python3
"""Holds the library build's own nvcc compile (every shape, sm_80 and sm_90) to the committed
list of kernels that keep anything in local memory: a stack frame, spill stores or loads.

The build keeps ptxas's -v report beside each CUDA object (ptxas_log_launcher.sh, the
CUDA_COMPILER_LAUNCHER of kernels/CMakeLists.txt). The targets stage compiles only a sample
of the grouped shapes (PAGEDATTN_GROUPED_SAMPLE); this check sees all of them at no extra
compile. It found what the sample hid: grouped kernels at block sizes 8 and 32 and head
sizes 32 to 192 spill 4 to 152 bytes (the sample, head sizes 80/128/256 at block size 16,
has none).

Exit 1, naming each kernel, when
  - a kernel keeps local memory that the list does not hold, or more than it holds (a
    regression: the change that caused it, or an honest --update that says why);
  - a listed kernel keeps less or none (the list is stale: --update, so the README's
    figures stay the build's).
Exit 77 (ctest: skipped) when the build has no such logs (no nvcc) or its nvcc is not the
one the list was made with. --update rewrites the list from the build.

usage: check_build_spills.py BUILD_DIR [--list FILE] [--update]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parse_resources import (BUILD_REPORTS, build_cuda_compiler, demangle,  # noqa: E402
                             describe, parse_ptxas)

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ("stack_bytes", "spill_store_bytes", "spill_load_bytes")
SKIP = 77


def nvcc_version(build):
    """The build's CUDA compiler, as `nvcc --version` names its release."""
    nvcc = build_cuda_compiler(build)
    if not nvcc or not os.path.exists(nvcc):
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    v = re.search(r"release [\d.]+, V[\d.]+", out)
    return v.group(0) if v else None


def measure(logs):
    """{"sm_80 grouped_attention_kernel<float, unsigned char, 96, 8, 32>": {field: bytes}}
    for every kernel of the logs, and the count of kernels per architecture."""
    rows = [r for path in logs for r in parse_ptxas(open(path, errors="replace").read())]
    names = demangle(sorted({r["mangled"] for r in rows}))
    kernels, counts = {}, {}
    for r in rows:
        d = describe(names.get(r["mangled"], r["mangled"]))
        key = f"{r['arch']} {d['kernel']}<{', '.join(d['args'])}>"
        kernels[key] = {f: r.get(f, 0) for f in FIELDS}
        counts[r["arch"]] = counts.get(r["arch"], 0) + 1
    return kernels, counts


def compare(kernels, listed):
    """The problems, one line each ([] when the build is the list)."""
    problems = []
    for key, got in sorted(kernels.items()):
        want = listed.get(key, dict.fromkeys(FIELDS, 0))
        more = [f"{f} {want[f]} -> {got[f]}" for f in FIELDS if got[f] > want[f]]
        less = [f"{f} {want[f]} -> {got[f]}" for f in FIELDS if got[f] < want[f]]
        if more:
            problems.append(f"more local memory than listed: {key}: {', '.join(more)}")
        elif less:
            problems.append(f"less local memory than listed (stale list): {key}: "
                            f"{', '.join(less)}")
    for key in sorted(set(listed) - set(kernels)):
        problems.append(f"listed but not built: {key}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--list", default=os.path.join(HERE, "nvcc_spills.json"))
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    logs = sorted(glob.glob(os.path.join(a.build, BUILD_REPORTS, "*.ptxas.log")))
    if not logs:
        print(f"check_build_spills: no ptxas logs under {a.build} (built without nvcc): skipped")
        return SKIP
    version = nvcc_version(a.build)
    kernels, counts = measure(logs)
    if not kernels:
        print(f"check_build_spills: the {len(logs)} ptxas logs name no kernel")
        return 1
    spilling = {k: v for k, v in kernels.items() if any(v.values())}
    if a.update:
        doc = {"nvcc": version, "kernels_per_arch": counts,
               "why": "kernels of the library's nvcc build that keep a stack frame or spill "
                      "(bytes, ptxas -v); scripts/targets/check_build_spills.py",
               "kernels": spilling}
        with open(a.list, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"check_build_spills: wrote {a.list}: {len(spilling)} of {len(kernels)} kernels")
        return 0
    listed = json.load(open(a.list))
    if listed.get("nvcc") != version:
        print(f"check_build_spills: the build's nvcc ({version}) is not the list's "
              f"({listed.get('nvcc')}): its register allocation differs; skipped")
        return SKIP
    problems = compare(kernels, listed["kernels"])
    for p in problems:
        print(f"check_build_spills: {p}")
    for arch in sorted(counts):
        mine = [k for k in spilling if k.startswith(arch + " ")]
        grouped = sum("grouped_attention_kernel" in k for k in mine)
        print(f"check_build_spills: {arch}: {counts[arch]} kernels, {len(mine)} keep local "
              f"memory ({grouped} grouped, {len(mine) - grouped} others)")
    print(f"check_build_spills: {len(logs)} logs, {'FAILED' if problems else 'as listed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
