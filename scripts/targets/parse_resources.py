"""Reads the compile logs of scripts/targets/compile_targets.sh and writes targets.json:
per target and kernel instantiation, what its compiler reported (registers, shared memory
or LDS, spills, stack or scratch, occupancy), plus per target the compiles run, failed and
their time. Schema: reports/README.md ("targets").

usage: /usr/bin/python3 parse_resources.py OUT_DIR [--wave32 gfx1100|gfx1030]
Exit 1 if any compile failed or a device compile reported no kernel.
"""
import datetime
import glob
import json
import os
import re
import subprocess
import sys

# Job name prefix -> (label, target arch, compiler key, warp width, kind), in table order.
TARGETS = {
    "nvcc_sm80": ("sm_80 (nvcc)", "sm_80", "nvcc", 32, "nvidia"),
    "nvcc_sm90": ("sm_90 (nvcc)", "sm_90", "nvcc", 32, "nvidia"),
    "clang_sm80": ("sm_80 (clang)", "sm_80", "clang", 32, "nvidia"),
    "clang_iluvatar": ("sm_80 (clang, __ILUVATAR__: warp 64)", "sm_80", "clang", 64, "iluvatar"),
    "hip_gfx90a": ("gfx90a (hipcc)", "gfx90a", "hipcc", 64, "amd"),
    "hip_gfx1100": ("gfx1100 (hipcc)", "gfx1100", "hipcc", 32, "amd"),
    "hip_gfx1030": ("gfx1030 (hipcc)", "gfx1030", "hipcc", 32, "amd"),
}
# Where the library build keeps ptxas's report of each CUDA object (ptxas_log_launcher.sh,
# the CUDA_COMPILER_LAUNCHER of kernels/CMakeLists.txt's pagedattn_cuda_kernels), under
# BUILD_DIR; compile_targets.sh's NVCC_BUILD names the same folder.
BUILD_REPORTS = os.path.join("kernels", "CMakeFiles", "pagedattn_cuda_kernels.dir", "src")
HOST_CHECKS = {"clanghost_sm80": "clang_sm80", "hiphost_gfx90a": "hip_gfx90a",
               "hiphost_gfx1100": "hip_gfx1100", "hiphost_gfx1030": "hip_gfx1030"}

# NVIDIA occupancy by registers alone, for kThreadsPerBlock = 128 (kernels/include/
# pagedattn/resources.h): registers are allocated per warp in units of 256, 65,536 per SM,
# at most 64 resident warps and 32 blocks per SM on sm_80 and sm_90 (CUDA programming
# guide, "compute capabilities"). Dynamic shared memory depends on seq_len and is not
# counted here (`pagedattn limits`).
THREADS = 128
SCALARS = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16", "hip_bfloat16": "bf16",
           "__hip_bfloat16": "bf16"}


def build_cuda_compiler(build):
    """The CUDA compiler a CMake build folder was configured with (its CMakeCache.txt's
    CMAKE_CUDA_COMPILER), or None."""
    cache = os.path.join(build, "CMakeCache.txt")
    if not os.path.exists(cache):
        return None
    with open(cache) as f:
        m = re.search(r"^CMAKE_CUDA_COMPILER:\w+=(.+)$", f.read(), re.M)
    return m.group(1) if m else None


def grouped_shapes(out):
    """Which grouped instantiations compile_targets.sh compiled: "all", or "sample" followed
    by the compilers that took every shape ("; nvcc: all (the library build's)", "; hipcc:
    all")."""
    p = os.path.join(out, "grouped_shapes.txt")
    return open(p).read().strip() if os.path.exists(p) else "all"


