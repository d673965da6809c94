#!/usr/bin/python3
"""Issue 18's "no spills" for the grouped kernels, held on every compile of the targets stage.

Reads OUT_DIR/targets.json (compile_targets.sh) and fails (exit 1), naming each kernel, when a
grouped_attention_kernel instantiation
  - on nvcc (sm_80, sm_90), the library's own CUDA compiler, or clang's CUDA front end (sm_80
    at warp 32, and the warp-64 __ILUVATAR__ build, whose registers ptxas allocates for sm_80,
    not CoreX for BI-V100), has spill stores or loads or a stack frame (local memory: what the
    register allocator could not keep). Clang's were listed, not failed, until the grouped
    kernel's __launch_bounds__(kThreadsPerBlock, 1) (87f29b9) took its 4-12 byte spills away;
  - on hipcc (gfx90a, wave 64, and the wave-32 target) spills VGPRs or SGPRs or has scratch
    (private memory per lane, the AMD form of a stack frame) beyond the committed list
    scripts/targets/hip_grouped_spills.json: a kernel it does not hold, or more than it holds.
    hipcc compiles every grouped shape (compile_targets.sh), and a listed kernel that spills
    less or not at all fails too (a stale list: --update, so the docs' figures stay true).
    The list holds gfx90a's SGPR spills into VGPR lanes (no memory traffic; 37 kernels since
    the register hints of kernels/src/platform.cuh, all 153 before); none of gfx1030's
    (its last 4, VGPR spills at 256 VGPRs, went when group_max_heads began to bound the
    partial P.V sums a lane holds; kernels/README.md, "Registers"). A targets.json from
    another hipcc than the list's is held to the old rule only: no scratch, no VGPR spill.
Clang compiles the stage's sample of shapes; nvcc's rows are every shape where the stage took
the library build's ptxas reports (compile_targets.sh, NVCC_BUILD; test.sh's stage does), else
the sample, and the library's nvcc build is held on every shape by check_build_spills.py too.
(kernels/README.md, "Phases" and "Registers"; the top-level README, "Targets".)

Wrong variants caught: the grouped kernel's former array of G per-head structs (QueryHead:
index, Dest, slope, flags, two scratch pointers), which every compiler kept in memory: on the
targets.json of the clean-clone run at 7a99475 this check fails (exit 1) on all 72 sampled
grouped kernels of the four checked targets (18 each: stack frames of 192-400 bytes on nvcc,
208-400 bytes of scratch per lane on gfx90a and on the wave-32 target; clang had frames of
536-1,000 bytes). A clang kernel given 4 bytes of spill stores in a copy of 87f29b9's
sample targets.json fails it too (shown once). On the kernels before the register hints and
static_for (ff830c6), every shape through hipcc, it fails with 178 problems: 146 gfx90a
kernels spill more SGPRs than listed, 23 gfx1030 kernels at block size 32 have scratch or
VGPR spills beyond the list, and 9 listed kernels spill less (shown once; the README's
"Targets" has the figures). The checker itself: kernels.grouped_resources_checker.

usage: check_grouped_resources.py [OUT_DIR (default out/targets)] [--list FILE] [--update]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HIP_FIELDS = ("scratch_bytes_per_lane", "vgpr_spills", "sgpr_spills")


def problems(kernel):
    """What an nvcc or clang kernel keeps in memory that it should keep in registers, and a
    hipcc kernel's scratch and VGPR spills ([] if nothing)."""
    target = kernel["target"]
    out = []
    if target.startswith(("nvcc", "clang")):
        for key, what in (("stack_bytes", "stack frame"), ("spill_store_bytes", "spill stores"),
                          ("spill_load_bytes", "spill loads")):
            if kernel.get(key):
                out.append(f"{kernel[key]} bytes of {what}")
    elif target.startswith("hip"):
        if kernel.get("scratch_bytes_per_lane"):
            out.append(f"{kernel['scratch_bytes_per_lane']} bytes of scratch per lane")
        if kernel.get("vgpr_spills"):
            out.append(f"{kernel['vgpr_spills']} VGPR spills")
    return out


def hip_key(kernel):
    return f"{kernel['target']} grouped_attention_kernel<{', '.join(kernel.get('args', []))}>"


