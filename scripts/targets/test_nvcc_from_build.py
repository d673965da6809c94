#!/usr/bin/python3
"""compile_targets.sh's NVCC_BUILD: the targets stage takes the library build's ptxas reports
instead of compiling nvcc's six files again, and only when they are the checkout's.

On a real build (BUILD_DIR, configured with nvcc), in a temporary OUT_DIR:
  - taken: no nvcc compile runs (every nvcc job's status line is "0 0"); targets.json holds,
    per target, exactly the build's kernels of that target's architecture (sm_80 rows on the
    sm_80 target only), every grouped shape among them, each with the build's registers;
    grouped_shapes says nvcc took every shape; the target names the build it came from;
  - taken when the nvcc on PATH is a wrapper script that execs the build's (CI's machine
    has /usr/local/bin/nvcc so, first on its PATH, while CMake's cache names the CUDA
    install's own);
  - not taken, with the reason said, when the build's CUDA compiler is another one (absent,
    or a script whose --version says another release) or a report is older than the
    kernels' sources (a made-up build of each kind; ONLY matches no compile, so nothing is
    compiled).
Wrong variants caught: parse_resources.py without its architecture filter (each nvcc target
then holds both architectures' rows: the counts double), and a compile_targets.sh that takes
reports without checking their age or compiler (shown once each when this test was written);
one that compares only the files' real paths refuses the wrapper (CI failed so on 86ae0ea;
this test fails on it with the wrapper case), and one that takes any compiler that answers
--version takes the other release's script (fails the release case; both shown once).

usage: test_nvcc_from_build.py BUILD_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from parse_resources import (BUILD_REPORTS as REPORTS, build_cuda_compiler,  # noqa: E402
                             parse_ptxas)

SCRIPT = os.path.join(HERE, "compile_targets.sh")
failed = 0


def check(ok, what):
    global failed
    if not ok:
        failed += 1
        print("FAIL:", what)


def run(out, build, only, path=None):
    env = dict(os.environ, NVCC_BUILD=build, ONLY=only)
    if path:
        env["PATH"] = path + os.pathsep + env["PATH"]
    r = subprocess.run(["bash", SCRIPT, out], env=env, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    build = os.path.abspath(sys.argv[1])
    reports = os.path.join(build, REPORTS)
    if not os.path.isdir(reports):
        print(f"test_nvcc_from_build: no library reports in {reports} (no nvcc): skipped")
        return 77
    expect = {}  # (arch, mangled) -> the build's row
    for name in sorted(os.listdir(reports)):
        if name.endswith(".ptxas.log"):
            for r in parse_ptxas(open(os.path.join(reports, name)).read()):
                expect[(r["arch"], r["mangled"])] = r
    with tempfile.TemporaryDirectory() as tmp:
        # The build's reports and cache, copied now: newer than every source, so they are
        # taken whatever the build's age, and this test never compiles.
        taken = os.path.join(tmp, "build")
        os.makedirs(os.path.join(taken, REPORTS))
        for name in os.listdir(reports):
            if name.endswith(".ptxas.log"):
                shutil.copy(os.path.join(reports, name), os.path.join(taken, REPORTS, name))
        shutil.copy(os.path.join(build, "CMakeCache.txt"), taken)
        build = taken
        out = os.path.join(tmp, "taken")
        rc, log = run(out, build, "^nvcc_")
        check(rc == 0, f"compile_targets.sh exited {rc}:\n{log[-2000:]}")
        check("nvcc's reports taken from the library build" in log, "reports not taken:\n" + log)
        for name in os.listdir(os.path.join(out, "logs")):
            if name.endswith(".rc"):
                status = open(os.path.join(out, "logs", name)).read().split()
                check(status == ["0", "0"], f"{name}: {status}: nvcc compiled here")
        doc = json.load(open(os.path.join(out, "targets.json")))
        check("nvcc: all" in doc["grouped_shapes"], f"grouped_shapes {doc['grouped_shapes']!r}")
        for target, arch in (("nvcc_sm80", "sm_80"), ("nvcc_sm90", "sm_90")):
            t = [g for g in doc["targets"] if g["target"] == target]
            check(len(t) == 1 and t[0].get("reports_from") == build, f"{target}: {t}")
            rows = [k for k in doc["kernels"] if k["target"] == target]
            want = {m for (a, m) in expect if a == arch}
            got = [k["mangled"] for k in rows]
            check(len(got) == len(set(got)) == len(want) and set(got) == want,
                  f"{target}: {len(got)} rows ({len(set(got))} kernels), the build's {arch} has "
                  f"{len(want)}")
            check(all(k["arch"] == arch for k in rows), f"{target}: rows of another arch")
            check(all(k["registers"] == expect[(arch, k["mangled"])]["registers"] for k in rows
                      if (arch, k["mangled"]) in expect), f"{target}: registers differ")
            # The sample (supported.h's PAGEDATTN_GROUPED_SAMPLE) is 18 grouped kernels a target.
            grouped = [k for k in rows if k.get("kernel") == "grouped_attention_kernel"]
            check(len(grouped) > 18, f"{target}: {len(grouped)} grouped kernels: the sample")
        # The nvcc on PATH a wrapper script of the build's own: the same compiler, taken.
        real = build_cuda_compiler(build)
        for case, body in (("wrapper", f'exec "{real}" "$@"'),
                           ("other", 'echo "Cuda compilation tools, release 99.9, V99.9.0"')):
            bindir = os.path.join(tmp, case + "-bin")
            os.makedirs(bindir)
            with open(os.path.join(bindir, "nvcc"), "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(os.path.join(bindir, "nvcc"), 0o755)
        rc, log = run(os.path.join(tmp, "wrapper-out"), build, "^none$",
                      os.path.join(tmp, "wrapper-bin"))
        check(rc == 0 and "nvcc's reports taken from the library build" in log,
              f"wrapper: the build's nvcc behind a wrapper script refused:\n{log}")
        # Made-up builds: another compiler (absent; a script of another release); the real
        # compiler with reports older than the sources.
        for case, cache, age in (("compiler", "/nonexistent/nvcc", None),
                                 ("release", os.path.join(tmp, "other-bin", "nvcc"), None),
                                 ("age", None, "2000-01-01")):
            fake = os.path.join(tmp, case)
            shutil.copytree(os.path.join(taken, REPORTS), os.path.join(fake, REPORTS))
            text = open(os.path.join(build, "CMakeCache.txt")).read()
            if cache:
                text = re.sub(r"(?m)^CMAKE_CUDA_COMPILER:(\w+)=.*$",
                              lambda m: f"CMAKE_CUDA_COMPILER:{m.group(1)}={cache}", text)
            open(os.path.join(fake, "CMakeCache.txt"), "w").write(text)
            if age:
                for name in os.listdir(os.path.join(fake, REPORTS)):
                    subprocess.run(["touch", "-d", age, os.path.join(fake, REPORTS, name)],
                                   check=True)
            rc, log = run(os.path.join(tmp, case + "-out"), fake, "^none$")
            reason = "its CUDA compiler is" if cache else "is newer than"
            check(rc == 0 and "not taken (" in log and reason in log,
                  f"{case}: a stale or foreign build's reports taken or no reason:\n{log}")
    print(f"test_nvcc_from_build: {'FAILED' if failed else 'passed'} ({failed} failures)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
