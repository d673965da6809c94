"""Renders the precision and performance report.

usage: /usr/bin/python3 render_report.py DIR

Reads DIR/report-data.json and DIR/audit.json (written by `pagedattn report`) and the
files report-data.json names (the property campaigns, the mutation score, the GPU
results); a missing input makes its section say "not available". Every input records the
commit and source digest it judged ("provenance", scripts/source_digest.py): each section
says which commit and date it comes from, and is marked stale, in the verdict tables too,
when its digest differs from the checkout's. Writes plots (PNG and SVG), DIR/index.html
(self-contained: images as data URIs) and DIR/summary.md.
"""
import base64
import glob
import html
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report_plots as rp  # noqa: E402
import section_checks  # noqa: E402

NA = "not available"
STALE = "stale"


def checkout_provenance(data):
    """What the inputs are compared with: the source tree the renderer sits in (reports/..,
    scripts/source_digest.py), else (an installed renderer) the report program's own build."""
    root = os.path.dirname(HERE)
    if os.path.exists(os.path.join(root, "scripts", "source_digest.py")) and \
            os.path.isdir(os.path.join(root, "kernels", "src")):
        sys.path.insert(0, os.path.join(root, "scripts"))
        import source_digest
        return source_digest.provenance(root), "this checkout"
    return data.get("provenance"), "the report program's build"


def freshness(prov, current):
    """(stale, text): whether a section judged other sources than the checkout's, and the
    line that says from which commit and date it comes."""
    if not isinstance(prov, dict) or not isinstance(prov.get("digest"), dict):
        return True, ("stale: records no commit or source digest, so it cannot say what it "
                      "judged")
    commit = (prov.get("commit") or "no commit")[:10] + (" (uncommitted changes)"
                                                          if prov.get("dirty") else "")
    kern = prov["digest"].get("kernels") or "?"
    if not isinstance(current, dict) or not isinstance(current.get("digest"), dict):
        return False, f"from commit {commit}, {prov.get('date', '?')} (kernels {kern[:12]})"
    changed = [p for p in sorted(prov["digest"]) if prov["digest"][p] != current["digest"].get(p)]
    if changed:
        return True, (f"stale: from commit {commit}, {prov.get('date', '?')}; "
                      f"{' and '.join(changed)} changed since (kernels {kern[:12]}, checkout "
                      f"{current['digest'].get('kernels', '?')[:12]})")
    return False, f"current: from commit {commit}, {prov.get('date', '?')} (kernels {kern[:12]})"


def marked(v, stale):
    """A verdict figure, with the stale marker when its input judged other sources."""
    return f"{fmt(v)} ({STALE})" if stale and v is not None else v


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, digits=3):
    if v is None:
        return NA
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if math.isinf(v):
        return "inf"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.{digits}g}"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(digits - 2, 1)}f}"


def num(v):
    return rp._num(v)


def worst(rows, key):
    vals = [num(r.get(key)) for r in rows if num(r.get(key)) is not None]
    return max(vals) if vals else None


def checks_cell(s):
    """The emulator-checks verdict of a profile: clean or not, and which checks ran."""
    if s is None:
        return None
    ran = s.get("ran")
    head = "clean" if s.get("clean") else f"{len(s.get('findings', []))} finding(s)"
    if not isinstance(ran, dict):
        return head + "; which checks ran is not recorded"
    partial = [f"{k}: {v}" for k, v in ran.items() if not str(v).startswith("every launch")]
    if not partial:
        return head + "; ran on every launch: " + ", ".join(ran)
    full = [k for k, v in ran.items() if str(v).startswith("every launch")]
    return head + "; only partly: " + "; ".join(partial) + " (every launch: " + \
        ", ".join(full) + ")"


def verdict(data, rows, stale):
    out = []
    dtypes = sorted({r["dtype"] for r in rows})
    for prof in data["profiles"]:
        for dt in dtypes:
            ours = [r for r in rows if r["profile"] == prof and r["dtype"] == dt
                    and r["numerics"] == "ours" and r.get("status") == "ok"]
            errors = [r for r in rows if r["profile"] == prof and r["dtype"] == dt
                      and r.get("status") == "error"]
            checks = data.get("emulator_checks", {}).get("profiles", {}).get(prof)
            model = data.get("model", {}).get(prof, {}).get("headline", {})
            out.append({
                "profile": prof,
                "dtype": dt,
                "worst_ulp": marked(worst(ours, "max_ulp_err"), stale["audit"]),
                "worst_over_bound": marked(worst(ours, "err_over_bound"), stale["audit"]),
                "cases": len(ours),
                "errors": len(errors),
                "checks": marked(checks_cell(checks), stale["checks"]),
                "v1_longest": data.get("limits", {}).get(prof, {}).get("v1_max_seq_len"),
                "v2_100k_us": model.get("v2_us"),
            })
    return out


