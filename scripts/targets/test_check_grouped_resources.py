#!/usr/bin/python3
"""check_grouped_resources.py on made-up targets.json files: it passes only when the hipcc
grouped kernels are the committed list and nothing else keeps memory, and fails on each
wrong variant: a new hipcc spill or scratch, a larger one, a stale list (every shape
compiled), and a stack frame from nvcc or clang; with only the sample through hipcc, the
list's other kernels are not judged; with another hipcc, scratch and VGPR spills still fail
and SGPR spills do not. ctest kernels.grouped_resources_checker."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_grouped_resources.py")
HIPCC = "HIP 5.2.21153, Debian clang version 15.0.6"


def kernel(target, args, **fields):
    k = {"kernel": "grouped_attention_kernel", "target": target, "args": args}
    k.update(fields)
    return k


def targets(root, a_sgpr=20, b_scratch=28, b_vgpr=6, shapes="sample; hipcc: all", hipcc=HIPCC,
            nvcc_stack=0, with_b=True):
    """OUT_DIR with a targets.json of one nvcc and two or three hipcc grouped kernels."""
    os.makedirs(root, exist_ok=True)
    ks = [kernel("nvcc_sm80", ["float", "float", "128", "16", "32"], stack_bytes=nvcc_stack,
                 spill_store_bytes=0, spill_load_bytes=0),
          kernel("hip_gfx90a", ["float", "float", "128", "32", "64"], sgpr_spills=a_sgpr,
                 vgpr_spills=0, scratch_bytes_per_lane=0),
          kernel("hip_gfx90a", ["float", "float", "80", "16", "64"], sgpr_spills=0,
                 vgpr_spills=0, scratch_bytes_per_lane=0)]
    if with_b:
        ks.append(kernel("hip_gfx1030", ["__half", "unsigned char", "128", "32", "32"],
                         sgpr_spills=0, vgpr_spills=b_vgpr, scratch_bytes_per_lane=b_scratch))
    doc = {"grouped_shapes": shapes, "kernels": ks,
           "targets": [{"target": "nvcc_sm80", "compiler": "release 13.0"},
                       {"target": "hip_gfx90a", "compiler": hipcc},
                       {"target": "hip_gfx1030", "compiler": hipcc}]}
    with open(os.path.join(root, "targets.json"), "w") as f:
        json.dump(doc, f)
    return root


def run(out_dir, listing, *extra):
    return subprocess.run([sys.executable, CHECK, out_dir, "--list", listing, *extra],
                          capture_output=True, text=True).returncode


def main():
    with tempfile.TemporaryDirectory() as tmp:
        listing = os.path.join(tmp, "list.json")
        assert run(targets(os.path.join(tmp, "a")), listing, "--update") == 0
        doc = json.load(open(listing))
        assert len(doc["kernels"]) == 2 and doc["hipcc"] == HIPCC, doc
        # --update refuses a sample: the list must hold every shape.
        assert run(targets(os.path.join(tmp, "s0"), shapes="sample"), listing, "--update") == 1
        t = lambda name, **kw: targets(os.path.join(tmp, name), **kw)  # noqa: E731
        unlisted = os.path.join(tmp, "unlisted.json")
        json.dump(dict(doc, kernels={k: v for k, v in doc["kernels"].items() if "gfx90a" not in k}),
                  open(unlisted, "w"))
        cases = [  # (what, targets.json folder, list, the exit status wanted)
            ("the kernels are the list", t("b"), listing, 0),
            ("a spill the list does not hold", t("b2"), unlisted, 1),
            ("more SGPR spills (the register hints gone)", t("c", a_sgpr=29), listing, 1),
            ("more scratch (an unrolled loop rolled again)", t("d", b_scratch=496), listing, 1),
            ("a spill gone: the list is stale", t("e", a_sgpr=0), listing, 1),
            ("a listed kernel not compiled, every shape", t("f", with_b=False), listing, 1),
            ("a listed kernel not compiled, the sample", t("g", with_b=False, shapes="sample"),
             listing, 0),
            ("an nvcc stack frame", t("h", nvcc_stack=16), listing, 1),
            ("another hipcc: SGPR spills are not held",
             t("i", hipcc="HIP 6.2", a_sgpr=29, b_scratch=0, b_vgpr=0), listing, 0),
            ("another hipcc: scratch still fails", t("j", hipcc="HIP 6.2"), listing, 1),
        ]
        wrong = [(what, got, want) for what, out_dir, lst, want in cases
                 if (got := run(out_dir, lst)) != want]
        for what, got, want in wrong:
            print(f"test_check_grouped_resources: FAILED {what}: exit {got}, want {want}")
        print(f"test_check_grouped_resources: {len(cases)} cases, {len(wrong)} failed")
        return 1 if wrong else 0

if __name__ == "__main__":
    sys.exit(main())
