#!/usr/bin/python3
"""Source mutation testing of the kernels against the property suite (issues 7 and 21).

Mutates kernels/src/*.cuh and kernels/include/pagedattn/lse_state.h one mutant at a time,
with operators modelled on Mull's catalogue: arithmetic and comparison swaps, constant
changes (off-by-one bounds included), removed statements (barriers included), swapped
min/max and dropped fp8 dequantization scales (x * a.v_scale -> x). Each mutant is written into a copy of the sources (BUILD/property_tests/mutant)
and runs through up to three stages, cheapest first, stopping at the first kill:
  1. f32_w32: only the f32/warp-32 instantiation is rebuilt (pagedattn_mutant_props) and
     the suite runs with PAGEDATTN_PROP_ONLY_F32_H200=1, every case through it. Skipped
     when that instantiation's object file is byte-identical to the unmutated one (the
     mutant does not change its code).
  2. all: every instantiation (f32/f16/bf16 x warp 32/64, each with its own and the fp8
     caches, and the grouped ones) is rebuilt from the mutated sources (pagedattn_mutant_props_all: the program
     built entirely from them) and the whole suite runs, every dtype and both profiles
     (warp 32 on h200, warp 64 on bi-v100). Which instantiations the mutant changed is read
     off their object files; when no object built from the mutated copy differs from the
     unmutated build (and no library object compiled from the original sources includes the
     file), the mutant is equivalent by construction: the program is the same.
  3. racecheck: survivors that changed f32_w32 run again under the racecheck hazard mode
     (pagedattn_mutant_props_race, a few cases of three properties): a removed barrier, or
     lanes that all store to one slot, race without changing a value.
Each run is prop_v1_first_launch_just_above_48k alone first (it needs a fresh process),
then the rest, under EMU_CHECKS=memcheck,synccheck. A mutant is killed when any property
fails (or the run crashes, traps or times out), survived when all pass, stillborn when it
does not compile. Survivors named in mutation_equivalent.json are equivalent, with the
reason; those in mutation_survivors.json are known holes (still survived; --check, CI,
fails on others). Writes --out (after every mutant), with the commit and source digest it
ran on (scripts/source_digest.py).

Sharding: --shard K/N runs every N-th mutant of the selection from the K-th (disjoint
shards that together are the selection); `mutate.py merge A.json B.json ... --out M.json`
folds shard results, refusing shards of other sources, selections or settings and any
mutant twice, and names each survivor by the two lists as they stand at the merge (their
digest is recorded: a reason written after an hours-long run counts without rerunning it;
what each mutant did in the stages is never changed). One build folder runs one shard at a time (a lock; on one machine give
parallel shards their own build folders).

  /usr/bin/python3 property_tests/mutate.py --build build             # the whole catalogue
  /usr/bin/python3 property_tests/mutate.py --build build --shard 2/8 # one shard of it
  /usr/bin/python3 property_tests/mutate.py --build build --shard 2/8 --resume  # go on with it
  /usr/bin/python3 property_tests/mutate.py merge shards/*.json --out out/properties/mutation.json
  /usr/bin/python3 property_tests/mutate.py --build build --sample 88 # every 6th
  /usr/bin/python3 property_tests/mutate.py --build build --stable-sample 16  # CI's sample
  /usr/bin/python3 property_tests/mutate.py --list                    # ids and diffs
  /usr/bin/python3 property_tests/mutate.py summary out/properties/mutation.json  # the quoted figures
"""
import argparse
import fcntl
import glob
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import source_digest  # noqa: E402  (the one definition of the commit and source digest)

# runner.cuh is compiled into launch_emu.cpp (the library), not into the rebuilt
# instantiations: its mutants would never be built, so they are left out, not counted.
NOT_IN_INSTANTIATION = {"kernels/src/runner.cuh"}
TARGETS = sorted(
    os.path.join("kernels/src", f) for f in os.listdir(os.path.join(ROOT, "kernels/src"))
    if f.endswith(".cuh") and os.path.join("kernels/src", f) not in NOT_IN_INSTANTIATION) + [
        "kernels/include/pagedattn/lse_state.h"]
# The instantiation files, each an object of the mutant build: emu_<t>_w<w>.cpp (per-head)
# and emu_grouped_<t>_w<w>.cpp (Options::grouped). INST_FILE matches both: when it matched
# only the first, the grouped objects were never compared, so a mutant of
# grouped_attention_kernel.cuh that changed only them read as unchanged code.
INST_FILE = r"emu_[a-z0-9_]+_w\d+\.cpp"
INSTANTIATIONS = sorted(re.sub(r"^emu_|\.cpp$", "", f)
                        for f in os.listdir(os.path.join(ROOT, "kernels/src"))
                        if re.fullmatch(INST_FILE, f))
FIRST = "f32_w32"  # stage 1's instantiation (PAGEDATTN_PROP_ONLY_F32_H200 selects it)
EQUIVALENT = os.path.join(ROOT, "property_tests", "mutation_equivalent.json")
# Known holes: survivors that change behaviour but that no property can see (with the reason).
# They count as survived in the score; --check (CI) fails only on survivors not listed here.
SURVIVORS = os.path.join(ROOT, "property_tests", "mutation_survivors.json")