def hip_measured(kernels):
    """{key: {field: count}} for every hipcc grouped kernel."""
    return {hip_key(k): {f: k.get(f) or 0 for f in HIP_FIELDS} for k in kernels}


def hip_compare(measured, listed, all_shapes):
    """Lines for each hipcc kernel that differs from the list ([] when it is the list). With
    the sample only, the list's other kernels are not judged."""
    out = []
    for key, got in sorted(measured.items()):
        want = listed.get(key, dict.fromkeys(HIP_FIELDS, 0))
        more = [f"{f} {want.get(f, 0)} -> {got[f]}" for f in HIP_FIELDS if got[f] > want.get(f, 0)]
        less = [f"{f} {want.get(f, 0)} -> {got[f]}" for f in HIP_FIELDS if got[f] < want.get(f, 0)]
        if more:
            out.append(f"{key}: more than listed: {', '.join(more)}")
        elif less:
            out.append(f"{key}: less than listed (stale list: --update): {', '.join(less)}")
    if all_shapes:
        out += [f"{key}: listed but not compiled" for key in sorted(set(listed) - set(measured))]
    return out


def hip_version(data):
    return next((t.get("compiler") for t in data.get("targets", [])
                 if t["target"].startswith("hip")), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default="out/targets")
    ap.add_argument("--list", default=os.path.join(HERE, "hip_grouped_spills.json"))
    ap.add_argument("--update", action="store_true",
                    help="rewrite the hipcc list from this targets.json (every shape only)")
    a = ap.parse_args()
    with open(os.path.join(a.out_dir, "targets.json")) as f:
        data = json.load(f)
    grouped = [k for k in data["kernels"] if k.get("kernel") == "grouped_attention_kernel"]
    hip = [k for k in grouped if k["target"].startswith("hip")]
    shapes = data.get("grouped_shapes") or "all"
    hip_all = shapes == "all" or "hipcc: all" in shapes
    measured = hip_measured(hip)
    if a.update:
        if not hip_all or not hip:
            print("check_grouped_resources: --update needs every grouped shape through hipcc")
            return 1
        doc = {"hipcc": hip_version(data), "kernels_per_target": {
                   t: sum(k.startswith(t + " ") for k in measured)
                   for t in sorted({k["target"] for k in hip})},
               "why": "hipcc grouped kernels with scratch or VGPR/SGPR spills; "
                      "scripts/targets/check_grouped_resources.py",
               "kernels": {k: v for k, v in measured.items() if any(v.values())}}
        with open(a.list, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"check_grouped_resources: wrote {a.list}: {len(doc['kernels'])} of "
              f"{len(measured)} kernels")
        return 0
    listed = json.load(open(a.list)) if os.path.exists(a.list) else {}
    same_hipcc = bool(hip) and listed.get("hipcc") == hip_version(data)
    bad = 0
    for k in grouped:
        if k["target"].startswith("hip") and same_hipcc:
            continue  # held to the list below
        found = problems(k)
        if found:
            bad += 1
            print(f"check_grouped_resources: {k['target']} grouped_attention_kernel<"
                  f"{', '.join(k.get('args', []))}>: {'; '.join(found)}")
    if hip and same_hipcc:
        for line in hip_compare(measured, listed.get("kernels", {}), hip_all):
            bad += 1
            print(f"check_grouped_resources: {line}")
    elif hip:
        print(f"check_grouped_resources: hipcc here is {hip_version(data)!r}, the list's "
              f"{listed.get('hipcc')!r}: held to no scratch and no VGPR spill only")
    for target in sorted({k["target"] for k in hip}):
        mine = [v for key, v in measured.items() if key.startswith(target + " ")]
        print(f"check_grouped_resources: {target}: {len(mine)} grouped kernels "
              f"({'every shape' if hip_all else 'the sample'}); SGPR spills in "
              f"{sum(1 for v in mine if v['sgpr_spills'])}, VGPR spills in "
              f"{sum(1 for v in mine if v['vgpr_spills'])}, scratch in "
              f"{sum(1 for v in mine if v['scratch_bytes_per_lane'])}")
    targets = sorted({k["target"] for k in grouped})
    print(f"check_grouped_resources: {len(grouped)} grouped kernels on {len(targets)} targets "
          f"({', '.join(targets)}), {bad} problems")
    if not grouped and data.get("targets"):
        print("check_grouped_resources: no grouped kernel in targets.json: nothing was checked")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
