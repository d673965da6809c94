#!/usr/bin/python3
"""Issue 18's "no spills" for the grouped kernels, held on every compile of the targets stage.

Reads OUT_DIR/targets.json (compile_targets.sh) and fails (exit 1), naming each kernel, when a
grouped_attention_kernel instantiation
  - on nvcc (sm_80, sm_90), the library's own CUDA compiler, or clang's CUDA front end (sm_80
    at warp 32, and the warp-64 __ILUVATAR__ build, whose registers ptxas allocates for sm_80,
    not CoreX for BI-V100), has spill stores or loads or a stack frame (local memory: what the
    register allocator could not keep). Clang's were listed, not failed, until the grouped
    kernel's __launch_bounds__(kThreadsPerBlock, 1) (87f29b9) took its 4-12 byte spills away;
  - on hipcc (gfx90a, wave 64, and the wave-32 target) has VGPR spills or scratch (private
    memory per lane, the AMD form of a stack frame).
Listed, not failed: SGPR spills on AMD: with no scratch they go into VGPR lanes
(v_writelane / v_readlane, no memory traffic); gfx90a keeps 5 to 35 of them.
The sample of shapes is the stage's; the library's nvcc build checks every shape
(check_build_spills.py).
(kernels/README.md, "Phases"; the top-level README, "Targets".)

Wrong variant caught: the grouped kernel's former array of G per-head structs (QueryHead:
index, Dest, slope, flags, two scratch pointers), which every compiler kept in memory: on the
targets.json of the clean-clone run at 7a99475 this check fails (exit 1) on all 72 sampled
grouped kernels of the four checked targets (18 each: stack frames of 192-400 bytes on nvcc,
208-400 bytes of scratch per lane on gfx90a and on the wave-32 target; clang had frames of
536-1,000 bytes). A clang kernel given 4 bytes of spill stores in a copy of 87f29b9's
sample targets.json fails it too (shown once).

usage: check_grouped_resources.py [OUT_DIR (default out/targets)]
"""
import json
import os
import sys


def problems(kernel):
    """What the kernel keeps in memory that it should keep in registers ([] if nothing)."""
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


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "out/targets"
    with open(os.path.join(out_dir, "targets.json")) as f:
        data = json.load(f)
    grouped = [k for k in data["kernels"] if k.get("kernel") == "grouped_attention_kernel"]
    bad = 0
    sgpr = {}
    for k in grouped:
        found = problems(k)
        if found:
            bad += 1
            print(f"check_grouped_resources: {k['target']} grouped_attention_kernel<"
                  f"{', '.join(k.get('args', []))}>: {'; '.join(found)}")
        if k.get("sgpr_spills"):
            sgpr.setdefault(k["target"], []).append(k["sgpr_spills"])
    for target, counts in sorted(sgpr.items()):
        print(f"check_grouped_resources: {target}: {len(counts)} grouped kernels spill SGPRs into "
              f"VGPR lanes ({min(counts)} to {max(counts)}), not failed")
    targets = sorted({k["target"] for k in grouped})
    print(f"check_grouped_resources: {len(grouped)} grouped kernels on {len(targets)} targets "
          f"({', '.join(targets)}), {bad} keeping registers in memory")
    if not grouped and data.get("targets"):
        print("check_grouped_resources: no grouped kernel in targets.json: nothing was checked")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
