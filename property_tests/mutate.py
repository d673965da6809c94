#!/usr/bin/python3
"""Source mutation testing of the kernels against the property suite (issue 7, item 3b).

Mutates kernels/src/*.cuh and kernels/include/pagedattn/lse_state.h one mutant at a time,
with operators modelled on Mull's catalogue: arithmetic and comparison swaps, constant
changes (off-by-one bounds included), removed statements (barriers included), swapped
min/max and dropped fp8 dequantization scales (x * a.v_scale -> x). Each mutant is written into a copy of the sources (BUILD/property_tests/mutant),
only the f32/warp-32 emulator instantiation (trapping -fsanitize=bounds) and the property
suite are rebuilt (CMake target pagedattn_mutant_props), and the suite runs with
PAGEDATTN_PROP_ONLY_F32_H200=1 so every case goes through the mutated instantiation:
prop_v1_first_launch_just_above_48k alone first (it needs a fresh process), then the rest.
A survivor runs again under the racecheck hazard mode (pagedattn_mutant_props_race, a few
cases of three properties). A mutant is killed when any property fails (or the run
crashes, traps or times out), survived when all pass, stillborn when it does not compile.
Survivors named in mutation_equivalent.json are equivalent, with the reason printed; those
in mutation_survivors.json are known holes (still survived; --check, CI, fails on others).
Writes out/properties/mutation.json (after every mutant).

  /usr/bin/python3 property_tests/mutate.py --build build            # every mutant (~2 h)
  /usr/bin/python3 property_tests/mutate.py --build build --sample 88 # every 6th
  /usr/bin/python3 property_tests/mutate.py --list                   # ids only
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# runner.cuh is compiled into launch_emu.cpp (the library), not into the rebuilt
# instantiation: its mutants would never be built, so they are left out, not counted.
NOT_IN_INSTANTIATION = {"kernels/src/runner.cuh"}
TARGETS = sorted(
    os.path.join("kernels/src", f) for f in os.listdir(os.path.join(ROOT, "kernels/src"))
    if f.endswith(".cuh") and os.path.join("kernels/src", f) not in NOT_IN_INSTANTIATION) + [
        "kernels/include/pagedattn/lse_state.h"]
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


def prepare(build, mdir):
    for sub, src in (("src", "kernels/src"), ("include", "kernels/include")):
        dst = os.path.join(mdir, sub)
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        # shutil.copy, not copytree's default copy2: copy2 keeps the sources' old mtimes,
        # older than the objects the previous run left (built from ITS last mutant, the
        # loop restores a file without rebuilding), so Ninja saw nothing to rebuild and the
        # "unmutated" baseline ran the last mutant of the previous run (the flaky fp8 failure).
        shutil.copytree(os.path.join(ROOT, src), dst, copy_function=shutil.copy)
    rc, log = sh(["cmake", "-S", ".", "-B", build, "-DPAGEDATTN_MUTANT_DIR=" + mdir], 600)
    if rc != 0:
        sys.exit("mutate.py: cmake failed:\n" + log[-3000:])


def mutant_path(mdir, rel):
    if rel.startswith("kernels/src/"):
        return os.path.join(mdir, "src", rel[len("kernels/src/"):])
    return os.path.join(mdir, "include", rel[len("kernels/include/"):])


# Run alone, first, in a fresh process: it needs kernels never launched before (the emulator,
# like CUDA, remembers a shared-memory opt-in per kernel for the whole process).
FIRST_LAUNCH = "Properties.prop_v1_first_launch_just_above_48k"
# Survivors (removed barriers above all) are run again under the racecheck hazard mode (the
# kernels instrumented: target pagedattn_mutant_props_race), on properties that launch V1,
# V2 and the reduce, few cases (each launch runs 2-4 times, with shadow memory).
RACE_FILTER = ("Properties.prop_v2_eq_v1:Properties.prop_fold_partitions_softmax_reduce:"
               "Properties.prop_one_token_exact")
RACE_CASES = 3


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
    return "crash/timeout rc %d" % rc


def build_and_run(build, cases, seed, checks, race=False):
    target = "pagedattn_mutant_props_race" if race else "pagedattn_mutant_props"
    rc, log = sh(["cmake", "--build", build, "-j2", "--target", target], 900)
    if rc != 0:
        return "stillborn", log[-1500:]
    # Under every emulator check: a mutant that reads out of bounds, races or misuses a
    # barrier without changing a value is still a defect the suite should report.
    env = dict(os.environ, PAGEDATTN_PROP_ONLY_F32_H200="1", PAGEDATTN_PROP_SEED=str(seed),
               RC_PARAMS="max_success=%d" % (RACE_CASES if race else cases), EMU_CHECKS=checks)
    binary = os.path.join(build, "property_tests", target)
    if race:
        env["EMU_CHECKS"] = "racecheck,memcheck,synccheck"
        fail = run_suite(binary, env, RACE_FILTER, 600)
        return ("killed", fail + " (racecheck)") if fail else ("survived", "")
    fail = run_suite(binary, env, FIRST_LAUNCH) or \
        run_suite(binary, env, "Properties.*:-" + FIRST_LAUNCH)
    return ("killed", fail) if fail else ("survived", "")


def write_json(a, counts, results, ms, catalogue):
    """Writes --out (after every mutant too: an interrupted run keeps what it measured)."""
    live = counts["killed"] + counts["survived"]
    score = counts["killed"] / live if live else None
    known = []
    if a.known_wrong and os.path.exists(a.known_wrong):
        known = [{"name": k["name"], "killed": k["killed"]} for k in json.load(open(a.known_wrong))]
    out = {"known_wrong": known,
           "source": dict(counts, score=score, total=len(ms), sample=bool(a.sample or a.ids),
                          catalogue=catalogue, done=len(results),
                          cases_per_property=a.cases, seed=a.seed, emu_checks=a.checks,
                          mutants=results)}
    os.makedirs(os.path.dirname(os.path.join(ROOT, a.out)), exist_ok=True)
    json.dump(out, open(os.path.join(ROOT, a.out), "w"), indent=2)
    return out, score


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default="build", help="configured build folder (default build)")
    ap.add_argument("--sample", type=int, default=0, help="every (total/N)-th mutant only (N of them)")
    ap.add_argument("--offset", type=int, default=-1,
                    help="with --sample: start at this index (default: half a step)")
    ap.add_argument("--check", action="store_true",
                    help="CI: exit 1 when a non-equivalent mutant survives that\n"
                         "mutation_survivors.json does not list with a reason")
    ap.add_argument("--no-race", action="store_true",
                    help="do not re-run survivors under racecheck (the hazard mode)")
    ap.add_argument("--ids", nargs="*", help="only these mutant ids (with --sample: these too)")
    ap.add_argument("--cases", type=int, default=25, help="cases per property per mutant")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--checks", default="memcheck,synccheck",
                    help="EMU_CHECKS for the runs (default memcheck,synccheck: nearly free;\n"
                         "racecheck costs 20x)")
    ap.add_argument("--out", default="out/properties/mutation.json")
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
    picked = [m for m in ms if m["id"] in set(a.ids or [])]
    if a.sample:  # with --ids too: the sample, then the named mutants it does not hold
        step = max(1, len(ms) // a.sample)
        ms = ms[(step // 2 if a.offset < 0 else a.offset % step)::step][:a.sample]
        ms += [m for m in picked if m not in ms]
    elif a.ids:
        ms = picked
    equivalent = json.load(open(EQUIVALENT)) if os.path.exists(EQUIVALENT) else {}
    known_holes = json.load(open(SURVIVORS)) if os.path.exists(SURVIVORS) else {}
    build = os.path.abspath(os.path.join(ROOT, a.build))
    mdir = os.path.join(build, "property_tests", "mutant")
    prepare(build, mdir)
    status, why = build_and_run(build, a.cases, a.seed, a.checks)
    if status != "survived":
        sys.exit("mutate.py: the unmutated build does not pass (%s): %s" % (status, why))
    if ms and not a.no_race:
        status, why = build_and_run(build, a.cases, a.seed, a.checks, race=True)
        if status != "survived":
            sys.exit("mutate.py: the unmutated build fails under racecheck: %s" % why)
    print("baseline (unmutated) passes", flush=True)
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "stillborn": 0}
    results = []
    for i, m in enumerate(ms):
        path = mutant_path(mdir, m["file"])
        original = open(os.path.join(ROOT, m["file"])).read().split("\n")
        mutated = list(original)
        mutated[m["line"] - 1] = m["_new"]
        open(path, "w").write("\n".join(mutated))
        t0 = time.time()
        st, why = build_and_run(build, a.cases, a.seed, a.checks)
        if st == "survived" and not a.no_race:
            # A second chance under the racecheck hazard mode: a removed barrier, or lanes
            # that now all store to one slot, race without changing a value.
            st, why = build_and_run(build, a.cases, a.seed, a.checks, race=True)
        open(path, "w").write("\n".join(original))
        if st == "survived" and m["id"] in equivalent:
            st, why = "equivalent", equivalent[m["id"]]
        elif st == "survived" and m["id"] in known_holes:
            why = "known hole: " + known_holes[m["id"]]
        counts[st] += 1
        r = {k: v for k, v in m.items() if not k.startswith("_")}
        r.update(status=st, detail=why, seconds=round(time.time() - t0, 1))
        results.append(r)
        print("[%d/%d] %-10s %s  %s => %s  %s" % (i + 1, len(ms), st, m["id"], m["original"],
                                                  m["mutated"], why if st != "stillborn" else ""),
              flush=True)
        write_json(a, counts, results, ms, catalogue)
    out, score = write_json(a, counts, results, ms, catalogue)
    print("killed %d, survived %d, equivalent %d, stillborn %d; score %s (killed / non-equivalent)"
          % (counts["killed"], counts["survived"], counts["equivalent"], counts["stillborn"],
             "n/a" if score is None else "%.1f%%" % (100 * score)))
    for r in results:
        if r["status"] in ("survived", "equivalent"):
            print("  %s %s: %s => %s%s" % (r["status"], r["id"], r["original"], r["mutated"],
                                           (" (" + r["detail"] + ")") if r["detail"] else ""))
    unexplained = [r["id"] for r in results
                   if r["status"] == "survived" and r["id"] not in known_holes]
    if a.check and unexplained:
        print("mutate.py: %d survivor(s) neither equivalent nor a listed hole: %s"
              % (len(unexplained), " ".join(unexplained)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