def shared_verdicts(inputs, fresh, campaign, mutation, current):
    """The figures that no profile owns (the campaigns draw both profiles and every dtype;
    the mutants run on every instantiation): one row each, with where they come from."""
    out = []
    for what, c, path in (("property campaign, run for this report", fresh,
                           inputs.get("campaign_fresh")),
                          ("property campaign, committed", campaign, inputs.get("campaign"))):
        if not path:
            continue
        row = {"what": what, "file": path}
        if c and isinstance(c.get("properties"), list):
            cases = sum(p.get("cases", 0) for p in c["properties"])
            fails = sum(p.get("failures", 0) for p in c["properties"])
            st, row["from"] = freshness(c.get("provenance"), current)
            row["figure"] = marked(f"{cases:,} cases over {len(c['properties'])} "
                                   f"propert{'y' if len(c['properties']) == 1 else 'ies'}, "
                                   f"{fails} failures", st)
        else:
            row.update(figure=NA, **{"from": f"{path} missing"})
        out.append(row)
    row = {"what": "mutation score (killed / non-equivalent)", "file": inputs.get("mutation")}
    if mutation and isinstance(mutation.get("source"), dict):
        src = mutation["source"]
        st, row["from"] = freshness(mutation.get("provenance"), current)
        insts = src.get("instantiations") or ["f32_w32"]
        row["figure"] = marked(
            f"{fmt(src.get('score'))}: {src.get('killed')} killed of "
            f"{(src.get('killed') or 0) + (src.get('survived') or 0)} non-equivalent, "
            f"{src.get('total', '?')} of {src.get('catalogue', '?')} mutants run "
            f"({'a sample' if src.get('sample') else 'all'}), instantiations {', '.join(insts)}",
            st)
    else:
        row.update(figure=NA, **{"from": f"{inputs.get('mutation')} missing"})
    out.append(row)
    return out


SHARED_COLS = [("what", "shared by every profile and dtype"), ("figure", "figure"),
               ("from", "judged"), ("file", "file")]


VERDICT_COLS = [
    ("profile", "profile"), ("dtype", "dtype"),
    ("worst_ulp", "worst error (ulps, our numerics)"),
    ("worst_over_bound", "worst error / bound"),
    ("checks", "emulator checks (and which ran)"),
    ("v1_longest", "V1's longest sequence (tokens)"),
    ("v2_100k_us", "modelled V2 at 100K tokens (µs)"),
]


def html_table(cols, rows):
    h = "<table><tr>" + "".join(f"<th>{html.escape(c[1])}</th>" for c in cols) + "</tr>"
    for r in rows:
        h += "<tr>" + "".join(f"<td>{html.escape(fmt(r.get(c[0])))}</td>" for c in cols) + "</tr>"
    return h + "</table>"


def md_table(cols, rows):
    m = "| " + " | ".join(c[1] for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in rows:
        m += "| " + " | ".join(fmt(r.get(c[0])) for c in cols) + " |\n"
    return m


def figure(out, name, caption):
    with open(os.path.join(out, name + ".png"), "rb") as f:
        b64 = base64.b64encode(f.read()).decode()
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{b64}">'
            f'<figcaption>{html.escape(caption)} <a href="{name}.svg">SVG</a></figcaption>'
            "</figure>")


def na(what):
    return f'<p class="na">{html.escape(what)}: {NA}.</p>'


CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2;text-align:center}
td:first-child,td:nth-child(2){text-align:left}
.prov{color:#555;font-size:0.85em}
.stale{color:#a00;font-weight:bold;font-size:0.85em}
figure{margin:1.2em 0}
figure img{max-width:100%;border:1px solid #eee}
figcaption{font-style:italic;color:#444;margin-top:0.3em}
.na{color:#a00;font-weight:bold}
code{background:#f5f5f5;padding:0 3px}
"""

NOT_RUN = ("The GPU check has not run on a GPU yet: no session so far was lent one. "
           "gpu_bundle/README.md says how to run it in one call.")


def gpu_section(body, md, out, gpu, inputs):
    """The GPU bundle's run (gpu_bench/bundle/run.sh): the machine, each step, the check's
    classes, the audit's native rows, the benchmark against the model, the torch check."""
    if not gpu:
        body.append(na(f"GPU measurements (no gpu_bench.json or gpu_run.json in "
                       f"{inputs.get('gpu_dir')})"))
        body.append(f"<p>{html.escape(NOT_RUN)}</p>")
        md.append("\n## Measured on a GPU\n\nnot available. " + NOT_RUN + "\n")
        return
    dry = bool(gpu.get("dry"))
    if dry:
        note = ("DRY RUN (GPU_CHECK_DRY=1): every CUDA step ran on the emulator; nothing "
                "below is a GPU measurement. " + NOT_RUN)
        body.append(f'<p class="na">{html.escape(note)}</p>')
        md.append("\n## Measured on a GPU\n\n" + note + "\n")
    run = gpu.get("run") or {}
    if run.get("machine"):
        mrow = [{"k": k, "v": v} for k, v in run["machine"].items()]
        body.append("<h3>The machine</h3>" + html_table([("k", "item"), ("v", "what it said")],
                                                         mrow))
    if run.get("steps"):
        cols = [("name", "step"), ("status", "status"), ("seconds", "seconds"),
                ("limit_s", "limit (s)"), ("note", "what")]
        body.append(f"<h3>Steps ({html.escape(str(run.get('mode')))} mode, "
                    f"{fmt(run.get('seconds'))} s, {'pass' if run.get('pass') else 'FAIL'})</h3>"
                    + html_table(cols, run["steps"]))
        if not dry:
            md.append(f"\n## GPU check on {gpu.get('device')}\n\n" + md_table(cols, run["steps"]))
    check = gpu.get("check") or {}
    if check.get("summary"):
        crow = [dict(v, cls=k) for k, v in check["summary"].items()]
        cols = [("cls", "class"), ("cases", "checks"), ("passed", "passed"),
                ("bitwise_identical", "bit-identical to the emulator"),
                ("worst_gpu_over_bound", "worst native error / bound")]
        body.append("<h3>Native against the emulator and the reference (pagedattn_gpu_check, "
                    f"grid {html.escape(str(check.get('grid')))})</h3>" + html_table(cols, crow))
        if not dry:
            md.append("\n" + md_table(cols, crow))
    audit = gpu.get("audit") or {}
    if audit.get("rows") is not None:
        body.append("<p>Audit (<code>--backend both</code>, exact reference, proven bound): "
                    f"{fmt(audit.get('native_rows'))} native rows of {fmt(audit.get('rows'))}, "
                    f"{fmt(audit.get('native_over_bound'))} over the bound, worst native "
                    f"error / bound {fmt(audit.get('worst_native_err_over_bound'))}, largest "
                    "difference from the emulator "
                    f"{fmt(audit.get('max_gpu_vs_emulator_abs_diff'))}.</p>")
    if gpu.get("cases"):
        cap = rp.gpu_plot(out, gpu)
        body.append(figure(out, "gpu_measured", cap) if cap else na("GPU timings"))
        cols = [("kernel", "kernel"), ("num_seqs", "sequences"), ("seq_len", "seq_len"),
                ("time_us", "measured (µs)"), ("model_us", "model (µs)"),
                ("achieved_gbps", "achieved GB/s"), ("fraction_of_copy", "fraction of copy")]
        hl = [c for c in gpu["cases"] if c.get("headline")]
        body.append(f"<p>Device: {html.escape(str(gpu.get('device')))}; device-to-device copy "
                    f"{fmt(gpu.get('copy_bandwidth_gbps'))} GB/s; model profile "
                    f"{html.escape(str(gpu.get('model_profile')))}.</p>")
        if hl:
            body.append("<h3>Headline case</h3>" + html_table(cols, hl))
            if not dry:
                md.append("\n## Measured on " + str(gpu.get("device")) + "\n\n" +
                          md_table(cols, hl))
    else:
        body.append(na("GPU timings (the benchmark wrote no cases)"))
    if gpu.get("torch_check") is not None:
        body.append("<h3>torch check</h3><pre>" +
                    html.escape(json.dumps(gpu["torch_check"], indent=1)[:3000]) + "</pre>")


TARGET_COLS = [("label", "target"), ("compiler", "compiler"), ("warp", "warp"),
               ("kernels", "kernels"), ("max_registers", "max registers (VGPRs)"),
               ("min_occupancy", "lowest occupancy"), ("spilling_kernels", "spilling kernels"),
               ("model_registers_per_thread", "model assumes (registers/thread)"),
               ("seconds", "compile time (s, summed over files)")]


def targets_section(body, md, t, inputs):
    """scripts/targets/compile_targets.sh's targets.json: per target, then per kernel."""
    if not t or not t.get("targets"):
        body.append(na(f"targets (no targets.json in {inputs.get('targets_dir')}; run "
                       "scripts/targets/compile_targets.sh)"))
        md.append("\n## Targets\n\nnot available\n")
        return
    ks = t.get("kernels", [])
    shapes = t.get("grouped_shapes") or "all"
    grouped_note = ("Grouped kernels: every shape." if shapes == "all" else
                    "Grouped kernels: a sample of their shapes" +
                    (" through clang" if "nvcc: all" in shapes and "hipcc: all" in shapes
                     else "") + " (head sizes 80, 128, 256 at block "
                    "size 16, every dtype and cache; TARGETS_ALL=1 scripts/targets/compile_targets.sh "
                    "compiles every shape)" +
                    ("; every shape through nvcc (the library build's own compile)"
                     if "nvcc: all" in shapes else "") +
                    ("; every shape through hipcc." if "hipcc: all" in shapes else "."))
    rows = []
    for g in t["targets"]:
        mine = [k for k in ks if k["target"] == g["target"]]
        occ = [k["occupancy"] for k in mine if k.get("occupancy") is not None]
        r = dict(g)
        r["min_occupancy"] = min(occ) if occ else None
        if g.get("reports_from"):  # ptxas's reports of the library build: compiled there
            r["seconds"] = "in the build"
        rows.append(r)
    body.append("<p>Every kernel instantiation compiled per target; registers are per thread "
                "(AMD: VGPRs), occupancy from registers alone at 128 threads per block "
                "(NVIDIA: resident warps / 64 per SM; AMD: the compiler's waves per SIMD); "
                "the kernels' shared memory is all dynamic (it grows with seq_len: "
                "<code>pagedattn limits</code>), so the compilers report 0 static bytes. "
                + html.escape(grouped_note) + "</p>" + html_table(TARGET_COLS, rows))
    md.append("\n## Targets\n\n" + grouped_note + "\n\n" + md_table(TARGET_COLS, rows))
    labels = [g["label"] for g in t["targets"]]
    by_key = {}
    for k in ks:
        key = (k["kernel"], k.get("scalar", ""), k.get("cache", ""), k.get("head_size", 0),
               k.get("block_size", 0))
        by_key.setdefault(key, {})[k["target"]] = k
    cols = [("kernel", "kernel"), ("scalar", "dtype"), ("cache", "cache"),
            ("head_size", "head"), ("block_size", "block")]
    cols += [(g["target"], g["label"]) for g in t["targets"]]
    drows = []
    for key in sorted(by_key):
        r = dict(zip(["kernel", "scalar", "cache", "head_size", "block_size"], key))
        for tgt, k in by_key[key].items():
            cell = f"{k['registers']} r"
            if k.get("occupancy") is not None:
                cell += f", {k['occupancy']:.2f} occ"
            if k.get("spilled"):
                cell += ", SPILLS"
            r[tgt] = cell
        drows.append(r)
    body.append("<details><summary>Per instantiation: registers, occupancy, spills "
                f"({len(drows)} instantiations x {len(labels)} targets)</summary>"
                + html_table(cols, drows) + "</details>")
    if t.get("failures"):
        body.append(na(f"{len(t['failures'])} compiles failed: " +
                       ", ".join(f["job"] for f in t["failures"])))



TIGHT_COLS = [("dtype", "dtype"), ("kernel", "kernel"), ("numerics", "numerics"),
              ("worst", "worst error / bound"), ("bound_over_worst", "bound / worst error"),
              ("audit_worst", "audit worst"), ("audit_calls", "audit calls"),
              ("campaign_worst", "campaign worst"), ("campaign_outputs", "campaign outputs"),
              ("dominant_term", "largest term at the audit's worst")]


def tightness_section(body, md, out, t, inputs, current):
    """How close the proven bound is to the errors seen (reports/tightness.py's JSON): the
    worst err/bound per dtype x kernel x numerics over the audit's full grid and a property
    campaign, the fp32 target, and the distributions, not only the maxima."""
    body.append("<h3>Tightness: error / bound per dtype and kernel</h3>")
    if not (t and isinstance(t.get("rows"), list)):
        body.append(na(f"tightness ({inputs.get('tightness')})"))
        return
    stale, text = freshness(t.get("provenance"), current)
    body.append(f'<p class="{"stale" if stale else "prov"}">{html.escape(text)}</p>')
    rows = [dict(r, audit_worst=r["audit"]["worst"], audit_calls=r["audit"]["calls"],
                 campaign_worst=r["campaign"]["worst"],
                 campaign_outputs=r["campaign"]["outputs"]) for r in t["rows"]]
    c = t.get("campaign", {})
    body.append(f"<p>Audit: {len(t.get('audit_commands', []))} runs of the full grid "
                f"(<code>{html.escape((t.get('audit_commands') or ['?'])[0])}</code> and the other "
                f"caches and exp models); campaign: {fmt(c.get('cases'))} cases, seed "
                f"{html.escape(str(c.get('seed')))}.</p>" + html_table(TIGHT_COLS, rows))
    for r in t["rows"]:
        tg = r.get("target")
        if tg:
            body.append(f"<p>fp32 target (bound within {fmt(tg['bound_over_worst_at_most'])}x of "
                        f"the worst error), {r['kernel']}: "
                        f"{'met' if tg['met'] else 'not met, short by ' + fmt(tg['short_by']) + 'x'}"
                        f" over the campaign and the audit; on the audit's grid alone the bound "
                        f"is {fmt(tg.get('audit_bound_over_worst'))}x its worst error "
                        f"(largest term there: {html.escape(str(r.get('dominant_term')))})</p>")
    ok, cap = rp.tightness_plot(out, t)
    body.append(figure(out, "tightness", cap) if ok else na("tightness distributions"))
    md.append("## Tightness\n\n" + ("(stale) " if stale else "") + md_table(TIGHT_COLS, rows))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    data = load_json(os.path.join(out, "report-data.json"))
    if data is None:
        print(f"render_report.py: {out}/report-data.json is missing or not JSON", file=sys.stderr)
        return 1
    audit = load_json(os.path.join(out, "audit.json")) or {"cases": []}
    rows = audit.get("cases", [])
    inputs = data.get("inputs", {})
    campaign = load_json(inputs.get("campaign", "")) if inputs.get("campaign") else None
    mutation = load_json(inputs.get("mutation", "")) if inputs.get("mutation") else None
    fresh = load_json(inputs["campaign_fresh"]) if inputs.get("campaign_fresh") else None
    tightness = load_json(inputs["tightness"]) if inputs.get("tightness") else None
    gpu = data.get("gpu")
    current, against = checkout_provenance(data)
    ec = data.get("emulator_checks")
    gpu_prov = load_json(os.path.join(inputs.get("gpu_dir", ""), "provenance.json")) \
        if inputs.get("gpu_dir") else None
    # section -> (stale, "from commit ... / stale: ..."), each input judged on its own record.
    judged = {"audit": freshness(audit.get("provenance"), current),
              "checks": freshness((ec or {}).get("provenance"), current),
              "gpu": freshness(gpu_prov, current)}
    stale = {k: v[0] for k, v in judged.items()}

    def prov_line(stale_, text):
        return f'<p class="{"stale" if stale_ else "prov"}">{html.escape(text)}</p>'
    gpu_files = sorted(glob.glob(os.path.join(inputs.get("gpu_dir", ""), "*.json"))) \
        if inputs.get("gpu_dir") else []

    body = []
    md = []
    body.append("<h1>pagedattn: precision and performance report</h1>")
    body.append(f"<p>Generated {html.escape(data.get('generated', '?'))}, grid "
                f"<code>{html.escape(data.get('size', '?'))}</code>, profiles "
                f"{html.escape(', '.join(data['profiles']))}; {len(rows)} audited kernel calls. "
                "Errors are measured on the CPU emulator against the exact reference; times are "
                "a model's predictions unless the GPU section says otherwise. Each section says "
                f"which commit it judged, against {html.escape(against)} (kernels "
                f"{html.escape(((current or {}).get('digest') or {}).get('kernels', '?')[:12])}"
                "); a section whose source digest differs is marked stale.</p>")
    md.append("# pagedattn report summary\n")
    md.append(f"Generated {data.get('generated', '?')}, grid `{data.get('size')}`, "
              f"{len(rows)} audited kernel calls. Full page: `index.html`.\n")

    # Verdict
    v = verdict(data, rows, stale)
    shared = shared_verdicts(inputs, fresh, campaign, mutation, current)
    body.append("<h2>Verdict</h2>")
    body.append(html_table(VERDICT_COLS, v))
    notes = []
    for what, key in (("worst errors (audit)", "audit"), ("emulator checks", "checks")):
        notes.append(f"{what}: {judged[key][1]}")
    if all(r["worst_over_bound"] is None for r in v):
        notes.append("error / bound: not available (the audit rows carry no bound yet)")
    if campaign is None:
        notes.append(f"property campaign: not available ({inputs.get('campaign')} missing)")
    if mutation is None:
        notes.append(f"mutation score: not available ({inputs.get('mutation')} missing)")
    if notes:
        body.append("<p>" + "<br>".join(html.escape(n) for n in notes) + "</p>")
    body.append("<p>V1's longest sequence: head size 128, block size 16, at the profile's "
                "opt-in shared-memory limit. Modelled V2 at 100K: 1 sequence, 32 heads over 8 KV "
                "heads, head size 128, fp16 (the headline case).</p>")
    body.append("<p>Shared by every profile and dtype (the campaigns draw both profiles and "
                "every dtype; the mutants run on every instantiation):</p>"
                + html_table(SHARED_COLS, shared))
    md.append("## Verdict\n\n" + md_table(VERDICT_COLS, v) + "\n" + md_table(SHARED_COLS, shared))
    for n in notes:
        md.append(f"- {n}\n")

    # Precision
    body.append("<h2>Precision against seq_len</h2>" + prov_line(*judged["audit"]))
    sweep = [r for r in rows if r.get("distribution") == "normal" and r["num_heads"] == 8]
    for dt in sorted({r["dtype"] for r in sweep}):
        ok, cap = rp.precision_plot(out, sweep, dt, "max_ulp_err", f"precision_{dt}")
        body.append(figure(out, f"precision_{dt}", cap) if ok else na(f"precision ({dt})"))
    body.append("<h3>Error over the proved bound</h3>")
    bound_rows = [r for r in sweep if r.get("err_over_bound") is not None]
    if bound_rows:
        for dt in sorted({r["dtype"] for r in bound_rows}):
            ok, cap = rp.precision_plot(out, bound_rows, dt, "err_over_bound", f"bound_{dt}")
            body.append(figure(out, f"bound_{dt}", cap))
    else:
        body.append(na("error / bound (these audit rows carry no bound: none was launched)"))
    tightness_section(body, md, out, tightness, inputs, current)
    head = [r for r in rows if r["seq_len"] == 100000 and r["num_heads"] == 32]
    if head:
        cols = [("profile", "profile"), ("kernel", "kernel"), ("numerics", "numerics"),
                ("status", "status"), ("max_ulp_err", "max error (ulps)"),
                ("max_abs_err", "max abs error"), ("time_s", "emulator time (s)"),
                ("reason", "why not launched")]
        body.append("<h3>Headline case: 1 sequence, 32 heads, 8 KV heads, head size 128, "
                    "100,000 tokens, fp16</h3>" + html_table(cols, head))
        md.append("\n## Headline case (100,000 tokens, fp16)\n\n" + md_table(cols[:6], head))

    # Shared memory
    body.append("<h2>Shared memory</h2>")
    if data.get("limits"):
        body.append(figure(out, "smem", rp.smem_plot(out, data["limits"])))
    else:
        body.append(na("limits"))

    # Performance model
    body.append("<h2>Performance model</h2>")
    model = data.get("model") or {}
    if model:
        for prof in model:
            body.append(figure(out, *rp.model_plot(out, model, prof)))
        if "bi-v100" in model:
            body.append(figure(out, "speedup_bi-v100", rp.speedup_plot(out, model, "bi-v100")))
        # Grouped against per head (issue 18): the plots, then the crossovers as a table.
        grouped = [p for p in model if model[p].get("grouped")]
        if grouped:
            body.append("<h3>Grouped against per head</h3>")
            for prof in grouped:
                body.append(figure(out, *rp.grouped_plot(out, model, prof)))
            grows = []
            for prof in grouped:
                s = model[prof]
                hl = s.get("headline", {})
                for c in s["grouped"]["curves"]:
                    r = {"profile": prof, "num_seqs": c["num_seqs"],
                         "groups_from": c.get("chooser_groups_from") or "never (to 1M)"}
                    for x in c["crossovers"]:
                        r[f"{x['first']}>{x['later']}"] = x["seq_len"] or "never (to 1M)"
                    # The headline is one sequence; the other batch has no headline row.
                    r["v2_100k"] = hl.get("v2_us") if c["num_seqs"] == 1 else "-"
                    r["gv2_100k"] = hl.get("v2_grouped_us") if c["num_seqs"] == 1 else "-"
                    grows.append(r)
            gcols = [("profile", "profile"), ("num_seqs", "sequences"),
                     ("V1>V2", "V2 beats V1 from"),
                     ("grouped V1>grouped V2", "grouped V2 beats grouped V1 from"),
                     ("V1>grouped V1", "grouped V1 beats V1 from"),
                     ("V2>grouped V2", "grouped V2 beats V2 from"),
                     ("groups_from", "modelled choose_version groups from"),
                     ("v2_100k", "V2 + reduce at 100K (µs)"),
                     ("gv2_100k", "grouped V2 + reduce at 100K (µs)")]
            body.append("<p>First lengths (tokens, on a 16-token grid) at which one variant's "
                        "modelled time is below another's.</p>" + html_table(gcols, grows))
            md.append("\n## Grouped against per head (model)\n\n" + md_table(gcols, grows))
            arows = []
            for prof in grouped:
                for r in model[prof]["grouped"].get("at", []):
                    r = dict(r, profile=prof)
                    per_head = min(t for t in (r["V1"], r["V2"]) if t is not None)
                    best = [t for t in (r["grouped V1"], r["grouped V2"]) if t is not None]
                    r["speedup"] = f"{per_head / min(best):.2f}x" if best else NA
                    for k in ("V1", "grouped V1"):  # null: V1's shared memory does not fit
                        if r[k] is None:
                            r[k] = "does not fit"
                    arows.append(r)
            acols = [("profile", "profile"), ("num_seqs", "sequences"), ("seq_len", "seq_len"),
                     ("V1", "V1 (µs)"), ("V2", "V2 + reduce (µs)"),
                     ("grouped V1", "grouped V1 (µs)"), ("grouped V2", "grouped V2 + reduce (µs)"),
                     ("speedup", "best per head / best grouped"),
                     ("chosen", "modelled choose_version")]
            body.append(html_table(acols, arows))
            md.append("\n" + md_table(acols, arows))
        xrows = []
        for prof, s in model.items():
            for c in s["curves"]:
                xrows.append({"profile": prof, "num_seqs": c["num_seqs"],
                              "x": c["crossover_seq_len"] or "never (up to 1M)",
                              "fits": c.get("crossover_v1_launchable")})
        cols = [("profile", "profile"), ("num_seqs", "sequences"),
                ("x", "V2 faster from (tokens)"), ("fits", "V1 still launchable there")]
        body.append("<h3>Where V2 starts winning</h3>" + html_table(cols, xrows))
        md.append("\n## Where V2 starts winning (model)\n\n" + md_table(cols, xrows))
        crow = []
        for prof, s in model.items():
            for c in s.get("choices", []):
                r = dict(c)
                r["profile"] = prof
                r["vllm"] = c["vllm"] + ("" if c["vllm"] == "v2" or c["v1_fits"]
                                         else " (V1 would be refused)")
                for k in ("modelled", "facts"):  # "grouped v2" where the rule groups
                    if c.get(f"{k}_grouped"):
                        r[k] = "grouped " + c[k]
                crow.append(r)
        cols = [("profile", "profile"), ("num_seqs", "sequences"), ("seq_len", "seq_len"),
                ("modelled", "choose_version with the model"), ("facts", "from device facts"),
                ("vllm", "vLLM's rule"), ("reason", "why (model)"),
                ("grouped_reason", "grouped or per head (model)")]
        body.append("<h3>Which version each rule picks (32 heads, 8 KV heads, head size 128)</h3>"
                    + html_table(cols, crow))
        hrows = []
        for prof, s in model.items():
            for k in ("v1", "v2", "v1_grouped", "v2_grouped", "reduce"):
                if k not in s["headline"]:
                    continue
                e = dict(s["headline"][k])
                e["profile"] = prof
                if e.get("grouped"):
                    e["kernel"] = f"grouped {e['kernel']} ({e.get('heads_per_block')} heads/block)"
                e["mb"] = e["dram_bytes"] / 1e6
                hrows.append(e)
        cols = [("profile", "profile"), ("kernel", "kernel"), ("launchable", "launchable"),
                ("blocks", "blocks"), ("smem_bytes", "shared memory (B)"),
                ("resident_blocks_per_sm", "resident blocks/SM"),
                ("occupancy_limiter", "limited by"), ("waves", "waves"),
                ("mb", "DRAM (MB)"), ("t_issue_us", "issue (µs)"), ("t_memory_us", "memory (µs)"),
                ("time_us", "time (µs)"), ("bound", "bound"),
                ("bandwidth_fraction", "fraction of peak bandwidth")]
        body.append("<h3>The headline case in the model (100,000 tokens)</h3>"
                    + html_table(cols, hrows))
        pub = data.get("published") or {}
        prow = []
        for r in pub.get("times", []):
            r = dict(r)
            for k in ("v1", "v2"):
                m, p = r.get(f"model_{k}_us"), r.get(f"published_{k}_us")
                r[f"d{k}"] = f"{(m - p) / p * 100:+.0f}%" if m is not None and p else NA
            r["cal"] = "calibrated on it" if r.get("calibrated_here") else "held out"
            prow.append(r)
        cols = [("source", "source"), ("setting", "setting"),
                ("published_v1_us", "published V1 (µs)"), ("model_v1_us", "model V1 (µs)"),
                ("dv1", "V1 off by"), ("published_v2_us", "published V2 (µs)"),
                ("model_v2_us", "model V2 (µs)"), ("dv2", "V2 off by"), ("cal", "use")]
        body.append("<h3>Model against published measurements (a100 profile)</h3>"
                    + html_table(cols, prow))
        md.append("\n## Model against published measurements\n\n" + md_table(cols, prow))
        bcols = [("setting", "setting"), ("model_v2_us", "model V2 + reduce (µs)"),
                 ("model_bandwidth_fraction", "model fraction of peak bandwidth"),
                 ("model_grouped_v2_us", "model grouped V2 + reduce (µs)"),
                 ("model_grouped_bandwidth_fraction", "grouped fraction of peak bandwidth"),
                 ("published", "published")]
        body.append(html_table(bcols, pub.get("bandwidth", [])))
        md.append("\n" + md_table(bcols, pub.get("bandwidth", [])))
        prow = []
        for prof, s in model.items():
            for k, p in sorted(s["params"].items()):
                prow.append({"profile": prof, "param": k, "value": p["value"],
                             "source": p["source"], "confidence": p["confidence"]})
        cols = [("profile", "profile"), ("param", "parameter"), ("value", "value"),
                ("source", "source"), ("confidence", "confidence")]
        body.append("<details><summary>Model parameters and their sources</summary>"
                    + html_table(cols, prow) + "</details>")
    else:
        body.append(na("performance model"))

    checks_html, checks_md = section_checks.render(data, fmt, html_table, md_table)
    body.append(checks_html)
    md.append(checks_md)

    # GPU
    body.append("<h2>Measured on a GPU</h2>")
    if gpu:
        body.append(prov_line(*judged["gpu"]))
    gpu_section(body, md, out, gpu, inputs)
    if gpu_files:
        body.append("<p>GPU files read: " + ", ".join(html.escape(os.path.basename(f))
                                                     for f in gpu_files) + "</p>")

    # Targets
    body.append("<h2>Targets: the kernels as each compiler builds them</h2>")
    targets_section(body, md, data.get("targets"), inputs)

    # Properties and mutation
    body.append("<h2>Property campaigns</h2>")
    cols = [("name", "property"), ("cases", "cases"), ("discards", "discards"),
            ("failures", "failures"), ("worst_err_over_bound", "worst error / bound"),
            ("cases_per_s", "cases/s")]
    for title, c, path in (("Run for this report", fresh, inputs.get("campaign_fresh")),
                           ("Committed", campaign, inputs.get("campaign"))):
        if not path:
            continue
        body.append(f"<h3>{title} ({html.escape(str(path))})</h3>")
        if c and isinstance(c.get("properties"), list):
            body.append(prov_line(*freshness(c.get("provenance"), current)))
            body.append(f"<p>seed {html.escape(str(c.get('seed')))}, shards "
                        f"{html.escape(str(c.get('shards')))}</p>" + html_table(cols, c["properties"]))
        else:
            body.append(na(f"property campaign ({path})"))
    body.append("<h2>Mutation testing</h2>")
    if mutation and isinstance(mutation.get("source"), dict):
        src = mutation["source"]
        kw = mutation.get("known_wrong", [])
        body.append(prov_line(*freshness(mutation.get("provenance"), current)))
        body.append(f"<p>Source mutants: {fmt(src.get('killed'))} killed, "
                    f"{fmt(src.get('survived'))} survived, {fmt(src.get('equivalent'))} "
                    f"equivalent; score {fmt(src.get('score'))}; instantiations "
                    f"{html.escape(', '.join(src.get('instantiations') or ['f32_w32']))}. "
                    f"Known-wrong variants killed: {sum(1 for k in kw if k.get('killed'))} of "
                    f"{len(kw)}.</p>")
    else:
        body.append(na(f"mutation score ({inputs.get('mutation')})"))

    body.append("<h2>Emulator checks</h2>")
    if ec:
        crow = [{"profile": p, "cases": s["cases"], "clean": s["clean"],
                 "ran": "; ".join(f"{k}: {v}" for k, v in (s.get("ran") or {}).items())
                 or "not recorded",
                 "findings": "; ".join(s["findings"]) or "none"}
                for p, s in ec["profiles"].items()]
        covers = f" memcheck saw {html.escape(ec['memcheck'])}." if ec.get("memcheck") else ""
        body.append(prov_line(*judged["checks"]))
        body.append(f"<p>{html.escape(ec['checks'])} on {html.escape(ec['grid'])}; run by "
                    f"{html.escape(str(ec.get('program', 'pagedattn')))}"
                    f"{'' if ec.get('instrumented') else ' (kernels not instrumented: racecheck can only reorder)'}"
                    f".{covers}</p>"
                    + html_table([("profile", "profile"), ("cases", "kernel calls"),
                                  ("clean", "clean"), ("ran", "checks that ran"),
                                  ("findings", "findings")], crow))
    else:
        body.append(na("emulator checks"))

    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pagedattn report</title>"
            f"<style>{CSS}</style></head><body>" + "\n".join(body) + "</body></html>")
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(m.strip("\n") + "\n" for m in md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
