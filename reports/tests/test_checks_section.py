"""The report's "Implementations checked" section end to end: `pagedattn report --quick
--no-render --checks tests/fixture/check` (two check JSON files written by python -m
pagedattn_torch.check, one exact-class and one wrong, and one JSON file that is not a check's)
puts one row per implementation and device into report-data.json, names the ignored file,
and the renderer's section shows the verdicts and the shrunk failure; without check files
it says "not available". Catches: a row lost or merged across implementations, the
failure not carried, a non-check JSON taken for one, the section missing when empty.

usage: /usr/bin/python3 test_checks_section.py PAGEDATTN REPORTS_SOURCE_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

pagedattn, reports, out = sys.argv[1:4]
sys.path.insert(0, reports)
import render_report  # noqa: E402
import section_checks  # noqa: E402

fixture = os.path.join(reports, "tests", "fixture", "check")
bad = []
for checks, want_rows in ((fixture, 2), (os.path.join(out, "no-such-folder"), 0)):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([pagedattn, "report", "--quick", "--no-render", "--profile", "h200",
                    "--checks", checks, "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report-data.json")) as f:
        data = json.load(f)
    sec = data["implementations_checked"]
    rows = section_checks.rows(sec)
    if len(rows) != want_rows:
        bad.append("%s: %d rows, want %d" % (checks, len(rows), want_rows))
    page, md = section_checks.render(data, render_report.fmt, render_report.html_table,
                                     render_report.md_table)
    if want_rows == 0:
        if "not available" not in page or "not available" not in md:
            bad.append("empty section does not say not available")
        continue
    by_impl = {r["implementation"]: r for r in rows}
    ours = by_impl.get("pagedattn", {})
    wrong = by_impl.get("pagedattn_torch.check.known_wrong:v2_no_rescale", {})
    if not ours.get("verdict", "").startswith("exact-class") or ours.get("failure") != "none":
        bad.append("pagedattn row %s" % ours)
    if not wrong.get("verdict", "").startswith("wrong") or "seq_lens=[513]" not in \
            wrong.get("failure", ""):
        bad.append("wrong row %s" % wrong)
    if sec.get("ignored") != ["not_a_check.json: not pagedattn-check/1 JSON"]:
        bad.append("ignored %s" % sec.get("ignored"))
    for text in ("Implementations checked", "exact-class", "wrong", "shrunk case"):
        if text not in page or text not in md:
            bad.append("%r missing from the rendered section" % text)
if bad:
    print("\n".join(bad))
    sys.exit(1)
print("checks section: ok")
