"""Checks what slurm_test.sh's arrays and merge job wrote (WORK/shards, WORK/merged) against
the same campaign and mutants run locally (WORK/local).

usage: /usr/bin/python3 check_merged.py --work WORK --shards N --cases C --seed S ID...
Campaign: every shard file present; the merged count of each property is the sum over the
shards and equals CASES; each property's shard seeds are distinct; no failure; the merge
says complete. Mutants: the merged mutants are the shards' disjoint union and exactly the
requested ids, each killed (both are mutants the first stage kills); every shard present.
Both record the checkout's source digest (scripts/source_digest.py). Then the merged
summaries must equal WORK/local/campaign.json (run_campaign.sh, GNU parallel, same cases,
shards and seed) and WORK/local/mutation.json (mutate.py unsharded, same ids) in every
field that does not measure time (seconds, cases/s, the run's date and CPU figures).
Catches a merge that double-counts or drops a shard, shards drawing the same seeds, a
shard that ran other sources, a scheduler run whose tasks did not all run, and a job
script that runs another campaign than the local command (another seed, case count,
property set or shard split: run once with campaign.sbatch's --seed fixed at 1, the
other checks passed and this one failed on every shard's seed).
"""
import argparse
import glob
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
import source_digest  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--work", required=True)
ap.add_argument("--shards", type=int, required=True, help="campaign shards submitted")
ap.add_argument("--cases", type=int, required=True, help="cases per property")
ap.add_argument("--seed", type=int, required=True, help="campaign seed")
ap.add_argument("ids", nargs="+", help="the mutant ids submitted")
args = ap.parse_args()
work, n_campaign, cases, ids = args.work, args.shards, args.cases, args.ids
bad = []
digest = source_digest.provenance()["digest"]
# Fields that measure the run, not its outcome: they differ between any two runs.
TIMING = {"seconds", "cases_per_s", "cpu_seconds", "mutant_seconds", "mutant_cpu_seconds", "date"}


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError) as e:
        bad.append("%s: %s" % (path, e))
        return None


def outcome(x):
    """x without its timing fields, at any depth."""
    if isinstance(x, dict):
        return {k: outcome(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [outcome(v) for v in x]
    return x


def differences(a, b, path=""):
    """Where two outcomes differ, as 'path: a != b' lines (first 10)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), "%s.%s" % (path, k))
        return out[:10]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (path, i))
        return out[:10]
    return [] if a == b else ["%s: %.80r != %.80r" % (path, a, b)]


def same_as_local(what, scheduled, local_path, key=None):
    local = load(local_path)
    if scheduled is None or local is None:
        return
    a, b = outcome(scheduled), outcome(local)
    if key:  # the same items in another order are the same outcome
        a, b = key(a), key(b)
    diff = differences(a, b)
    if diff:
        bad.append("%s: the Slurm run differs from the local run (%s):\n    %s"
                   % (what, local_path, "\n    ".join(diff)))
    else:
        print("%s: the Slurm run's merged summary equals the local run's" % what)


def campaign_key(c):
    c["properties"] = sorted(c["properties"], key=lambda p: p["name"])
    return c


def mutation_key(m):
    # The local run is one unsharded run: its shard fields say so, and it has none of the
    # merge's own records (the lists' digest, reruns, resumed segments); the outcome is the rest.
    for k in ("shard", "shards", "complete", "lists_digest", "reruns", "resumed"):
        m["source"].pop(k, None)
    m["source"]["mutants"] = sorted(m["source"]["mutants"], key=lambda r: r["id"])
    return m


shards = [load(os.path.join(work, "shards", "campaign-%d-of-%d.json" % (k, n_campaign)))
          for k in range(1, n_campaign + 1)]
merged = load(os.path.join(work, "merged", "campaign.json"))
if merged and all(shards):
    if merged.get("shards") != n_campaign or merged.get("complete") is not True:
        bad.append("campaign: merged %s shards, complete %s" % (merged.get("shards"),
                                                                 merged.get("complete")))
    if merged.get("provenance", {}).get("digest") != digest:
        bad.append("campaign: merged provenance is not the checkout's source digest")
    names = [p["name"] for p in shards[0]["properties"]]
    if sorted(p["name"] for p in merged["properties"]) != sorted(names) or not names:
        bad.append("campaign: merged properties differ from the shards'")
    for p in merged["properties"]:
        rows = [r for s in shards for r in s["properties"] if r["name"] == p["name"]]
        total = sum(r["cases"] for r in rows)
        if p["cases"] != total or total != cases:
            bad.append("%s: merged %d cases, shards sum to %d, asked %d" % (p["name"], p["cases"],
                                                                        total, cases))
        if len({r["seed"] for r in rows}) != n_campaign:
            bad.append("%s: shard seeds overlap: %s" % (p["name"], [r["seed"] for r in rows]))
        if p["failures"] or any(r["failures"] for r in rows):
            bad.append("%s: %d failures (%s)" % (p["name"], p["failures"], p.get("reproduce")))
    if merged.get("seed") != args.seed:
        bad.append("campaign: merged seed %s, asked %d" % (merged.get("seed"), args.seed))
    print("campaign: %d properties, %d cases each over %d shards"
          % (len(merged["properties"]), cases, n_campaign))
    same_as_local("campaign", merged, os.path.join(work, "local", "campaign.json"), campaign_key)

mfiles = sorted(glob.glob(os.path.join(work, "shards", "mutants-*-of-*.json")))
mshards = [load(f) for f in mfiles]
mm = load(os.path.join(work, "merged", "mutation.json"))
if mm and all(mshards):
    src = mm["source"]
    got = [r["id"] for r in src["mutants"]]
    per_shard = [[r["id"] for r in s["source"]["mutants"]] for s in mshards]
    if sorted(got) != sorted(ids) or len(set(got)) != len(got):
        bad.append("mutants: merged %s, asked %s" % (got, ids))
    if sum(len(x) for x in per_shard) != len(got) or \
            len({i for x in per_shard for i in x}) != len(got):
        bad.append("mutants: shards %s are not a disjoint split of %s" % (per_shard, got))
    if src.get("total") != len(ids) or src.get("complete") is not True or \
            len(src.get("shards", [])) != len(mfiles) or len(mfiles) < 2:
        bad.append("mutants: total %s, complete %s, shards %s of %d files"
                   % (src.get("total"), src.get("complete"), src.get("shards"), len(mfiles)))
    for r in src["mutants"]:
        if r["status"] != "killed":
            bad.append("mutant %s: %s (%s)" % (r["id"], r["status"], r.get("detail")))
    if mm.get("provenance", {}).get("digest") != digest:
        bad.append("mutants: merged provenance is not the checkout's source digest")
    print("mutants: %d over %d shards, %s" % (len(got), len(mfiles),
                                               ", ".join("%s %s" % (r["id"], r["status"])
                                                         for r in src["mutants"])))
    same_as_local("mutants", mm, os.path.join(work, "local", "mutation.json"), mutation_key)
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("merged summaries: ok")
