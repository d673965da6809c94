#!/usr/bin/python3
"""The bound's tightness, measured: err/bound per dtype and kernel (issue 19, item 4).

usage: /usr/bin/python3 reports/tightness.py --pagedattn BIN --campaign CAMPAIGN.json
                                             [--out out/properties/tightness.json]
                                             [--audit-dir DIR] [--reuse]

Runs the audit's full grid (its default shape: bi-v100, 32 heads over 8 KV heads, head 128,
1000 tokens, partition 512; every distribution; f32, f16, bf16; the three caches; ours and
vLLM's numerics; the exp exact, 4 ulps random and 4 ulps adversarial) and reads a property
campaign (property_tests/run_campaign.sh: its err_over_bound_by_tag distributions). Writes
one JSON the report reads (render_report.py's tightness section): per dtype x kernel x
numerics the worst err/bound, the number of kernel calls, the distribution (the campaign's
bins: quarter decades of log10 from 1e-8 to 1) from the audit and from the campaign, and
for the worst audit row the bound's parts at its worst element (which term holds the
slack). The fp32 target (bound within 10x of the worst error observed, ours) is evaluated
per kernel. Provenance: the audit's (the commit and source digest the pagedattn program was
built from, scripts/source_digest.py); the campaign must record the same digest.
--reuse reads the audit JSONs already in --audit-dir instead of running them.
"""
import argparse
import json
import math
import os
import subprocess
import sys

LOW, PER = -8, 4  # the campaign's RatioHistogram (property_tests/harness.h)
BINS = -LOW * PER
CACHES = ("auto", "fp8_e4m3", "fp8_e5m2")
EXP = (("exact_and_random", ["--exp-ulp", "0,4"]),
       ("adversarial", ["--exp-ulp", "4", "--exp-mode", "adversarial"]))
PARTS = ("softmax", "sums", "tail", "absolute", "final_rounding")
TARGET = 10.0  # fp32: the bound at most this many times the worst error observed


def empty_hist():
    return {"zero": 0, "below": 0, "over": 0, "log10_low": LOW, "bins_per_decade": PER,
            "bins": [0] * BINS, "worst": 0.0}


def add(h, r):
    h["worst"] = max(h["worst"], r)
    if r == 0:
        h["zero"] += 1
    elif r > 1:
        h["over"] += 1
    else:
        b = int(math.floor((math.log10(r) - LOW) * PER))
        if b < 0:
            h["below"] += 1
        else:
            h["bins"][min(b, BINS - 1)] += 1


def merge(h, g):
    if g.get("log10_low") != LOW or g.get("bins_per_decade") != PER or len(g["bins"]) != BINS:
        raise SystemExit("tightness.py: the campaign's histograms have other bins")
    for k in ("zero", "below", "over"):
        h[k] += g[k]
    h["bins"] = [a + b for a, b in zip(h["bins"], g["bins"])]
    h["worst"] = max(h["worst"], g["worst"] or 0.0)


def count(h):
    return h["zero"] + h["below"] + h["over"] + sum(h["bins"])


def run_audits(binary, audit_dir, reuse):
    files = []
    for cache in CACHES:
        for name, flags in EXP:
            path = os.path.join(audit_dir, f"audit-{cache}-{name}.json")
            cmd = [binary, "audit", "--distribution", "all", "--dtype", "f32,f16,bf16",
                   "--kv-cache-dtype", cache, "--numerics", "both", *flags, "--quiet",
                   "--json", path]
            if not (reuse and os.path.exists(path)):
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            files.append((path, " ".join(["pagedattn"] + cmd[1:-2])))
    return files


