#!/usr/bin/python3
"""check_build_spills.py on made-up builds: it passes only when the build is the list, and
fails on each wrong variant a build can bring: a new spill, a larger one, a list that is
stale; it skips (77) a build without logs or with another nvcc. ctest kernels.nvcc_spills_checker."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_build_spills.py")
GROUPED = "_ZN9pagedattn6detail9cuda_exec24grouped_attention_kernelIfhLi96ELi8ELi32EEEvNS0_8AttnArgsE"
PER_HEAD = "_ZN9pagedattn6detail9cuda_exec16attention_kernelIffLi120ELi16ELi32EEEvNS0_8AttnArgsE"


def entry(name, arch, stack, spill):
    return (f"ptxas info    : Compiling entry function '{name}' for '{arch}'\n"
            f"ptxas info    : Function properties for {name}\n"
            f"    {stack} bytes stack frame, {spill} bytes spill stores, {spill} bytes spill loads\n"
            f"ptxas info    : Used 168 registers, used 1 barriers, 512 bytes cmem[0]\n")


def build(root, grouped_spill, version="release 13.0, V13.0.88", logs=True):
    """A build folder whose nvcc prints VERSION and whose logs hold two kernels on sm_80."""
    os.makedirs(root, exist_ok=True)
    nvcc = os.path.join(root, "nvcc")
    with open(nvcc, "w") as f:
        f.write(f"#!/bin/sh\necho 'Cuda compilation tools, {version}'\n")
    os.chmod(nvcc, 0o755)
    with open(os.path.join(root, "CMakeCache.txt"), "w") as f:
        f.write(f"CMAKE_CUDA_COMPILER:FILEPATH={nvcc}\n")
    src = os.path.join(root, "kernels", "CMakeFiles", "pagedattn_cuda_kernels.dir", "src")
    os.makedirs(src, exist_ok=True)
    if logs:
        with open(os.path.join(src, "cuda_x.cu.o.ptxas.log"), "w") as f:
            f.write(entry(GROUPED, "sm_80", 48 if grouped_spill else 0, grouped_spill) +
                    entry(PER_HEAD, "sm_80", 8, 4))
    return root


def run(build_dir, listing, *extra):
    return subprocess.run([sys.executable, CHECK, build_dir, "--list", listing, *extra],
                          capture_output=True, text=True).returncode


def main():
    with tempfile.TemporaryDirectory() as tmp:
        listing = os.path.join(tmp, "list.json")
        assert run(build(os.path.join(tmp, "a"), 48), listing, "--update") == 0
        doc = json.load(open(listing))
        assert len(doc["kernels"]) == 2, doc
        assert doc["nvcc"] == "release 13.0, V13.0.88", doc
        cases = [
            ("the build is the list", build(os.path.join(tmp, "b"), 48), 0),
            ("a larger spill", build(os.path.join(tmp, "c"), 52), 1),
            ("the spill gone: the list is stale", build(os.path.join(tmp, "d"), 0), 1),
            ("another nvcc", build(os.path.join(tmp, "e"), 48, version="release 12.4, V12.4.1"),
             77),
            ("no logs", build(os.path.join(tmp, "f"), 48, logs=False), 77),
        ]
        # A kernel the list does not hold: drop the grouped one from the list.
        unlisted = os.path.join(tmp, "unlisted.json")
        d = dict(doc, kernels={k: v for k, v in doc["kernels"].items() if "grouped" not in k})
        json.dump(d, open(unlisted, "w"))
        failures = []
        for what, b, want in cases:
            got = run(b, listing)
            if got != want:
                failures.append(f"{what}: exit {got}, want {want}")
        got = run(os.path.join(tmp, "b"), unlisted)
        if got != 1:
            failures.append(f"a spill the list does not hold: exit {got}, want 1")
        for f in failures:
            print("test_check_build_spills: FAILED", f)
        print(f"test_check_build_spills: {len(cases) + 1} cases, {len(failures)} failed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