# (name, regex, replacement); regexes see code with comments blanked out.
BINARY = [
    ("ror", r"(?<=\s)<(?=\s)", "<="), ("ror", r"(?<=\s)<=(?=\s)", "<"),
    ("ror", r"(?<=\s)>(?=\s)", ">="), ("ror", r"(?<=\s)>=(?=\s)", ">"),
    ("ror", r"(?<=\s)==(?=\s)", "!="), ("ror", r"(?<=\s)!=(?=\s)", "=="),
    ("aor", r"(?<=\s)\+(?=\s)", "-"), ("aor", r"(?<=\s)-(?=\s)", "+"),
    ("aor", r"(?<=\s)\*(?=\s)", "/"), ("aor", r"(?<=\s)/(?=\s)", "*"),
    ("aor", r"(?<=\s)\+=(?=\s)", "-="),
    ("minmax", r"\bfmaxf\b", "fminf"), ("minmax", r"\bfminf\b", "fmaxf"),
    ("minmax", r"\bgroup_max\b", "group_sum"),
]
SKIP_LINE = re.compile(r"^\s*(#|static_assert|template\s*<|using\s|namespace\s|}|struct\s)")


def strip_comments(line):
    i = line.find("//")
    return line if i < 0 else line[:i] + " " * (len(line) - i)


def mutants_of(path, scales=False):
    out = []
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    for n, raw in enumerate(lines):
        code = strip_comments(raw)
        if not code.strip() or SKIP_LINE.match(code) or "#pragma" in code:
            continue
        if scales:  # dropped dequantization scales: x * a.v_scale -> x (the fp8 scale forgotten)
            for m in re.finditer(r"\s\*\s(a\.[kv]_scale)\b", code):
                out.append(("scale", n, m.start(), m.end(), ""))
            continue
        for op, rx, rep in BINARY:
            for m in re.finditer(rx, code):
                out.append((op, n, m.start(), m.end(), rep))
        # constants: integer literals + 1 (off-by-one bounds), 0 <-> 1 for float literals
        for m in re.finditer(r"(?<![\w.])(\d+)(?![\w.])", code):
            out.append(("const", n, m.start(), m.end(), str(int(m.group(1)) + 1)))
        for m in re.finditer(r"(?<![\w.])(0\.f|1\.f|0\.0f|1e-6f)(?![\w])", code):
            rep = {"0.f": "1.f", "1.f": "0.f", "0.0f": "1.0f", "1e-6f": "0.f"}[m.group(1)]
            out.append(("const", n, m.start(), m.end(), rep))
        # removed statements: barriers, and single-line assignments / calls
        s = code.strip()
        if re.match(r"^(__syncthreads|__syncwarp)\s*\(.*\);$", s) or \
           re.match(r"^[A-Za-z_][\w\[\]\.\->]*(\[[^\]]*\])?\s*(=|\+=|-=|\*=)\s[^;]*;$", s):
            out.append(("remove", n, 0, len(raw), ""))
    res = []
    for op, n, a, b, rep in out:
        line = lines[n]
        new = line[:a] + rep + line[b:] if op != "remove" else "  // (statement removed)"
        mid = "%s:%d:%d:%s" % (path, n + 1, a + 1, op)
        res.append({"id": mid, "file": path, "line": n + 1, "op": op,
                    "original": line.strip(), "mutated": new.strip(), "_new": new})
    return res


def all_mutants():
    ms = []
    for t in TARGETS:
        ms.extend(mutants_of(t))
    # The scale operator came later: its mutants go last, so --sample N --offset K picks the
    # same mutants as before it (CI's fixed sample).
    for t in TARGETS:
        ms.extend(mutants_of(t, scales=True))
    return ms


