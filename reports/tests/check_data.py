"""Checks report-data.json of `pagedattn report --quick --no-render --profile bi-v100,h200
--gpu tests/fixture/gpu`: the C++ side's sections (catches a section missing, keyed by a
path instead of the profile's name, a GPU case without the model beside it, the
emulator-checks grid not run, racecheck's hazard mode not running on every launch of it
(kernels not instrumented: shown with PAGEDATTN_REPORT_CHECKS=none), memcheck's coverage
misstated, and an audit or checks section that does not record the checkout's source digest).

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
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("report data: ok")
