"""Checks what slurm_test.sh's arrays and merge job wrote (WORK/shards, WORK/merged).

usage: /usr/bin/python3 check_merged.py WORK CAMPAIGN_SHARDS CASES MUTANT_ID...
Campaign: every shard file present; the merged count of each property is the sum over the
shards and equals CASES; each property's shard seeds are distinct; no failure; the merge
says complete. Mutants: the merged mutants are the shards' disjoint union and exactly the
requested ids, each killed (both are mutants the first stage kills); every shard present.
Both record the checkout's source digest (scripts/source_digest.py). Catches a merge that
double-counts or drops a shard, shards drawing the same seeds, a shard that ran other
sources, and a scheduler run whose tasks did not all run.
"""
import glob
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
import source_digest  # noqa: E402

work, n_campaign, cases, ids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
bad = []
digest = source_digest.provenance()["digest"]


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError) as e:
        bad.append("%s: %s" % (path, e))
        return None


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
    print("campaign: %d properties, %d cases each over %d shards"
          % (len(merged["properties"]), cases, n_campaign))

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
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("merged summaries: ok")
