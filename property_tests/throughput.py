#!/usr/bin/python3
"""Cases per CPU second of every property, for one campaign binary or two (before/after).

Each property runs alone in its own process (`pagedattn_prop_campaign --properties P`), with
EMU_THREADS=1, and is timed by its CPU seconds (the campaign's cpu_seconds: the process and its
threads, from the kernel's accounting, around the property's run), not by the wall clock: on cores shared with other jobs the wall
clock measures the neighbours, CPU seconds measure the work. With --before, the two binaries
run one property after the other (before, after, next property), so both see the same machine
and the ratio is measured in one run; both draw the same seed, and each property's worst case
(its err/bound to the last digit and RapidCheck's text of it) must agree: a change that only
makes the suite faster draws and judges the same cases (same_cases; a mismatch is printed). The campaign estimate is the CPU seconds that N cases of
every property take, spread over --cores cores (run_campaign.sh shards a campaign that way:
every shard runs every property, one core each).

  /usr/bin/python3 property_tests/throughput.py --after build/property_tests/pagedattn_prop_campaign
  /usr/bin/python3 property_tests/throughput.py --before OLD/pagedattn_prop_campaign \
      --after build/property_tests/pagedattn_prop_campaign --cases 200 --markdown
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile


def cpu_seconds_of(cmd, env):
    """Runs cmd; returns (CPU seconds of it, its JSON summary)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        res = subprocess.run(cmd + ["--out", out.name], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            sys.exit("throughput.py: %s failed (%d): %s" % (" ".join(cmd), res.returncode,
                                                             res.stderr[-2000:]))
        summary = json.load(open(out.name))
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, summary


def rows_of(summary):
    return summary["properties"] if isinstance(summary, dict) else summary


def measure(binary, prop, cases, seed, env):
    cpu, summary = cpu_seconds_of(
        [binary, "--properties", prop, "--cases", str(cases), "--seed", str(seed)], env)
    (row,) = [r for r in rows_of(summary) if r["name"] == prop]
    if row["failures"]:
        sys.exit("throughput.py: %s failed in %s: %s" % (prop, binary, row.get("reproduce")))
    # The campaign's own CPU seconds of the property (no process start, no worst-case replay);
    # the process's where the binary records none.
    cpu = row.get("cpu_seconds", cpu)
    return {"cases": row["cases"], "cpu_seconds": cpu, "cases_per_cpu_s": row["cases"] / cpu,
            "worst": [row.get("worst_err_over_bound"), same_case_text(row.get("worst_case"))]}


def same_case_text(text):
    """The worst case as RapidCheck prints it, without the campaign's source location: its
    line, and its path, which names the folder the binary was built in (a --before tree
    unpacked elsewhere would otherwise never match)."""
    return None if text is None else re.sub(r"\S*campaign\.cpp(:\d+)?", "campaign.cpp", text)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--after", required=True, help="the campaign binary to measure")
    ap.add_argument("--before", help="a second binary (the old code), measured in the same run")
    ap.add_argument("--cases", type=int, default=200, help="cases per property (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--properties", help="comma-separated names (default: all of --after)")
    ap.add_argument("--campaign-cases", type=int, default=10000,
                    help="cases per property of the campaign to estimate (default 10000)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", help="write the figures as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the README's table")
    a = ap.parse_args()
    names = (a.properties.split(",") if a.properties else subprocess.run(
        [a.after, "--list"], check=True, capture_output=True, text=True).stdout.split())
    env = dict(os.environ, EMU_THREADS="1")
    env.pop("EMU_CHECKS", None)
    table = []
    for p in names:
        row = {"name": p}
        if a.before:
            row["before"] = measure(a.before, p, a.cases, a.seed, env)
        row["after"] = measure(a.after, p, a.cases, a.seed, env)
        if a.before and row["before"]["worst"] != row["after"]["worst"]:
            # Same seed, same cases: a faster suite that draws and judges the same cases finds
            # the same worst case with the same err/bound, to the last digit.
            row["same_cases"] = False
            print("throughput.py: %s: the worst case differs between the binaries: %r vs %r"
                  % (p, row["before"]["worst"][0], row["after"]["worst"][0]), file=sys.stderr)
        elif a.before:
            row["same_cases"] = True
        table.append(row)
        print("%-40s %s" % (p, "  ".join("%s %.1f cases/CPU-s" % (k, row[k]["cases_per_cpu_s"])
                                          for k in ("before", "after") if k in row)),
              file=sys.stderr, flush=True)
    est = {}
    for k in ("before", "after"):
        if all(k in r for r in table):
            cpu = sum(a.campaign_cases / r[k]["cases_per_cpu_s"] for r in table)
            est[k] = {"cpu_seconds": cpu, "minutes_on_cores": cpu / a.cores / 60}
    result = {"cases": a.cases, "seed": a.seed, "cores": a.cores,
              "campaign_cases": a.campaign_cases, "properties": table, "campaign_estimate": est}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=2)
    if a.markdown:
        two = bool(a.before)
        print("| property | cases/CPU-s before | after | ratio |" if two else
              "| property | cases/CPU-s |")
        print("|---|---|---|---|" if two else "|---|---|")
        for r in sorted(table, key=lambda r: (r.get("before") or r["after"])["cases_per_cpu_s"]):
            aft = r["after"]["cases_per_cpu_s"]
            if two:
                bef = r["before"]["cases_per_cpu_s"]
                print("| %s | %.1f | %.1f | %.2fx |" % (r["name"], bef, aft, aft / bef))
            else:
                print("| %s | %.1f |" % (r["name"], aft))
    for k, e in est.items():
        print("%s: %d cases of every property = %.0f CPU s = %.1f min on %d cores"
              % (k, a.campaign_cases, e["cpu_seconds"], e["minutes_on_cores"], a.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
