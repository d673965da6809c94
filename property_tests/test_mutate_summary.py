#!/usr/bin/env python3
"""ctest properties.mutate_summary: `mutate.py summary` computes the figures the docs quote
of a mutation result (README, "Mutation score"), so it is checked on a small result whose
figures are known: the counts and score, kills by stage (racecheck when the last stage was
the hazard mode), killed / non-equivalent per file, the mean CPU per status, and exit 1
exactly when a survivor is not a listed hole. A summary that counted the wrong stage, let an
equivalent into the denominator or passed an unlisted survivor fails here."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUTATE = os.path.join(ROOT, "property_tests", "mutate.py")
HOLE = next(iter(json.load(open(os.path.join(ROOT, "property_tests",
                                              "mutation_survivors.json")))))


def mutant(i, path, status, stages, cpu):
    return {"id": "%s:%d:1:aor" % (path, i), "file": path, "status": status,
            "stages": [{"stage": s, "result": "r"} for s in stages], "cpu_seconds": cpu}


def result(extra_survivor):
    a, b = "kernels/src/a.cuh", "kernels/src/b.cuh"
    ms = [mutant(1, a, "killed", ["f32_w32"], 10.0),
          mutant(2, a, "killed", ["f32_w32", "all"], 30.0),
          mutant(3, b, "killed", ["f32_w32", "all", "racecheck"], 50.0),
          mutant(4, b, "killed", ["all"], 20.0),
          mutant(5, b, "equivalent", ["f32_w32", "all", "racecheck"], 100.0),
          mutant(6, a, "stillborn", [], 2.0),
          dict(mutant(0, "", "survived", ["f32_w32", "all", "racecheck"], 120.0), id=HOLE,
               file=HOLE.rsplit(":", 3)[0])]
    if extra_survivor:
        ms.append(mutant(7, a, "survived", ["f32_w32", "all", "racecheck"], 80.0))
    return {"provenance": {"commit": "0" * 40, "digest": {"kernels": "k" * 64,
                                                          "emulator": "e" * 64},
                           "date": "2026-12-06 00:00 UTC"},
            "known_wrong": [], "source": {"mutants": ms, "total": len(ms), "complete": True}}


def run(data):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.json")
        json.dump(data, open(p, "w"))
        r = subprocess.run([sys.executable, MUTATE, "summary", p], capture_output=True,
                           text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def expect(cond, what, out):
    if not cond:
        print("FAIL: %s\n%s" % (what, out))
        sys.exit(1)


def main():
    rc, out = run(result(False))
    expect(rc == 0, "exit 0 when every survivor is a listed hole", out)
    expect("killed 4, survived 1, equivalent 1, stillborn 1; score 80.0% (4 / 5)" in out,
           "counts and score (equivalent and stillborn outside the denominator)", out)
    expect("killed by stage: all 2, f32_w32 1, racecheck 1" in out, "kills by stage", out)
    hole_file = os.path.basename(HOLE.rsplit(":", 3)[0])
    expect("a.cuh 2/2" in out and "b.cuh 2/2" in out and "%s 0/1" % hole_file in out,
           "killed / non-equivalent per file", out)
    expect("equivalent 100.0 s, killed 27.5 s, stillborn 2.0 s, survived 120.0 s" in out,
           "mean CPU per status", out)
    expect("every survivor a listed hole: yes" in out, "the listed hole named as such", out)
    rc, out = run(result(True))
    expect(rc == 1 and "unlisted: kernels/src/a.cuh:7:1:aor" in out,
           "exit 1 naming the unlisted survivor", out)
    rc, out = run({"source": {}})
    expect(rc != 0 and "is not a mutate.py result" in out, "a malformed result refused", out)
    print("mutate.py summary: counts, stages, files, CPU and the hole check as expected")


if __name__ == "__main__":
    main()