def describe(r):
    e = r["exp_model"]
    return (f"{r['kernel']} {r['dtype']}/{r['kv_cache_dtype']} {r['distribution']} "
            f"{r['numerics']} exp {e['mode']}:{e['max_ulp']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pagedattn", required=True, help="the pagedattn program")
    ap.add_argument("--campaign", required=True, help="a merged campaign.json")
    ap.add_argument("--out", default="out/properties/tightness.json")
    ap.add_argument("--audit-dir", default="build/tightness-audit")
    ap.add_argument("--reuse", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.audit_dir, exist_ok=True)
    with open(a.campaign) as f:
        campaign = json.load(f)

    groups = {}  # (dtype, kernel, numerics) -> entry
    prov, commands = None, []

    def entry(key):
        return groups.setdefault(key, {
            "dtype": key[0], "kernel": key[1], "numerics": key[2],
            "audit": {"calls": 0, "worst": None, "worst_row": None, "worst_bound_parts": None,
                      "histogram": empty_hist(), "adversarial_worst": None},
            "campaign": {"outputs": 0, "worst": None, "histogram": empty_hist()}})

    for path, cmd in run_audits(a.pagedattn, a.audit_dir, a.reuse):
        commands.append(cmd)
        with open(path) as f:
            audit = json.load(f)
        p = audit.get("provenance")
        if prov is None:
            prov = p
        elif (p or {}).get("digest") != prov.get("digest"):
            raise SystemExit(f"tightness.py: {path} judged other sources than the first audit")
        for r in audit["cases"]:
            if not r["launched"] or r["numerics"] not in ("ours", "vllm"):
                continue
            x = r["err_over_bound"]
            x = math.inf if x == "inf" else x
            g = entry((r["dtype"], r["kernel"], r["numerics"]))["audit"]
            g["calls"] += 1
            add(g["histogram"], x)
            if r["exp_model"]["mode"] == "adversarial":
                g["adversarial_worst"] = max(g["adversarial_worst"] or 0.0, x)
            if g["worst"] is None or x > g["worst"]:
                g["worst"], g["worst_row"] = x, describe(r)
                g["worst_bound_parts"] = r.get("worst_bound_parts")

    cprov = campaign.get("provenance") or {}
    if cprov.get("digest") != (prov or {}).get("digest"):
        raise SystemExit("tightness.py: the campaign judged other sources than the audit "
                         "(source digests differ)")
    cases = 0
    for prop in campaign["properties"]:
        cases += prop["cases"]
        for tag, h in (prop.get("err_over_bound_by_tag") or {}).items():
            dtype, kernel, numerics = tag.split("/")
            if numerics not in ("ours", "vllm"):
                continue
            g = entry((dtype, kernel, numerics))["campaign"]
            merge(g["histogram"], h)
            g["outputs"] = count(g["histogram"])
            if h["worst"] is not None and (g["worst"] is None or h["worst"] > g["worst"]):
                g["worst"], g["worst_property"] = h["worst"], prop["name"]

    rows = []
    for key in sorted(groups, key=lambda k: (("f32", "f16", "bf16").index(k[0]),
                                             ("v1", "v2", "reduce").index(k[1]), k[2])):
        e = groups[key]
        worst = max([v for v in (e["audit"]["worst"], e["campaign"]["worst"]) if v is not None],
                    default=None)
        e["worst"] = worst
        e["bound_over_worst"] = (1 / worst) if worst else None
        parts = e["audit"]["worst_bound_parts"]
        if parts:
            fp = {k: parts[k] for k in PARTS if isinstance(parts.get(k), (int, float))}
            tot = sum(fp.values())
            e["dominant_term"] = max(fp, key=fp.get) if tot > 0 else None
            e["term_shares"] = {k: v / tot for k, v in fp.items()} if tot > 0 else None
        if key[0] == "f32" and key[2] == "ours":
            aw = e["audit"]["worst"]
            e["target"] = {"bound_over_worst_at_most": TARGET,
                           "met": bool(worst) and 1 / worst <= TARGET,
                           "short_by": (1 / worst / TARGET) if worst else None,
                           "audit_bound_over_worst": (1 / aw) if aw else None,
                           "audit_met": bool(aw) and 1 / aw <= TARGET}
        rows.append(e)

    out = {"schema": "pagedattn tightness 1", "tool": "reports/tightness.py",
           "provenance": prov, "campaign_provenance": cprov,
           "audit_commands": commands, "campaign": {"file": a.campaign, "cases": cases,
                                                     "seed": campaign.get("seed")},
           "rows": rows}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for e in rows:
        print(f"{e['dtype']:>4} {e['kernel']:>6} {e['numerics']:>4}: worst {e['worst']!s:.6} "
              f"(audit {e['audit']['worst']!s:.6} over {e['audit']['calls']} calls, campaign "
              f"{e['campaign']['worst']!s:.6} over {e['campaign']['outputs']} outputs) "
              f"dominant {e.get('dominant_term')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
