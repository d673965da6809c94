"""Checks report-data.json of `pagedattn report --quick --no-render --profile bi-v100,h200
--gpu tests/fixture/gpu`: the C++ side's sections (catches a section missing, keyed by a
path instead of the profile's name, a GPU case without the model beside it, or the
emulator-checks grid not run, or memcheck's coverage misstated).

usage: /usr/bin/python3 check_data.py OUT_DIR
"""
import json
import os
import sys

out = sys.argv[1]
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
# pagedattn's kernels are not instrumented: memcheck must not claim byte-exact shared memory.
mc = d["emulator_checks"].get("memcheck", "")
if "shared memory by guard pages and canaries only" not in mc:
    bad.append(f"memcheck coverage {mc!r}")
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