def nvidia_occupancy(regs):
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    warps_per_block = THREADS // 32
    blocks = min(65536 // (per_warp * warps_per_block), 32, 64 // warps_per_block)
    return blocks * warps_per_block / 64, f"{blocks * warps_per_block}/64 warps per SM"


def split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def describe(demangled):
    """'void ns::name<a, b>(args)' -> (name, [a, b]) and the fields known kernels carry."""
    m = re.match(r"(?:void )?(?:[\w:]*::)?(\w+)<(.*)>\(", demangled)
    if not m:
        return {"kernel": demangled, "args": []}
    name, args = m.group(1), split_args(m.group(2))
    d = {"kernel": name, "args": args}
    if name == "attention_kernel" and len(args) == 5:
        d["scalar"] = SCALARS.get(args[0], args[0])
        d["cache"] = "fp8" if args[1] == "unsigned char" else "auto"
        d["head_size"], d["block_size"], d["warp"] = int(args[2]), int(args[3]), int(args[4])
    elif name == "reduce_kernel" and len(args) == 2:
        d["scalar"] = SCALARS.get(args[0], args[0])
        d["warp"] = int(args[1])
    else:  # a kernel this parser does not know yet: its template arguments as written
        for a in args:
            if a in SCALARS:
                d.setdefault("scalar", SCALARS[a])
    return d


def parse_ptxas(text):
    """ptxas -v's report -> a row per kernel and architecture (one log may hold several:
    the library's build compiles sm_80 and sm_90 in one nvcc call). Functions that are not
    entries (CUDA's own non-inlined helpers) have no "Used" line and are left out."""
    rows, cur, arch = {}, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+)'", line)
        if m:
            arch = m.group(2)
            cur = (m.group(1), arch)
            rows[cur] = {"mangled": m.group(1), "arch": arch}
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            cur = (m.group(1), arch)
            rows.setdefault(cur, {"mangled": m.group(1), "arch": arch})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and cur:
            rows[cur].update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)),
                             spill_load_bytes=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            rows[cur]["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            rows[cur]["static_shared_bytes"] = int(s.group(1)) if s else 0
    return [r for r in rows.values() if "registers" in r]


AMD_FIELDS = {"SGPRs": "sgprs", "VGPRs": "registers", "AGPRs": "agprs",
              "ScratchSize [bytes/lane]": "scratch_bytes_per_lane",
              "Occupancy [waves/SIMD]": "waves_per_simd", "SGPRs Spill": "sgpr_spills",
              "VGPRs Spill": "vgpr_spills", "LDS Size [bytes/block]": "static_shared_bytes"}


def parse_amd(text):
    rows, cur = [], None
    for line in text.splitlines():
        m = re.search(r"remark:\s+Function Name: (\S+)", line)
        if m:
            cur = {"mangled": m.group(1)}
            rows.append(cur)
            continue
        m = re.search(r"remark:\s+([A-Za-z][^:]*?): (\d+) \[-Rpass-analysis", line)
        if m and cur is not None and m.group(1) in AMD_FIELDS:
            cur[AMD_FIELDS[m.group(1)]] = int(m.group(2))
    return rows


def demangle(names):
    if not names:
        return {}
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, r.stdout.splitlines()))


