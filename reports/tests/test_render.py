"""Smoke test of the renderer on fixture JSON (reports/tests/fixture): every section
renders, images are embedded, and missing inputs say "not available".

usage: /usr/bin/python3 test_render.py REPORTS_DIR
Catches: a renderer crash on any section, an image linked instead of embedded, a missing
PNG/SVG, a missing input rendered as a number instead of "not available", the targets table
missing, a dry GPU run (the emulator in place of CUDA) presented as measurements.
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
        data["inputs"] = {"campaign": os.path.join(fixture, "campaign.json"),
                          "mutation": os.path.join(fixture, "mutation.json"),
                          "gpu_dir": os.path.join(tmp, "gpu"),
                          "targets_dir": fixture}
        data["targets"] = json.load(open(os.path.join(fixture, "targets.json")))
    else:
        data["inputs"] = {"campaign": os.path.join(tmp, "none", "campaign.json"),
                          "mutation": os.path.join(tmp, "none", "mutation.json"),
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
                 "speedup_bi-v100", "gpu_measured"):
        for ext in ("png", "svg"):
            p = os.path.join(out, f"{name}.{ext}")
            check(os.path.exists(p) and os.path.getsize(p) > 1000, f"{name}.{ext} missing")
    imgs = re.findall(r'<img [^>]*src="([^"]*)"', page)
    check(len(imgs) >= 9, f"expected 9 images, found {len(imgs)}")
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

with tempfile.TemporaryDirectory() as tmp:
    out = render(tmp, False)
    page = open(os.path.join(out, "index.html")).read()
    for section in ("property campaign", "mutation score", "GPU measurements", "error / bound"):
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
