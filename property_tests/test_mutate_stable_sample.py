#!/usr/bin/env python3
"""ctest properties.mutate_stable_sample: CI's fixed mutant sample (`mutate.py
--stable-sample`, scripts/test.d/40-mutants.sh) must stay the same mutants when lines move
and when the catalogue gains mutants elsewhere, and must still tell apart mutants whose
line text repeats. Checked on the real catalogue (`all_mutants()`, the checkout's kernels):
its ids renumbered as if every line moved down by 7 give the same sample by content; new
mutants added ahead of it in the list leave every old member in (unless a new one ranks
first, when the sample's last member makes way); the sample holds n distinct mutants. A
sample by position, by id or by list index fails the first two."""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("mutate", os.path.join(ROOT, "property_tests",
                                                                     "mutate.py"))
mutate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutate)


def what(m):
    return (m["file"], m["op"], m["original"], m["mutated"])


def main():
    ms = mutate.all_mutants()
    n = 16
    base = mutate.stable_sample(ms, n)
    fails = []
    if len({m["id"] for m in base}) != n:
        fails.append("the sample does not hold %d distinct mutants" % n)
    # Every line 7 further down: new ids, same changes.
    moved = [dict(m, id="%s:%d:%s" % (m["file"], m["line"] + 7, m["id"].split(":", 2)[2]),
                  line=m["line"] + 7) for m in ms]
    if [what(m) for m in mutate.stable_sample(moved, n)] != [what(m) for m in base]:
        fails.append("moving every line changed the sample")
    # Twenty new mutants of a new file, ahead of the others in the list.
    new = [{"id": "kernels/src/new.cuh:%d:1:aor" % i, "file": "kernels/src/new.cuh",
            "line": i, "op": "aor", "original": "x = a + b%d;" % i,
            "mutated": "x = a - b%d;" % i} for i in range(20)]
    grown = mutate.stable_sample(new + ms, n)
    kept = [m for m in grown if m["file"] != "kernels/src/new.cuh"]
    if [m["id"] for m in kept] != [m["id"] for m in base[:len(kept)]]:
        fails.append("new mutants elsewhere displaced old ones out of order")
    # Two identical changes (the same line text twice in a file) are two mutants.
    twin = dict(ms[0], id=ms[0]["id"] + "-twin")
    both = mutate.stable_sample([ms[0], twin], 2)
    if len(both) != 2 or len({m["id"] for m in both}) != 2:
        fails.append("a repeated line's two mutants collapsed into one")
    for f in fails:
        print("FAIL:", f)
    print("stable sample of %d from %d mutants: %s" % (n, len(ms), "ok" if not fails else
                                                        "%d failure(s)" % len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
