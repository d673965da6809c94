"""Checks report-data.json of `pagedattn report --quick --no-render --profile bi-v100,h200
--gpu tests/fixture/gpu`: the C++ side's sections (catches a section missing, keyed by a
path instead of the profile's name, a GPU case without the model beside it, the
emulator-checks grid not run, racecheck's hazard mode not running on every launch of it
(kernels not instrumented: shown with PAGEDATTN_REPORT_CHECKS=none), memcheck's coverage
misstated, an audit or checks section that does not record the checkout's source digest, and
the grouped-against-per-head data missing or wrong: see below).

usage: /usr/bin/python3 check_data.py OUT_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import source_digest  # noqa: E402

out = sys.argv[1]
# 1 where the build has the instrumented checks program (PAGEDATTN_RACE_INSTRUMENTATION;
# not in the sanitizer build): the hazard mode must then run on every launch, else on none.
instrumented_build = len(sys.argv) < 3 or sys.argv[2] == "1"
d = json.load(open(os.path.join(out, "report-data.json")))
audit = json.load(open(os.path.join(out, "audit.json")))
bad = []
if d["profiles"] != ["bi-v100", "h200"]:
    bad.append(f"profiles {d['profiles']}")
for sec in ("limits", "model"):
    if sorted(d[sec]) != ["bi-v100", "h200"]:
        bad.append(f"{sec} keys {sorted(d[sec])}")
# V1's limit at 48 KB on warp 64 (README: 12,144 tokens at head 128, block 16).
if d["limits"]["bi-v100"]["v1_max_seq_len"] != 12144:
    bad.append("bi-v100 V1 limit")
ec = d["emulator_checks"]["profiles"]
if any(ec[p]["cases"] != 4 or not ec[p]["clean"] for p in ("bi-v100", "h200")):
    bad.append(f"emulator checks {ec}")
# Every check, racecheck's hazard mode included, on every launch of the grid (V1 and V2 at
# two lengths, the reduce: 6 launches).
for p in ("bi-v100", "h200"):
    ran = ec[p].get("ran", {})
    if instrumented_build:
        if not ec[p].get("all_checks_ran") or ran.get("racecheck hazard") != "every launch (6)":
            bad.append(f"{p}: not every check ran on every launch: {ran}")
    elif ec[p].get("all_checks_ran") or ran.get("racecheck hazard") != "no launch":
        bad.append(f"{p}: an uninstrumented build claims the hazard mode ran: {ran}")
if d["emulator_checks"].get("instrumented") != instrumented_build:
    bad.append(f"emulator checks say instrumented={d['emulator_checks'].get('instrumented')}")
digest = source_digest.provenance()["digest"]
for what, prov in (("report-data", d.get("provenance")), ("audit.json", audit.get("provenance")),
                   ("emulator checks", d["emulator_checks"].get("provenance"))):
    if not prov or prov.get("digest") != digest:
        bad.append(f"{what}: provenance {prov and prov.get('digest')} is not the checkout's")
# memcheck's shared-memory coverage as the kernels that ran allow: byte-exact only when
# they carry the instrumentation (the checks program's), guard pages and canaries otherwise.
mc = d["emulator_checks"].get("memcheck", "")
want = ("shared memory to the byte (kernels instrumented)" if d["emulator_checks"].get("instrumented")
        else "shared memory by guard pages and canaries only")
if want not in mc:
    bad.append(f"memcheck coverage {mc!r}, expected {want!r}")
if not audit["cases"] or any(r["numerics"] not in ("ours", "vllm", "vllm_partials_only",
                                                   "vllm_epsilon_only", "vllm_round_p_only")
                             for r in audit["cases"]):
    bad.append("audit rows")
gpu = d["gpu"]
if gpu is None or gpu.get("model_profile") != "h200":
    bad.append(f"gpu model profile {gpu and gpu.get('model_profile')}")
else:
    # The model says nothing (null) exactly where V1 cannot launch on h200 (57,968 tokens).
    limit = d["limits"]["h200"]["v1_max_seq_len"]
    for c in gpu["cases"]:
        refused = c["kernel"] == "v1" and c["seq_len"] > limit
        if (c.get("model_us") is None) != refused:
            bad.append(f"model_us {c.get('model_us')} for {c['kernel']} at {c['seq_len']}")
for c in d["model"]["bi-v100"]["curves"]:
    if c["crossover_seq_len"] <= 0:
        bad.append(f"no crossover on bi-v100 at {c['num_seqs']} sequences")
# Grouped against per head (issue 18), per profile: the four variants' curves on the model
# grid, the crossovers, and the headline's grouped kernels. Catches the section missing, a
# grouped curve that is the per-head one (grouped V2 must be faster at the headline length
# with 8 KV heads), a grouped V2 time without its reduce (v2_grouped_us must exceed the
# kernel's own), and the modelled choose_version not grouping at the headline.
for p in ("bi-v100", "h200"):
    m = d["model"][p]
    g = m.get("grouped")
    if not g or len(g["curves"]) != 2:
        bad.append(f"{p}: grouped section {g and len(g['curves'])}")
        continue
    for c in g["curves"]:
        t = c["time_us"]
        if sorted(t) != ["V1", "V2", "grouped V1", "grouped V2"] or any(
                len(v) != len(g["seq_len"]) for v in t.values()):
            bad.append(f"{p}: grouped curves {sorted(t)}")
        if len(c["crossovers"]) != 4:
            bad.append(f"{p}: crossovers {c['crossovers']}")
    at = g.get("at", [])
    if len(at) != 8 or any(r["seq_len"] == 100000 and r["chosen"] != "grouped v2" for r in at):
        bad.append(f"{p}: the by-length rows {at}")
    hl = m["headline"]
    if not hl["v2_grouped_us"] or not hl["v2_grouped_us"] < hl["v2_us"]:
        bad.append(f"{p}: headline grouped V2 {hl['v2_grouped_us']} against V2 {hl['v2_us']}")
    if not hl["v2_grouped_us"] > hl["v2_grouped"]["time_us"] or hl["v2_grouped"]["heads_per_block"] != 4:
        bad.append(f"{p}: headline grouped V2 row {hl['v2_grouped']}")
    head = [c for c in m["choices"] if c["num_seqs"] == 1 and c["seq_len"] == 100000]
    if not head or not head[0]["modelled_grouped"] or "grouped V2" not in head[0]["grouped_reason"]:
        bad.append(f"{p}: the modelled chooser does not group the headline: {head}")
# bi-v100's headline as the READMEs quote it (the perfmodel test pins the model itself).
if round(d["model"]["bi-v100"]["headline"]["v2_grouped_us"]) != 942:
    bad.append("bi-v100 grouped headline")
bw = {r["setting"]: r for r in d["published"]["bandwidth"]}
b8 = [r for k, r in bw.items() if " 8 KV heads" in k]
b32 = [r for k, r in bw.items() if " 32 KV heads" in k]
if not b8 or b8[0]["model_grouped_bandwidth_fraction"] is None or \
        not b8[0]["model_grouped_bandwidth_fraction"] > b8[0]["model_bandwidth_fraction"]:
    bad.append(f"grouped bandwidth with 8 KV heads: {b8}")
if not b32 or b32[0]["model_grouped_bandwidth_fraction"] is not None:
    bad.append(f"grouped bandwidth with 32 KV heads (the kernels fall back: null): {b32}")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("report data: ok")