def main():
    out = sys.argv[1]
    wave32 = sys.argv[sys.argv.index("--wave32") + 1] if "--wave32" in sys.argv else "gfx1100"
    versions = {}
    vpath = os.path.join(out, "versions.txt")
    if os.path.exists(vpath):
        for line in open(vpath):
            if "\t" in line:
                k, v = line.rstrip("\n").split("\t", 1)
                versions[k] = v
    fpath = os.path.join(out, "nvcc_from_build.txt")
    nvcc_build = open(fpath).read().strip() if os.path.exists(fpath) else None
    targets, kernels, failures, host = {}, [], [], {}
    for rc_path in sorted(glob.glob(os.path.join(out, "logs", "*.rc"))):
        job = os.path.basename(rc_path)[:-3]
        prefix, src = job.split("__", 1)
        rc, secs = (int(x) for x in open(rc_path).read().split())
        log = open(rc_path[:-3] + ".log", errors="replace").read()
        if rc != 0:
            failures.append({"job": job, "rc": rc, "log_tail": log[-3000:]})
        if prefix in HOST_CHECKS:
            h = host.setdefault(HOST_CHECKS[prefix], {"compiles": 0, "failed": 0, "seconds": 0})
            h["compiles"] += 1
            h["failed"] += rc != 0
            h["seconds"] += secs  # wall seconds of the compile (jobs run in parallel)
            continue
        label, arch, comp, warp, kind = TARGETS[prefix]
        t = targets.setdefault(prefix, {
            "target": prefix, "label": label, "arch": arch, "compiler": versions.get(comp, comp),
            "warp": warp, "kind": kind, "files": [], "compiles": 0, "failed": 0, "seconds": 0})
        if comp == "nvcc" and nvcc_build:
            t["reports_from"] = nvcc_build  # the library build compiled it: 0 s here
        t["files"].append(src)
        t["compiles"] += 1
        t["failed"] += rc != 0
        t["seconds"] += secs
        rows = parse_amd(log) if kind == "amd" else parse_ptxas(log)
        if kind != "amd":  # a library build's report holds sm_80 and sm_90: keep this target's
            rows = [r for r in rows if r["arch"] == arch]
        if rc == 0 and not rows:
            failures.append({"job": job, "rc": 0, "log_tail": "no kernel in the report: " +
                             log[-2000:]})
        names = demangle([r["mangled"] for r in rows])
        for r in rows:
            r.update(describe(names.get(r["mangled"], r["mangled"])))
            r["target"], r["file"] = prefix, src
            if kind == "nvidia":
                r["occupancy"], r["occupancy_note"] = nvidia_occupancy(r["registers"])
            elif kind == "amd":
                max_waves = 8 if arch.startswith("gfx9") else 16
                w = r.get("waves_per_simd", 0)
                r["occupancy"] = w / max_waves
                r["occupancy_note"] = f"{w}/{max_waves} waves per SIMD (compiler)"
            else:  # warp-64 code on a 32-wide NVIDIA target: registers only mean something
                r["occupancy"], r["occupancy_note"] = None, "not meaningful (CoreX's own ISA)"
            r["spilled"] = bool(r.get("spill_store_bytes") or r.get("spill_load_bytes") or
                                r.get("vgpr_spills") or r.get("sgpr_spills"))
            if r.get("warp") is not None and r["warp"] != warp:
                failures.append({"job": job, "rc": 0, "log_tail":
                                 f"{r['kernel']} instantiated at warp {r['warp']} on a "
                                 f"warp-{warp} target"})
            kernels.append(r)
    for prefix, t in targets.items():
        ks = [k for k in kernels if k["target"] == prefix]
        t["kernels"] = len(ks)
        t["max_registers"] = max((k["registers"] for k in ks), default=None)
        t["spilling_kernels"] = sum(k["spilled"] for k in ks)
        t["host_side"] = host.get(prefix)
    doc = {
        "tool": "scripts/targets/compile_targets.sh",
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "threads_per_block": THREADS,
        "wave32_target": wave32,
        # "sample" (supported.h's PAGEDATTN_GROUPED_SAMPLE), "all" or "sample; hipcc: all"
        "grouped_shapes": grouped_shapes(out),
        "targets": sorted(targets.values(), key=lambda t: list(TARGETS).index(t["target"])),
        "kernels": kernels,
        "failures": failures,
    }
    path = os.path.join(out, "targets.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)
    for t in doc["targets"]:
        print(f"  {t['label']:<40} {t['kernels']:4d} kernels, max {t['max_registers']} "
              f"registers, {t['spilling_kernels']} spilling, {t['seconds']} s compiling"
              + (f", {t['failed']} FAILED" if t["failed"] else ""))
    for f in failures:
        print(f"parse_resources: FAILED {f['job']} (rc {f['rc']}):\n{f['log_tail'][-1500:]}")
    print(f"parse_resources: wrote {path} ({len(kernels)} kernel rows)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
