"""The report's "Implementations checked" section: one row per implementation and device
from report-data.json's "implementations_checked" (reports/src/checks_section.cpp, which
reads the check's --json files, torch/CHECK_SCHEMA.md). render(data, fmt) -> (html, md)."""
import html

TITLE = "Implementations checked"
COLS = [("implementation", "implementation"), ("device", "device"), ("profile", "profile"),
        ("verdict", "verdict"), ("cases", "cases"), ("worst_ulps", "worst error (ulps)"),
        ("worst_ours", "worst error / our bound"), ("worst_vllm", "worst error / vLLM's bound"),
        ("cases_per_s", "cases/s"), ("worst_case", "worst case"), ("failure", "shrunk failure")]


def _max(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return max(vals) if vals else None


def rows(section):
    out = []
    for r in (section or {}).get("rows", []):
        vs = r.get("versions", [])
        fails = [v for v in vs if v.get("failure_reason")]
        failure = "none"
        if fails:
            f = fails[0]
            failure = "%s: %s; shrunk case %s" % (f["version"], f["failure_reason"],
                                                   f.get("failure_case"))
            if f.get("failure_reproduce"):
                failure += "; reproduce: %s" % f["failure_reproduce"]
        worst = [v for v in vs if isinstance(v.get("worst_over_ours"), (int, float))]
        worst = max(worst, key=lambda v: v["worst_over_ours"]) if worst else None
        seconds = sum(v.get("cases", 0) / v["cases_per_s"] for v in vs if v.get("cases_per_s"))
        out.append({
            "implementation": r.get("implementation"), "device": r.get("device"),
            "profile": r.get("profile"),
            "verdict": "%s (%s)" % (r.get("verdict"), ", ".join(
                "%s %s" % (v["version"], v["verdict"]) for v in vs)),
            "cases": r.get("cases"),
            "worst_ulps": _max(v.get("worst_err_ulps") for v in vs),
            "worst_ours": _max(v.get("worst_over_ours") for v in vs),
            "worst_vllm": _max(v.get("worst_over_vllm") for v in vs),
            "cases_per_s": r.get("cases", 0) / seconds if seconds else None,
            "worst_case": "%s: %s at %s" % (worst["version"], worst.get("worst_case"),
                                            worst.get("worst_where")) if worst else "none",
            "failure": failure,
        })
    return out


def render(data, fmt, html_table, md_table):
    """fmt, html_table, md_table: the page's own formatters (render_report.py)."""
    section = data.get("implementations_checked")
    table = rows(section)
    where = (section or {}).get("dir", "out/check")
    if not table:
        msg = ("not available (no check JSON in %s; run python3 -m pagedattn_torch.check IMPL "
               "--json %s/NAME.json)" % (where, where))
        return ('<h2>%s</h2><p class="na">%s</p>' % (TITLE, html.escape(msg)),
                "\n## %s\n\n%s\n" % (TITLE, msg))
    note = ("Each implementation run by <code>python3 -m pagedattn_torch.check</code> on its "
            "device, judged on the host against the exact reference and the proven bound "
            "(exact-class: within our numerics' bound; vllm-class: within vLLM's numerics'; "
            "wrong: outside both, a NaN rule broken, a write outside an output, a modified "
            "input, or output changed by garbage past seq_len). Read from %s." %
            html.escape(where))
    ignored = (section or {}).get("ignored") or []
    extra = "<p>Ignored: %s</p>" % html.escape("; ".join(ignored)) if ignored else ""
    return ("<h2>%s</h2><p>%s</p>%s%s" % (TITLE, note, html_table(COLS, table), extra),
            "\n## %s\n\n%s" % (TITLE, md_table(COLS, table)))
