"""Smoke test of the renderer on fixture JSON (reports/tests/fixture): every section
renders, images are embedded, and missing inputs say "not available".

usage: /usr/bin/python3 test_render.py REPORTS_DIR
Catches: a renderer crash on any section, an image linked instead of embedded, a missing
PNG/SVG, a missing input rendered as a number instead of "not available", the targets table
missing, a dry GPU run (the emulator in place of CUDA) presented as measurements, an input
whose source digest differs from the checkout's (or that records none) not marked stale, a
current one marked stale, a check that ran on only some launches shown as run, the grouped
plots, crossovers or table missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

reports = os.path.abspath(sys.argv[1])
fixture = os.path.join(reports, "tests", "fixture")
failures = []
sys.path.insert(0, os.path.join(os.path.dirname(reports), "scripts"))
import source_digest  # noqa: E402

CURRENT = source_digest.provenance()
OLD = dict(CURRENT, commit="0123456789abcdef", date="2026-01-01 00:00 UTC",
           digest=dict(CURRENT["digest"], kernels="0" * 64))


def check(cond, what):
    if not cond:
        failures.append(what)


def render(tmp, with_inputs, gpu_dry=False):
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    for f in ("report-data.json", "audit.json"):
        shutil.copy(os.path.join(fixture, f), out)
    path = os.path.join(out, "report-data.json")
    data = json.load(open(path))
    if with_inputs:
        # The committed campaign judged older kernels, the fresh one and the mutation score
        # these: the first must be marked stale, the others current.
        inp = os.path.join(tmp, "inputs")
        os.makedirs(inp)
        for name, prov in (("campaign", OLD), ("fresh", CURRENT), ("mutation", CURRENT)):
            j = json.load(open(os.path.join(fixture, ("mutation" if name == "mutation"
                                                      else "campaign") + ".json")))
            j["provenance"] = prov
            if name == "fresh":
                j["properties"] = j["properties"][:1]
                j["properties"][0]["cases"] = 123
            json.dump(j, open(os.path.join(inp, name + ".json"), "w"))
        t = json.load(open(os.path.join(fixture, "tightness.json")))
        t["provenance"] = OLD  # the committed tightness of older kernels: marked stale
        json.dump(t, open(os.path.join(inp, "tightness.json"), "w"))
        data["inputs"] = {"campaign": os.path.join(inp, "campaign.json"),
                          "campaign_fresh": os.path.join(inp, "fresh.json"),
                          "mutation": os.path.join(inp, "mutation.json"),
                          "tightness": os.path.join(inp, "tightness.json"),
                          "gpu_dir": os.path.join(tmp, "gpu"),
                          "targets_dir": fixture}
        data["targets"] = json.load(open(os.path.join(fixture, "targets.json")))
        data["emulator_checks"]["provenance"] = CURRENT
        ran = {k: "every launch (6)" for k in ("memcheck", "synccheck", "initcheck",
                                               "racecheck reordering", "racecheck hazard")}
        for p, s in data["emulator_checks"]["profiles"].items():
            s["ran"] = dict(ran)
        # One profile's hazard mode saw only some launches: the verdict must say so.
        data["emulator_checks"]["profiles"]["h200"]["ran"]["racecheck hazard"] = "2 of 6 launches"
        audit = json.load(open(os.path.join(out, "audit.json")))
        audit["provenance"] = CURRENT
        json.dump(audit, open(os.path.join(out, "audit.json"), "w"))
    else:
        data["inputs"] = {"campaign": os.path.join(tmp, "none", "campaign.json"),
                          "mutation": os.path.join(tmp, "none", "mutation.json"),
                          "tightness": os.path.join(tmp, "none", "tightness.json"),
                          "gpu_dir": os.path.join(tmp, "none")}
        data["gpu"] = None
        data["targets"] = None
        if gpu_dry:  # what the GPU bundle's dry run gives the report: steps, no timings
            data["gpu"] = {"dry": True, "run": {"mode": "quick", "seconds": 56, "pass": True,
                                                "machine": {"gpu": "no nvidia-smi"},
                                                "steps": [{"name": "gpu_check",
                                                           "status": "pass", "seconds": 19}]}}
        audit = json.load(open(os.path.join(out, "audit.json")))
        for r in audit["cases"]:
            r.pop("bound", None)
            r.pop("err_over_bound", None)
        json.dump(audit, open(os.path.join(out, "audit.json"), "w"))
    json.dump(data, open(path, "w"))
    r = subprocess.run([sys.executable, os.path.join(reports, "render_report.py"), out],
                       capture_output=True, text=True, timeout=240)
    check(r.returncode == 0, f"renderer exit {r.returncode}: {r.stderr[-2000:]}")
    return out


with tempfile.TemporaryDirectory() as tmp:
    out = render(tmp, True)
    page = open(os.path.join(out, "index.html")).read()
    for name in ("precision_f16", "precision_bf16", "bound_f16", "smem", "model_time_bi-v100", "model_time_h200",
                 "speedup_bi-v100", "gpu_measured", "tightness"):
        for ext in ("png", "svg"):
            p = os.path.join(out, f"{name}.{ext}")
            check(os.path.exists(p) and os.path.getsize(p) > 1000, f"{name}.{ext} missing")
    imgs = re.findall(r'<img [^>]*src="([^"]*)"', page)
    check(len(imgs) >= 10, f"expected 10 images, found {len(imgs)}")
    check(all(s.startswith("data:image/png;base64,") for s in imgs), "an image is not embedded")
    check(page.count("<figcaption>") == len(imgs), "an image without a caption")
    check("prop_merge_comm" in page, "property campaign not rendered")
    check("score 0.9" in page, "mutation score not rendered")
    check("FIXTURE GPU" in page, "GPU section not rendered")
    check("memcheck saw device memory to the byte; shared memory by guard pages" in page,
          "memcheck's coverage not rendered")
    check(">not available<" in page or "not available" in page, "bound fixture: sections")
    summary = open(os.path.join(out, "summary.md")).read()
    check("| bi-v100 | f16 |" in summary, "verdict row missing from summary.md")
    # Catches: the targets table missing, or without the model's registers beside the
    # compilers'.
    check("sm_90 (nvcc)" in page and "gfx90a (hipcc)" in page, "targets table not rendered")
    check("model assumes (registers/thread)" in page, "targets table without the model column")
    check("## Targets" in summary and "| sm_90 (nvcc) |" in summary, "targets not in summary.md")
    check("| 0.25 |" in summary, "error / bound not in the verdict")
    verdict_md = summary.split("## Verdict")[1].split("\n## ")[0]
    rows = {ln.split(" | ")[0].strip("| "): ln for ln in verdict_md.split("\n") if ln.startswith("| ")}
    check("(stale)" in rows.get("property campaign, committed", "") and
          "stale: from commit 0123456789" in rows.get("property campaign, committed", ""),
          "committed campaign of older kernels not marked stale in the verdict")
    check("123 cases" in rows.get("property campaign, run for this report", "") and
          "current: from commit" in rows.get("property campaign, run for this report", ""),
          "fresh campaign not shown as current in the verdict")
    mut = rows.get("mutation score (killed / non-equivalent)", "")
    check("current: from commit" in mut and "(stale)" not in mut, "current mutation score marked stale")
    h200 = [ln for ln in verdict_md.split("\n") if ln.startswith("| h200 |")]
    check(h200 and all("only partly: racecheck hazard: 2 of 6 launches" in ln for ln in h200),
          "a check that ran on some launches only is not said to have run partly")
    bi = [ln for ln in verdict_md.split("\n") if ln.startswith("| bi-v100 |")]
    check(bi and all("ran on every launch" in ln and "(stale)" not in ln for ln in bi),
          "bi-v100's checks: every launch, current")
    check("stale: from commit 0123456789" in page, "stale campaign section not marked")
    # Catches: the tightness section missing, its table or its fp32 target not rendered, or
    # a tightness JSON of older kernels not marked stale.
    tight = page.split("Tightness: error / bound")[1].split("<h3>")[0] if \
        "Tightness: error / bound" in page else ""
    check("fp32 target" in tight and "<td>reduce</td>" in tight, "tightness table not rendered")
    check("stale: from commit 0123456789" in tight, "tightness of older kernels not marked stale")
    check("## Tightness" in summary and "| f32 | v1 | ours |" in summary,
          "tightness not in summary.md")
    # Catches: the grouped-against-per-head plots or their crossovers missing, a profile
    # without its plot, the headline's grouped kernels left out of the breakdown, or the
    # crossover table not reaching summary.md (the fixture's "grouped" objects are the
    # model's own output for bi-v100, h200 and a100).
    for prof in ("bi-v100", "h200", "a100"):
        for ext in ("png", "svg"):
            p = os.path.join(out, f"model_grouped_{prof}.{ext}")
            check(os.path.exists(p) and os.path.getsize(p) > 1000, f"model_grouped_{prof}.{ext} missing")
    check("<h3>Grouped against per head</h3>" in page, "grouped section not rendered")
    check("grouped V2 beats V2 from 3,888 tokens" in page,
          "h200's grouped-V2-over-V2 crossover not stated in the caption")
    check("grouped v2 (4 heads/block)" in page, "headline breakdown without the grouped kernels")
    grouped_md = summary.split("## Grouped against per head (model)")[1].split("\n## ")[0] \
        if "## Grouped against per head (model)" in summary else ""
    grows = [ln for ln in grouped_md.split("\n\n")[1].split("\n") if ln.startswith("| ")] \
        if grouped_md.count("\n\n") >= 1 else []
    check(len(grows) == 1 + 6, f"grouped table in summary.md: {len(grows)} rows, want the "
          "header and 3 profiles x 2 batches")
    check(any(ln.startswith("| bi-v100 | 1 | 8,064 | 976 |") and "942." in ln for ln in grows),
          "bi-v100's crossovers or its grouped headline time not in the grouped table")
    # The lengths table the READMEs quote: V1 refused past its shared memory, the speedup
    # of the best grouped over the best per-head variant, the modelled choice.
    check("| bi-v100 | 1 | 100,000 | does not fit | 3,184.9 | does not fit | 942.4 | 3.38x | "
          "grouped v2 |" in summary, "the grouped-by-length table is not in summary.md")
    check("| h200 | 1 | 1,000 | 21.7 | 18.8 | 24.7 | 20.4 | 0.92x | v2 |" in summary,
          "a length where the model keeps per head is not shown as such")

with tempfile.TemporaryDirectory() as tmp:
    out = render(tmp, False)
    page = open(os.path.join(out, "index.html")).read()
    check("property campaign, committed" not in page or "missing" in page,
          "a missing campaign shown with figures")
    for section in ("property campaign", "mutation score", "GPU measurements", "error / bound",
                    "tightness"):
        check(re.search(re.escape(section) + r"[^<]*: not available", page) is not None,
              f"missing input not reported as not available: {section}")
    check(not os.path.exists(os.path.join(out, "gpu_measured.png")), "GPU plot without data")
    check(re.search(r"targets[^<]*: not available", page) is not None,
          "missing targets.json not reported as not available")
    check("has not run on a GPU yet" in page, "no GPU run: the page does not say it has not run")

# Catches: a dry run's emulator numbers presented as GPU measurements.
with tempfile.TemporaryDirectory() as tmp:
    out = render(tmp, False, gpu_dry=True)
    page = open(os.path.join(out, "index.html")).read()
    check("DRY RUN" in page and "has not run on a GPU yet" in page, "dry run not labelled")
    check(">gpu_check<" in page, "dry run's steps not shown")
    summary = open(os.path.join(out, "summary.md")).read()
    check("DRY RUN" in summary and "## GPU check on" not in summary,
          "summary.md presents a dry run as a GPU run")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("render smoke test: ok")
