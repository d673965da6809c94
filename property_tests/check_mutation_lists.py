#!/usr/bin/python3
"""Every mutant id that property_tests/mutation_equivalent.json, mutation_survivors.json and
scripts/test.d/40-mutants.sh (--ids) name is in mutate.py's catalogue of the current
sources: a kernel edit that moves lines must re-key them, or their reasons describe
mutants that no longer exist. Fails (exit 1) naming each stale id. Caught once: the
grouped kernels' merge shifted attention_phases.cuh and left 16 listed ids stale.

usage: check_mutation_lists.py [ROOT]
"""
import json
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
listing = subprocess.run([sys.executable, os.path.join(root, "property_tests", "mutate.py"), "--list"],
                         check=True, capture_output=True, text=True).stdout
ids = {line.split(" | ", 1)[0] for line in listing.splitlines() if " | " in line}
named = {}
for name in ("mutation_equivalent.json", "mutation_survivors.json"):
    for k in json.load(open(os.path.join(root, "property_tests", name))):
        named[k] = name
stage = open(os.path.join(root, "scripts", "test.d", "40-mutants.sh")).read()
for k in re.findall(r"--ids\s+(\S+)", stage):
    named[k] = "scripts/test.d/40-mutants.sh"
stale = sorted(k for k in named if k not in ids)
for k in stale:
    print(f"{named[k]}: {k} is not a mutant of the current sources (mutate.py --list)")
print(f"{len(named)} listed ids, {len(ids)} mutants, {len(stale)} stale")
sys.exit(1 if stale else 0)
