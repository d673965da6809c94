"""ctest gpu_bundle.complete: the GPU bundle carries everything its programs load.

usage: /usr/bin/python3 check_bundle.py BUNDLE_DIR
Unpacks BUNDLE_DIR/payload.tar.gz and checks:
  - the four programs, the run script, the torch project and its archive are there;
  - every program's libraries (ldd, with LD_LIBRARY_PATH cleared), and those of the
    torch project's runtime libraries (with LD_LIBRARY_PATH=torch/lib, as run.sh sets it),
    resolve inside the bundle or to the C runtime (libc, libm, libdl, libpthread, librt, the loader), the C++
    runtime (libstdc++, libgcc_s: carried in lib/compat for a machine whose own is older)
    or the CUDA driver (libcuda, loaded by the CUDA runtime itself); nothing is "not found";
  - every program's RPATH is $ORIGIN/../lib (so the folder works wherever it lands; an
    RPATH, not a RUNPATH, because it must also serve the carried libraries' own needs);
  - the build was for sm_80 and sm_90, and the folder is at most 60 MiB (the device tool
    carries 64 MiB with the working tree, about 2 MiB).
Catches: a library left out (ldd then resolves it to /usr/lib here, which the device
lacks), a program without the RPATH, a build for other architectures, a bundle too big
to carry. Shown once by deleting lib/libboost_context* from an unpacked copy: "resolves
outside the bundle".
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

ALLOWED = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libdl|libpthread|librt|libutil|"
                     r"libstdc\+\+|libgcc_s|libcuda|libnvidia-[\w-]+)\.so")
PROGRAMS = ["pagedattn", "pagedattn_gpu_check", "pagedattn_gpu_bench", "pagedattn_device_probe"]
problems = []


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def check_ldd(root, path, library_path=None):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    r = subprocess.run(["ldd", path], capture_output=True, text=True, env=env)
    rel = os.path.relpath(path, root)
    if r.returncode != 0 and "not a dynamic executable" not in r.stdout + r.stderr:
        problems.append(f"{rel}: ldd failed: {r.stderr.strip()}")
        return
    for line in r.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            problems.append(f"{rel}: {line}")
            continue
        m = re.match(r"(\S+) => (\S+)", line)
        name, target = (m.group(1), m.group(2)) if m else (line.split()[0], None)
        if target and os.path.realpath(target).startswith(os.path.realpath(root) + os.sep):
            continue
        if not ALLOWED.match(os.path.basename(name)):
            problems.append(f"{rel}: {name} resolves outside the bundle ({target})")


def main():
    bundle = sys.argv[1]
    for f in ("run.sh", "README.md", "MANIFEST.json", "payload.tar.gz"):
        if not os.path.exists(os.path.join(bundle, f)):
            problems.append(f"{f} missing")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    manifest = json.load(open(os.path.join(bundle, "MANIFEST.json")))
    archs = set(manifest.get("cuda_architectures", "").split())
    if not {"sm_80", "sm_90"} <= archs:
        problems.append(f"built for CUDA architectures {sorted(archs)}, not 80 and 90")
    size = sum(os.path.getsize(os.path.join(bundle, f)) for f in os.listdir(bundle)
               if os.path.isfile(os.path.join(bundle, f)))
    if size > 60 * 2**20:
        problems.append(f"bundle is {size / 2**20:.1f} MiB, over 60 MiB")
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(bundle, "payload.tar.gz")) as t:
            t.extractall(tmp)
        for p in PROGRAMS:
            path = os.path.join(tmp, "bin", p)
            if not os.path.isfile(path):
                problems.append(f"bin/{p} missing")
                continue
            d = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            if not re.search(r"\(RPATH\).*\$ORIGIN/\.\./lib", d):
                problems.append(f"bin/{p}: no RPATH $ORIGIN/../lib")
        for f in ("torch/CMakeLists.txt", "torch/src/CMakeLists.txt",
                  "torch/lib/libpagedattn_bundle.a", "torch/lib/targets.txt",
                  "lib/compat/libstdc++.so.6", "profiles/h200.json"):
            if not os.path.exists(os.path.join(tmp, f)):
                problems.append(f"{f} missing from the payload")
        # The programs as the loader sees them (their RPATH also serves the libraries they
        # load, e.g. lib/libmpfr's libgmp); the torch project's runtime libraries as
        # run.sh loads them (LD_LIBRARY_PATH=torch/lib).
        elves = 0
        for f in sorted(os.listdir(os.path.join(tmp, "bin"))):
            elves += 1
            check_ldd(tmp, os.path.join(tmp, "bin", f))
        tlib = os.path.join(tmp, "torch", "lib")
        for f in sorted(os.listdir(tlib)):
            if ".so" in f and is_elf(os.path.join(tlib, f)):
                elves += 1
                check_ldd(tmp, os.path.join(tlib, f), tlib)
        print(f"check_bundle: {elves} ELF files, {size / 2**20:.1f} MiB, "
              f"commit {manifest.get('commit', '?')[:12]}")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("check_bundle: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