def sh(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace")


_LOCK = []  # the lock file, held open (locked) until the process ends


def lock(build, timeout):
    """One run per build folder: two would share the mutant copy and Ninja's state."""
    path = os.path.join(build, "property_tests", "mutate.lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a+")
    t0 = time.time()
    said = False
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            f.seek(0)
            f.truncate()
            f.write(str(os.getpid()))
            f.flush()
            _LOCK.append(f)
            return
        except OSError:
            if time.time() - t0 > timeout:
                f.seek(0)
                sys.exit("mutate.py: %s is still locked by pid %s after %d s (another run in "
                         "this build folder; --lock-timeout)" % (path, f.read().strip() or "?",
                                                                  timeout))
            if not said:
                print("mutate.py: waiting for %s (another run in this build folder)" % path,
                      flush=True)
                said = True
            time.sleep(1)


def sync_copy(src, dst):
    """dst becomes a copy of src; a file already equal keeps its mtime (nothing to rebuild),
    every other file is written afresh (a new mtime). Not copy2, which keeps the sources'
    old mtimes: older than the objects a previous run left (built from ITS last mutant), so
    Ninja would rebuild nothing and the "unmutated" baseline would run that mutant (the old
    flaky fp8 failure). A file equal in content was last written by a restore, after any
    build from a mutant of it, so its objects are rebuilt when they must be."""
    keep = set()
    for d, _, names in os.walk(src):
        for n in names:
            s_ = os.path.join(d, n)
            rel = os.path.relpath(s_, src)
            t = os.path.join(dst, rel)
            keep.add(rel)
            data = open(s_, "rb").read()
            if os.path.isfile(t) and open(t, "rb").read() == data:
                continue
            os.makedirs(os.path.dirname(t), exist_ok=True)
            with open(t, "wb") as f:
                f.write(data)
    for d, _, names in os.walk(dst):
        for n in names:
            if os.path.relpath(os.path.join(d, n), dst) not in keep:
                os.remove(os.path.join(d, n))


def prepare(build, mdir):
    for sub, src in (("src", "kernels/src"), ("include", "kernels/include")):
        sync_copy(os.path.join(ROOT, src), os.path.join(mdir, sub))
    # Configure only when the build folder does not have the mutant targets for this copy
    # yet (a later run, or a ctest running beside other tests, leaves the build files alone).
    cache = os.path.join(build, "CMakeCache.txt")
    ninja = os.path.join(build, "build.ninja")
    configured = os.path.exists(cache) and os.path.exists(ninja) and \
        ("PAGEDATTN_MUTANT_DIR:PATH=%s\n" % mdir) in open(cache).read()
    if configured:
        targets = open(ninja).read()
        configured = all(("pagedattn_mutant_kernel_%s:" % i) in targets or
                         ("pagedattn_mutant_kernel_%s " % i) in targets for i in INSTANTIATIONS)
    if configured:
        return
    rc, log = sh(["cmake", "-S", ".", "-B", build, "-DPAGEDATTN_MUTANT_DIR=" + mdir], 600)
    if rc != 0:
        sys.exit("mutate.py: cmake failed:\n" + log[-3000:])


def mutant_path(mdir, rel):
    if rel.startswith("kernels/src/"):
        return os.path.join(mdir, "src", rel[len("kernels/src/"):])
    return os.path.join(mdir, "include", rel[len("kernels/include/"):])


def object_files(build):
    """{name: path} of every object compiled from the mutant copy: one per instantiation
    (pagedattn_mutant_kernel_<inst>) and the suite's (pagedattn_mutant_suite)."""
    out = {}
    base = os.path.join(build, "property_tests", "CMakeFiles")
    for lib in ["pagedattn_mutant_kernel_" + i for i in INSTANTIATIONS] + ["pagedattn_mutant_suite"]:
        for o in glob.glob(os.path.join(base, lib + ".dir", "**", "*.o"), recursive=True):
            out[lib + ":" + os.path.basename(o)] = o
    return out


def mutant_objects(build):
    """Every object file of the mutant targets, the racecheck instantiation's included."""
    return glob.glob(os.path.join(build, "property_tests", "CMakeFiles", "pagedattn_mutant_*.dir",
                                  "**", "*.o"), recursive=True)


def restore(path, original, stat, build, base, written_ns):
    """Puts the unmutated file back with the mtime it had before the mutant, and deletes every
    object compiled since the mutant was written unless it is byte-identical to the baseline's.
    What is left is what Ninja would have built from the unmutated sources, and it does not
    rebuild it: each object is either deleted (rebuilt on demand) or older than nothing it
    reads. Restoring with a new mtime instead made the next run's baseline build recompile
    every instantiation and suite object that includes the last mutant's file, about 60-100 s
    a mutate.py run on 2 cores, though nearly all of them already held the baseline's code.
    A restore that kept a mutated object cannot pass unseen: the next run's baseline finds
    an object digest that differs from its record, runs the stages, and fails (shown by
    keeping every object: "the unmutated build fails stage f32_w32")."""
    with open(path, "w") as f:
        f.write("\n".join(original))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    base_digest_of = {}
    for name, o in object_files(build).items():
        if name in base:
            base_digest_of[o] = base[name]
    for o in mutant_objects(build):
        if os.stat(o).st_mtime_ns < written_ns:
            continue
        want = base_digest_of.get(o)
        if want is not None:
            with open(o, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() == want:
                    continue
        os.remove(o)


def digests(paths):
    res = {}
    for name, p in paths.items():
        with open(p, "rb") as f:
            res[name] = hashlib.sha256(f.read()).hexdigest()
    return res


def shared_with_library(build):
    """Kernel sources that library objects compiled from the ORIGINAL sources include
    (Ninja's dependency records): a mutant of one of them is never applied to those, so
    identical mutant-copy objects do not prove its program unchanged."""
    rc, log = sh(["ninja", "-C", build, "-t", "deps"], 120)
    if rc != 0:
        return set(TARGETS)  # unknown: never claim equivalence by construction
    shared, inside = set(), False
    for line in log.split("\n"):
        if line and not line.startswith(" "):
            obj = line.split(":")[0]
            inside = ("pagedattn_kernels" in obj and "/mutant" not in obj
                      and not re.search(INST_FILE + r"\.o$", obj))
        elif inside:
            # Ninja records paths relative to the build folder (or absolute).
            path = os.path.normpath(os.path.join(os.path.abspath(build), line.strip()))
            rel = os.path.relpath(path, ROOT)
            if rel in TARGETS:
                shared.add(rel)
    return shared


# Run alone, first, in a fresh process: it needs kernels never launched before (the emulator,
# like CUDA, remembers a shared-memory opt-in per kernel for the whole process).
FIRST_LAUNCH = "Properties.prop_v1_first_launch_just_above_48k"
# Survivors (removed barriers above all) are run again under the racecheck hazard mode (the
# kernels instrumented: target pagedattn_mutant_props_race), on properties that launch V1,
# V2 and the reduce, few cases (each launch runs 2-4 times, with shadow memory).
RACE_FILTER = ("Properties.prop_v2_eq_v1:Properties.prop_fold_partitions_softmax_reduce:"
               "Properties.prop_one_token_exact")
RACE_CASES = 3
STAGE_TARGET = {"f32_w32": "pagedattn_mutant_props", "all": "pagedattn_mutant_props_all",
                "racecheck": "pagedattn_mutant_props_race"}


def run_suite(binary, env, gfilter, timeout=300):
    rc, log = sh([binary, "--gtest_fail_fast", "--gtest_brief=1", "--gtest_filter=" + gfilter],
                 timeout, env)
    if rc == 0:
        return None
    fail = re.findall(r"\[  FAILED  \] (Properties\.\w+)", log)
    if fail:
        return fail[0]
    if rc == -4:  # SIGILL: __builtin_trap of -fsanitize=bounds (trap-on-error, no runtime)
        return "bounds trap (-fsanitize=bounds, index past a fixed-size array)"
    if rc == 124:
        return "timeout (%d s)" % timeout
    return "crash rc %d" % rc


def build(bdir, targets):
    rc, log = sh(["cmake", "--build", bdir, "-j2", "--target"] + targets, 1800)
    return None if rc == 0 else (log[-1500:] or "build failed rc %d" % rc)


def run_stage(a, bdir, stage):
    """Runs one stage's binary (already built); returns the failure or None."""
    env = dict(os.environ, PAGEDATTN_PROP_SEED=str(a.seed), EMU_CHECKS=a.checks,
               RC_PARAMS="max_success=%d" % a.cases)
    env.pop("PAGEDATTN_PROP_ONLY_F32_H200", None)
    if stage != "all":  # stages 1 and 3 rebuild f32/warp 32 only: every case through it
        env["PAGEDATTN_PROP_ONLY_F32_H200"] = "1"
    binary = os.path.join(bdir, "property_tests", STAGE_TARGET[stage])
    if stage == "racecheck":
        env.update(EMU_CHECKS="racecheck,memcheck,synccheck", RC_PARAMS="max_success=%d" % RACE_CASES)
        fail = run_suite(binary, env, RACE_FILTER, 600)
        return fail and fail + " (racecheck)"
    return run_suite(binary, env, FIRST_LAUNCH) or \
        run_suite(binary, env, "Properties.*:-" + FIRST_LAUNCH, a.suite_timeout)


def baseline_key(a):
    """What the unmutated baseline's verdict depends on: the sources (kernels, emulator,
    suite, reference, bound, this script) and the settings."""
    h = hashlib.sha256()
    for top in ("kernels", "emulator", "property_tests", "reference", "proofs/bound"):
        for d, _, names in sorted(os.walk(os.path.join(ROOT, top))):
            for n in sorted(names):
                p = os.path.join(d, n)
                if n.endswith(".json") and top == "property_tests":
                    continue  # the equivalence and survivor lists do not change the build
                with open(p, "rb") as f:
                    h.update(os.path.relpath(p, ROOT).encode() + b"\0" + f.read())
    h.update(json.dumps([a.cases, a.seed, a.checks, a.no_race, INSTANTIATIONS]).encode())
    return h.hexdigest()


def run_baseline(a, bdir):
    """Builds every mutant target from the unmutated copy, records each object's digest
    (what a mutant is compared with) and checks that every stage passes. Kept in
    BUILD/property_tests/mutant-baseline.json under a key of the sources and settings: a
    later shard on the same sources skips the runs (the objects are recompiled anyway)."""
    stamp = os.path.join(bdir, "property_tests", "mutant-baseline.json")
    key = baseline_key(a)
    targets = [STAGE_TARGET["f32_w32"], STAGE_TARGET["all"]] + \
        ([] if a.no_race else [STAGE_TARGET["racecheck"]])
    why = build(bdir, targets)
    if why:
        sys.exit("mutate.py: the unmutated build does not compile:\n" + why)
    objects = digests(object_files(bdir))
    if not a.fresh_baseline and os.path.exists(stamp):
        old = json.load(open(stamp))
        if old.get("key") == key and old.get("objects") == objects:
            print("baseline (unmutated) passed before on these sources and settings", flush=True)
            return objects
    for stage in ("f32_w32", "all") + (() if a.no_race else ("racecheck",)):
        fail = run_stage(a, bdir, stage)
        if fail:
            sys.exit("mutate.py: the unmutated build fails stage %s: %s" % (stage, fail))
    json.dump({"key": key, "objects": objects}, open(stamp, "w"), indent=1)
    print("baseline (unmutated) passes every stage", flush=True)
    return objects


def run_mutant(a, bdir, base, shared, m):
    """The stages for one mutant (already written into the copy): (status, detail, record)."""
    rec = {"stages": [], "instantiations": {i: "not built" for i in INSTANTIATIONS}}

    def objects_changed(names):
        now = digests({k: v for k, v in object_files(bdir).items() if k in names})
        return [k for k in names if now.get(k) != base.get(k)]

    def timed(stage, fn):
        t0 = time.time()
        r = fn()
        rec["stages"].append({"stage": stage, "seconds": round(time.time() - t0, 1),
                              "result": r or "passed"})
        return r

    def stage(name, built=False):
        """Builds (unless built) and runs one stage: ("stillborn" | "killed", why), or None
        when the suite passed."""
        why = None if built else build(bdir, [STAGE_TARGET[name]])
        if why:
            return "stillborn", why
        fail = timed(name, lambda: run_stage(a, bdir, name))
        return ("killed", "%s: %s" % ("all instantiations" if name == "all" else FIRST, fail)) \
            if fail else None

    first_obj = [k for k in base if k.startswith("pagedattn_mutant_kernel_%s:" % FIRST)]
    why = build(bdir, ["pagedattn_mutant_kernel_" + FIRST])
    if why:
        return "stillborn", why, rec
    first_differs = bool(objects_changed(first_obj))
    rec["instantiations"][FIRST] = "differs" if first_differs else "identical"
    end = stage("f32_w32") if first_differs else None
    if end:
        return end + (rec,)
    why = build(bdir, [STAGE_TARGET["all"]])
    if why:
        return "stillborn", why, rec
    changed = objects_changed(list(base))
    for i in INSTANTIATIONS:
        rec["instantiations"][i] = "differs" if any(
            c.startswith("pagedattn_mutant_kernel_%s:" % i) for c in changed) else "identical"
    rec["suite_objects_changed"] = sorted(c.split(":", 1)[1] for c in changed
                                          if c.startswith("pagedattn_mutant_suite:"))
    if not changed and m["file"] not in shared:
        return "equivalent", ("identical code: every object built from the mutated sources "
                              "is byte-identical to the unmutated build's"), rec
    end = stage("all", built=True) or (
        stage("racecheck") if not a.no_race and first_differs else None)
    if end:
        return end + (rec,)
    return "survived", "", rec


def stable_sample(ms, n):
    """The n mutants first in the order of a hash of what each does, not of where: its file,
    operator, line before and after, and which occurrence of those four it is. A sample by
    position (--sample) moves to other mutants whenever the catalogue grows or a line moves;
    this one keeps every mutant whose line is unchanged, so CI's fixed sample stays fixed
    across unrelated edits."""
    seen = {}
    keyed = []
    for m in ms:
        what = (m["file"], m["op"], m["original"], m["mutated"])
        k = seen.get(what, 0)
        seen[what] = k + 1
        key = hashlib.sha256(("\0".join(what) + "\0%d" % k).encode()).hexdigest()
        keyed.append((key, m))
    keyed.sort(key=lambda x: x[0])
    return [m for _, m in keyed[:n]]


def catalogue_digest(ms):
    return hashlib.sha256("\n".join(m["id"] for m in ms).encode()).hexdigest()


def count(results):
    c = {"killed": 0, "survived": 0, "equivalent": 0, "stillborn": 0}
    for r in results:
        c[r["status"]] += 1
    live = c["killed"] + c["survived"]
    return c, (c["killed"] / live if live else None)


def write_json(path, out):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=2)
    os.replace(path + ".tmp", path)


def result_json(a, prov, selection, ms, results, known, t_start, resumed=()):
    c, score = count(results)
    earlier = sum(r["seconds"] for r in resumed)
    secs = [r["seconds"] for r in results]
    return {"provenance": prov, "known_wrong": known,
            "source": dict(c, score=score, total=len(ms),
                           sample=bool(a.sample or a.stable_sample or a.ids),
                           catalogue=selection["catalogue"], selection=selection,
                           shard=a.shard, shards=[a.shard], complete=len(results) == len(ms),
                           done=len(results), cases_per_property=a.cases, seed=a.seed,
                           emu_checks=a.checks, racecheck=not a.no_race,
                           instantiations=INSTANTIATIONS,
                           seconds=round(time.time() - t_start + earlier, 1),
                           resumed=list(resumed),
                           mutant_seconds=round(sum(secs), 1),
                           mutant_cpu_seconds=round(sum(r.get("cpu_seconds", 0) for r in results), 1),
                           mutants=results)}


SETTINGS = ("selection", "cases_per_property", "seed", "emu_checks", "racecheck",
            "instantiations", "catalogue")


def resume(a, out_path, prov, selection, ms):
    """The results a stopped run of this very shard left in out_path, and where they came
    from. Refused unless that run judged the same kernel and emulator sources with the same
    settings: a verdict is only continued on what it judged. The suite may have grown since
    (the properties are not in the digest); each kept result names the commit that ran it."""
    if not os.path.exists(out_path):
        return [], []
    try:
        d = json.load(open(out_path))
        src = d["source"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("mutate.py --resume: %s is not a mutate.py result (%s)" % (out_path, e))
    old = d.get("provenance") or {}
    if old.get("digest") != prov["digest"]:
        sys.exit("mutate.py --resume: %s ran on other kernel or emulator sources (digest %s, "
                 "now %s): run it afresh" % (out_path, old.get("digest"), prov["digest"]))
    now = {"selection": selection, "cases_per_property": a.cases, "seed": a.seed,
           "emu_checks": a.checks, "racecheck": not a.no_race, "instantiations": INSTANTIATIONS,
           "catalogue": selection["catalogue"], "shard": a.shard}
    for k, v in now.items():
        if src.get(k) != v:
            sys.exit("mutate.py --resume: %s differs in %s (%r there, %r now)"
                     % (out_path, k, src.get(k), v))
    ids = {m["id"] for m in ms}
    kept = [dict(r, commit=r.get("commit") or old.get("commit")) for r in src["mutants"]
            if r["id"] in ids]
    resumed = list(src.get("resumed") or []) + [
        {"commit": old.get("commit"), "mutants": len(kept) - sum(
            x["mutants"] for x in src.get("resumed") or []),
         "seconds": src.get("seconds", 0) - sum(x["seconds"] for x in src.get("resumed") or [])}]
    print("resuming %s: %d of %d done (commit %s)" % (out_path, len(kept), len(ms),
                                                       (old.get("commit") or "?")[:12]), flush=True)
    return kept, resumed


def lists():
    """The two lists as they stand now, and a digest of both (what classified the survivors)."""
    eq = json.load(open(EQUIVALENT)) if os.path.exists(EQUIVALENT) else {}
    holes = json.load(open(SURVIVORS)) if os.path.exists(SURVIVORS) else {}
    blob = json.dumps([eq, holes], sort_keys=True).encode()
    return eq, holes, hashlib.sha256(blob).hexdigest()


def classify(r):
    """A survivor (every stage passed) classified by the lists as they stand now: a run's
    verdict on the code is kept, only its name for a survivor follows the lists, so reasons
    written after a run (the whole catalogue takes hours) count without running it again."""
    eq, holes, _ = lists()
    if r["status"] == "survived" and r["id"] in eq:
        r.update(status="equivalent", detail=eq[r["id"]])
    elif r["status"] == "equivalent" and r["id"] not in eq and \
            not r.get("detail", "").startswith("identical code"):
        r.update(status="survived", detail="")  # its reason was withdrawn from the list
    if r["status"] == "survived":
        r["detail"] = ("known hole: " + holes[r["id"]]) if r["id"] in holes else ""
    return r


def merge(files, out_path, reruns=()):
    """Folds shard results into one; refuses what would not add up. Each rerun (a later
    `--ids` run on the same kernel and emulator sources, e.g. after a property was added for
    a survivor) replaces the results of its mutants, which keep the status they had before
    as `first_run` and name the commit that reran them."""
    shards, first, seen, results, known = [], None, {}, [], []
    resumed, seconds, all_complete = {}, 0.0, True
    for f in files:
        try:
            d = json.load(open(f))
            src = d["source"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit("mutate.py merge: %s is not a mutate.py result (%s)" % (f, e))
        prov = d.get("provenance")
        if not isinstance(prov, dict) or "digest" not in prov:
            sys.exit("mutate.py merge: %s records no provenance (commit and source digest)" % f)
        if first is None:
            first, fd = f, d
        if prov["digest"] != fd["provenance"]["digest"]:
            sys.exit("mutate.py merge: %s ran on other sources than %s (source digests differ)"
                     % (f, first))
        for k in SETTINGS:
            if src.get(k) != fd["source"].get(k):
                sys.exit("mutate.py merge: %s and %s differ in %s (%r, %r)"
                         % (first, f, k, fd["source"].get(k), src.get(k)))
        for sh_ in src.get("shards") or [src.get("shard")]:
            if sh_ in shards:
                sys.exit("mutate.py merge: shard %s appears twice (%s)" % (sh_, f))
            shards.append(sh_)
        for r in src["mutants"]:
            if r["id"] in seen:
                sys.exit("mutate.py merge: mutant %s appears twice (%s, %s)" % (r["id"], seen[r["id"]], f))
            seen[r["id"]] = f
            results.append(classify(dict(r)))
        known = known or d.get("known_wrong", [])
        resumed[str(src.get("shard"))] = src.get("resumed") or []
        seconds += src.get("seconds", 0)
        all_complete = all_complete and bool(src.get("complete"))
    reran = []
    for f in reruns:
        d = json.load(open(f))
        if d.get("provenance", {}).get("digest") != fd["provenance"]["digest"]:
            sys.exit("mutate.py merge: rerun %s ran on other kernel or emulator sources than %s"
                     % (f, first))
        by_id = {r["id"]: i for i, r in enumerate(results)}
        for r in d["source"]["mutants"]:
            if r["id"] not in by_id:
                sys.exit("mutate.py merge: rerun %s has %s, which no shard ran" % (f, r["id"]))
            i = by_id[r["id"]]
            # first_run stays the whole run's status when a later rerun replaces an earlier one
            results[i] = classify(dict(r, first_run=results[i].get("first_run",
                                                                   results[i]["status"]),
                                       rerun_commit=d["provenance"].get("commit")))
        reran.append({"file": os.path.basename(f), "commit": d["provenance"].get("commit"),
                      "mutants": len(d["source"]["mutants"])})
    n = {int(str(s).split("/")[1]) for s in shards if s and "/" in str(s)}
    if len(n) > 1:
        sys.exit("mutate.py merge: shards of different counts %s" % sorted(shards))
    c, score = count(results)
    src0 = fd["source"]
    out = {"provenance": fd["provenance"], "known_wrong": known,
           "source": dict(c, score=score, total=len(results), sample=src0.get("sample"),
                          shard=None, shards=sorted(shards, key=lambda s: int(str(s).split("/")[0])),
                          complete=bool(n) and len(shards) == n.pop() and all_complete,
                          done=len(results), seconds=round(seconds, 1),
                          mutant_seconds=round(sum(r.get("seconds", 0) for r in results), 1),
                          mutants=results, lists_digest=lists()[2], reruns=reran, resumed=resumed,
                          **{k: src0.get(k) for k in SETTINGS})}
    write_json(out_path, out)
    print("merged %d shard(s), %d mutants: killed %d, survived %d, equivalent %d, stillborn %d; "
          "score %s%s" % (len(shards), len(results), c["killed"], c["survived"], c["equivalent"],
                          c["stillborn"], "n/a" if score is None else "%.1f%%" % (100 * score),
                          "" if out["source"]["complete"] else " (INCOMPLETE: not every shard)"))
    return 0


def unlisted_survivors(results, holes):
    """Survivors that are neither equivalent nor a listed hole: what --check and summary
    fail on."""
    return [r["id"] for r in results if r["status"] == "survived" and r["id"] not in holes]


def killing_stage(r):
    """The stage that killed a mutant: its last stage, racecheck when the kill came under the
    hazard mode (which re-runs the f32/warp-32 program instrumented)."""
    st = [x["stage"] for x in r.get("stages", [])]
    return st[-1] if st else "none"


def summary(path):
    """What the README and the report quote of a (merged) result, computed, not retyped:
    counts, the score, kills by stage, killed / non-equivalent per file, CPU per status, and
    whether every survivor is a listed hole."""
    try:
        d = json.load(open(path))
        src, prov = d["source"], d["provenance"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("mutate.py summary: %s is not a mutate.py result (%s)" % (path, e))
    ms = src["mutants"]
    c, score = count(ms)
    print("%s: commit %s, kernels %s, emulator %s, %s" % (
        path, (prov.get("commit") or "?")[:10], prov["digest"].get("kernels", "?")[:12],
        prov["digest"].get("emulator", "?")[:12], prov.get("date", "?")))
    print("%d of %d done%s: killed %d, survived %d, equivalent %d, stillborn %d; score %s" % (
        len(ms), src.get("total", len(ms)), "" if src.get("complete") else " (INCOMPLETE)",
        c["killed"], c["survived"], c["equivalent"], c["stillborn"],
        "n/a" if score is None else "%.1f%% (%d / %d)" % (100 * score, c["killed"],
                                                         c["killed"] + c["survived"])))
    for rr in src.get("reruns") or []:
        print("rerun %s: %d mutant(s) at commit %s, replacing the first run's status" % (
            rr.get("file"), rr.get("mutants", 0), (rr.get("commit") or "?")[:10]))
    by_stage = {}
    for r in ms:
        if r["status"] == "killed":
            st = killing_stage(r)
            by_stage[st] = by_stage.get(st, 0) + 1
    print("killed by stage: " + ", ".join("%s %d" % kv for kv in sorted(by_stage.items())))
    per_file = {}
    for r in ms:
        k, live = per_file.get(r["file"], (0, 0))
        per_file[r["file"]] = (k + (r["status"] == "killed"),
                               live + (r["status"] in ("killed", "survived")))
    print("killed / non-equivalent per file: " + ", ".join(
        "%s %d/%d" % (os.path.basename(f), k, n) for f, (k, n) in sorted(per_file.items())))
    cpu = {}
    for r in ms:
        cpu.setdefault(r["status"], []).append(r.get("cpu_seconds", 0.0))
    print("CPU per mutant, mean: " + ", ".join(
        "%s %.1f s" % (s, sum(v) / len(v)) for s, v in sorted(cpu.items())) +
          "; total %.2f CPU-hours" % (sum(sum(v) for v in cpu.values()) / 3600))
    _, holes, _ = lists()
    surv = sorted(r["id"] for r in ms if r["status"] == "survived")
    unlisted = sorted(unlisted_survivors(ms, holes))
    print("survivors: %s" % (", ".join(surv) or "none"))
    print("every survivor a listed hole: %s" % ("yes" if not unlisted else
                                                 "no, unlisted: " + ", ".join(unlisted)))
    return 1 if unlisted else 0


def parse_shard(s):
    m = re.fullmatch(r"(\d+)/(\d+)", s or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError("--shard must be K/N with 1 <= K <= N, got %r" % s)
    return s


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "merge":
        mp = argparse.ArgumentParser(prog="mutate.py merge",
                                     description="merge shard results of mutate.py --shard")
        mp.add_argument("files", nargs="+")
        mp.add_argument("--out", required=True)
        mp.add_argument("--rerun", action="append", default=[], metavar="FILE",
                        help="a later mutate.py --ids run on the same kernel sources (a "
                             "stronger suite): its results replace those mutants' (repeatable)")
        ma = mp.parse_args(sys.argv[2:])
        return merge(ma.files, ma.out, ma.rerun)
    if len(sys.argv) > 1 and sys.argv[1] == "summary":
        sp = argparse.ArgumentParser(prog="mutate.py summary",
                                     description="the figures the docs quote of a result")
        sp.add_argument("file")
        return summary(sp.parse_args(sys.argv[2:]).file)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default="build", help="configured build folder (default build)")
    ap.add_argument("--sample", type=int, default=0, help="every (total/N)-th mutant only (N of them)")
    ap.add_argument("--offset", type=int, default=-1,
                    help="with --sample: start at this index (default: half a step)")
    ap.add_argument("--stable-sample", type=int, default=0,
                    help="N mutants picked by a hash of what each changes, not where (CI's\n"
                         "fixed sample: it survives edits elsewhere and moved lines)")
    ap.add_argument("--shard", type=parse_shard, default="1/1",
                    help="K/N: every N-th mutant of the selection from the K-th (default 1/1)")
    ap.add_argument("--check", action="store_true",
                    help="CI: exit 1 when a non-equivalent mutant survives that\n"
                         "mutation_survivors.json does not list with a reason")
    ap.add_argument("--no-race", action="store_true",
                    help="do not re-run survivors under racecheck (the hazard mode)")
    ap.add_argument("--ids", nargs="*", help="only these mutant ids (with --sample: these too)")
    ap.add_argument("--cases", type=int, default=25, help="cases per property per stage")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--checks", default="memcheck,synccheck",
                    help="EMU_CHECKS for the runs (default memcheck,synccheck: nearly free;\n"
                         "racecheck costs 20x)")
    ap.add_argument("--suite-timeout", type=int, default=600,
                    help="seconds one suite run may take before it counts as a kill (a hang)")
    ap.add_argument("--lock-timeout", type=int, default=6 * 3600,
                    help="seconds to wait for another run in the same build folder")
    ap.add_argument("--fresh-baseline", action="store_true",
                    help="run the unmutated baseline even if it passed on these sources")
    ap.add_argument("--out", default="out/properties/mutation.json")
    ap.add_argument("--resume", action="store_true",
                    help="keep the results --out already holds (a stopped run of this shard\n"
                         "on the same sources and settings) and run only the rest")
    ap.add_argument("--known-wrong", default="", help="known_wrong.json of test_known_wrong")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()

    ms = all_mutants()
    catalogue = len(ms)
    if a.list:
        for m in ms:
            print(m["id"], "|", m["original"], "=>", m["mutated"])
        print(len(ms), "mutants", file=sys.stderr)
        return 0
    selection = {"catalogue": catalogue, "catalogue_digest": catalogue_digest(ms),
                 "sample": a.sample, "offset": a.offset, "ids": a.ids or None}
    if a.stable_sample:
        selection["stable_sample"] = a.stable_sample
    picked = [m for m in ms if m["id"] in set(a.ids or [])]
    missing = set(a.ids or []) - {m["id"] for m in picked}
    if missing:
        sys.exit("mutate.py: --ids: no such mutant %s (see --list)" % " ".join(sorted(missing)))
    if a.sample and a.stable_sample:
        sys.exit("mutate.py: --sample and --stable-sample: pick one")
    if a.sample or a.stable_sample:  # with --ids too: the sample, then the named ones it lacks
        if a.stable_sample:
            ms = stable_sample(ms, a.stable_sample)
        else:
            step = max(1, len(ms) // a.sample)
            ms = ms[(step // 2 if a.offset < 0 else a.offset % step)::step][:a.sample]
        ms += [m for m in picked if m not in ms]
    elif a.ids:
        ms = picked
    k, n = (int(x) for x in a.shard.split("/"))
    ms = ms[k - 1::n]
    equivalent = json.load(open(EQUIVALENT)) if os.path.exists(EQUIVALENT) else {}
    known_holes = json.load(open(SURVIVORS)) if os.path.exists(SURVIVORS) else {}
    known = []
    if a.known_wrong and os.path.exists(a.known_wrong):
        known = [{"name": x["name"], "killed": x["killed"]} for x in json.load(open(a.known_wrong))]
    bdir = os.path.abspath(os.path.join(ROOT, a.build))
    lock(bdir, a.lock_timeout)
    t_start = time.time()
    prov = source_digest.provenance(ROOT)  # the unmutated sources this run judges
    mdir = os.path.join(bdir, "property_tests", "mutant")
    prepare(bdir, mdir)
    base = run_baseline(a, bdir)
    shared = shared_with_library(bdir)
    out_path = os.path.join(ROOT, a.out)
    results, resumed = resume(a, out_path, prov, selection, ms) if a.resume else ([], [])
    done = {r["id"] for r in results}
    write_json(out_path, result_json(a, prov, selection, ms, results, known, t_start, resumed))
    for i, m in enumerate(ms):
        if m["id"] in done:
            continue
        path = mutant_path(mdir, m["file"])
        original = open(os.path.join(ROOT, m["file"])).read().split("\n")
        mutated = list(original)
        mutated[m["line"] - 1] = m["_new"]
        before = os.stat(path)
        open(path, "w").write("\n".join(mutated))
        written_ns = os.stat(path).st_mtime_ns  # the objects' clock: they are built after it
        t0 = time.time()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            st, why, rec = run_mutant(a, bdir, base, shared, m)
        finally:
            restore(path, original, before, bdir, base, written_ns)
        if st == "survived" and m["id"] in equivalent:
            st, why = "equivalent", equivalent[m["id"]]
        elif st == "survived" and m["id"] in known_holes:
            why = "known hole: " + known_holes[m["id"]]
        r = {k2: v for k2, v in m.items() if not k2.startswith("_")}
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU seconds (compilers, links, suite runs): what a mutant costs whatever else
        # shares the cores; the estimate of a whole run is made from it.
        cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
        r.update(status=st, detail=why if st != "stillborn" else why[-400:],
                 seconds=round(time.time() - t0, 1), cpu_seconds=round(cpu, 1), **rec)
        results.append(r)
        print("[%d/%d] %-10s %s  %s => %s  %s" % (i + 1, len(ms), st, m["id"], m["original"],
                                                  m["mutated"], why if st != "stillborn" else ""),
              flush=True)
        write_json(out_path, result_json(a, prov, selection, ms, results, known, t_start, resumed))
    if source_digest.provenance(ROOT)["digest"] != prov["digest"]:
        sys.exit("mutate.py: the sources changed while the run went on; %s is not a verdict "
                 "on either version" % a.out)
    c, score = count(results)
    print("killed %d, survived %d, equivalent %d, stillborn %d; score %s (killed / non-equivalent)"
          % (c["killed"], c["survived"], c["equivalent"], c["stillborn"],
             "n/a" if score is None else "%.1f%%" % (100 * score)))
    if results:
        per = sum(r["seconds"] for r in results) / len(results)
        cpu = sum(r["cpu_seconds"] for r in results) / len(results)
        print("%.1f s (%.1f CPU s) a mutant over %d; the whole catalogue (%d) at that CPU rate: "
              "about %.0f min on 2 otherwise idle cores (one shard; N shards on N machines: 1/N)"
              % (per, cpu, len(results), catalogue, cpu * catalogue / 2 / 60))
    for r in results:
        if r["status"] in ("survived", "equivalent"):
            print("  %s %s: %s => %s%s" % (r["status"], r["id"], r["original"], r["mutated"],
                                           (" (" + r["detail"] + ")") if r["detail"] else ""))
    unexplained = unlisted_survivors(results, known_holes)
    if a.check and unexplained:
        print("mutate.py: %d survivor(s) neither equivalent nor a listed hole: %s"
              % (len(unexplained), " ".join(unexplained)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
