"""Switch vLLM's paged attention over to pagedattn, visibly and reversibly.

    python3 -m pagedattn_torch.switch_on --vllm-root DIR (--out OUTDIR | --patch FILE) [--undo]

DIR is an installed vLLM package (the folder holding _custom_ops.py and
attention/ops/paged_attn.py; its parent works too). The helper never writes there: it
writes patched copies under OUTDIR (same relative paths) or a unified diff to FILE, which
you apply yourself (`patch -p1 -d DIR < FILE`, undone with `patch -R -p1 -d DIR < FILE`).
--undo reads patched files and writes the originals back out the same two ways.

What the patch does:
  _custom_ops.py   paged_attention_v1 / _v2 are rebound, at the end of the module, to
                   pagedattn_torch.vllm_ops (same arguments), so every `ops.paged_attention_*`
                   call runs pagedattn's kernels, also where v2 raised NotImplementedError.
  paged_attn.py    the `use_v1 = ...` statement in PagedAttention.forward_decode (vLLM's
                   heuristic, or BI-V100's hard-coded True) becomes the project's rule,
                   pagedattn_torch.use_v1(num_seqs, num_heads, head_size, block_size,
                   max_seq_len, query.device, num_kv_heads=..., dtype=query.dtype): the
                   V1/V2 choice made with the grouped kernels' grid where they apply.

Files that do not look as expected are refused, saying what was looked for. Every patch
is checked to parse and to undo to the original byte for byte before anything is written.
"""
import argparse
import ast
import difflib
import os
import sys

BEGIN = "# >>> pagedattn switch-on"
END = "# <<< pagedattn switch-on"
ORIG = "# | "  # an original line kept inside a block, restored by --undo
ADDED = "  # pagedattn switch-on (added line)"
NO_FINAL_NEWLINE = " (file had no final newline)"

CUSTOM_OPS = "_custom_ops.py"
PAGED_ATTN = os.path.join("attention", "ops", "paged_attn.py")

# The leading parameters of vLLM's wrappers (v0.6.x and the BI-V100 build); later
# parameters (tp_rank, blocksparse_*) have defaults and are passed through.
V1_PARAMS = ["out", "query", "key_cache", "value_cache", "num_kv_heads", "scale",
             "block_tables", "seq_lens", "block_size", "max_seq_len", "alibi_slopes",
             "kv_cache_dtype", "k_scale", "v_scale"]
V2_PARAMS = V1_PARAMS[:1] + ["exp_sum", "max_logits", "tmp_out"] + V1_PARAMS[1:]
# What the replacement rule reads inside forward_decode.
RULE_NAMES = ["num_seqs", "num_heads", "head_size", "block_size", "max_seq_len", "query",
              "num_kv_heads"]
# pagedattn's V2 partitions are 512 tokens; vLLM sizes exp_sums/tmp_out by its own.
PARTITION_SIZE = 512


class Refused(Exception):
    """A file is not what the helper knows how to patch (or undo)."""


def _refuse(path, what):
    raise Refused("%s: %s; refusing to patch it" % (path, what))


def _parse(text, path):
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as e:
        _refuse(path, "it does not parse as Python (%s)" % e)


def _is_patched(text):
    return BEGIN in text or ADDED in text


# ---------------------------------------------------------------------------- undo


def undo_text(text, path):
    """The original of a patched file: blocks give back their `# | ` lines, added
    lines go."""
    if not _is_patched(text):
        raise Refused("%s: no '%s' block or '%s' line: it is not patched" % (path, BEGIN,
                                                                            ADDED.strip()))
    out, inside, strip_final_newline = [], False, False
    for line in text.splitlines(True):
        body = line.rstrip("\n")
        if body.lstrip().startswith(BEGIN):
            if inside:
                raise Refused("%s: nested '%s' blocks" % (path, BEGIN))
            inside = True
            strip_final_newline |= body.endswith(NO_FINAL_NEWLINE)
        elif body.lstrip().startswith(END):
            if not inside:
                raise Refused("%s: '%s' without its '%s'" % (path, END, BEGIN))
            inside = False
        elif inside:
            if body.startswith(ORIG):
                out.append(body[len(ORIG):] + "\n")
        elif body.endswith(ADDED):
            continue
        else:
            out.append(line)
    if inside:
        raise Refused("%s: '%s' block never closed by '%s'" % (path, BEGIN, END))
    result = "".join(out)
    if strip_final_newline and result.endswith("\n"):
        result = result[:-1]
    return result


# ----------------------------------------------------------------- _custom_ops.py


def _check_wrapper(tree, name, want, path):
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(defs) != 1:
        _refuse(path, "looked for one module-level 'def %s(...)', found %d" % (name, len(defs)))
    got = [a.arg for a in defs[0].args.args]
    if got[:len(want)] != want:
        _refuse(path, "'def %s' should begin with the parameters (%s) of vLLM 0.6.x, found (%s)"
                % (name, ", ".join(want), ", ".join(got)))


def patch_custom_ops(text, path):
    if _is_patched(text):
        _refuse(path, "it is already patched (found '%s'); use --undo first" % BEGIN)
    tree = _parse(text, path)
    _check_wrapper(tree, "paged_attention_v1", V1_PARAMS, path)
    _check_wrapper(tree, "paged_attention_v2", V2_PARAMS, path)
    begin = BEGIN + (NO_FINAL_NEWLINE if not text.endswith("\n") else "")
    block = [
        begin + ": paged_attention_v1/v2 run pagedattn's kernels",
        "# (undo: python3 -m pagedattn_torch.switch_on --undo ...)",
        "from pagedattn_torch.vllm_ops import (  # noqa: E402,F811",
        "    paged_attention_v1, paged_attention_v2)",
        END,
    ]
    prefix = text if text.endswith("\n") else text + "\n"
    return prefix + "\n".join(block) + "\n"


# ---------------------------------------------------------------- paged_attn.py


def _names_bound(func):
    """Parameter names and every name assigned anywhere in `func`."""
    names = {a.arg for a in func.args.args + func.args.kwonlyargs}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _partition_size(tree):
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "_PARTITION_SIZE"
                and isinstance(node.value, ast.Constant)):
            return node.value.value
    return None


def patch_paged_attn(text, path):
    if _is_patched(text):
        _refuse(path, "it is already patched (found '%s'); use --undo first" % BEGIN)
    tree = _parse(text, path)
    lines = text.splitlines(True)
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "vllm"
               and any(a.name == "_custom_ops" and a.asname == "ops" for a in n.names)]
    if len(imports) != 1:
        _refuse(path, "looked for the line 'from vllm import _custom_ops as ops', found %d"
                % len(imports))
    size = _partition_size(tree)
    if size != PARTITION_SIZE:
        _refuse(path, "looked for '_PARTITION_SIZE = %d' (pagedattn's V2 partition), found %r"
                % (PARTITION_SIZE, size))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PagedAttention"]
    if len(classes) != 1:
        _refuse(path, "looked for one 'class PagedAttention', found %d" % len(classes))
    funcs = [n for n in classes[0].body
             if isinstance(n, ast.FunctionDef) and n.name == "forward_decode"]
    if len(funcs) != 1:
        _refuse(path, "looked for 'def forward_decode' in class PagedAttention, found %d"
                % len(funcs))
    func = funcs[0]
    stmts = [n for n in ast.walk(func) if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "use_v1" for t in n.targets)]
    if len(stmts) != 1:
        _refuse(path, "looked for one 'use_v1 = ...' statement in forward_decode, found %d"
                % len(stmts))
    calls = {n.func.attr for n in ast.walk(func) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
             and n.func.value.id == "ops"}
    for op in ("paged_attention_v1", "paged_attention_v2"):
        if op not in calls:
            _refuse(path, "looked for a call 'ops.%s(...)' in forward_decode, found none" % op)
    missing = [n for n in RULE_NAMES if n not in _names_bound(func)]
    if missing:
        _refuse(path, "forward_decode does not define %s, which the version rule needs"
                % ", ".join(missing))
    stmt = stmts[0]
    first, last = stmt.lineno - 1, stmt.end_lineno  # 0-based [first, last)
    indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
    block = [indent + BEGIN + ": the project's V1/V2 rule replaces"]
    block += [ORIG + l.rstrip("\n") for l in lines[first:last]]
    block += [indent + "use_v1 = _pagedattn_torch.use_v1(num_seqs, num_heads, head_size,",
              indent + "                                 block_size, max_seq_len, query.device,",
              indent + "                                 num_kv_heads=num_kv_heads,",
              indent + "                                 dtype=query.dtype)",
              indent + END]
    imp = imports[0].end_lineno  # the line after the ops import
    if not lines[last - 1].endswith("\n"):
        _refuse(path, "the use_v1 statement is the file's last line")
    new = (lines[:imp] + ["import pagedattn_torch as _pagedattn_torch" + ADDED + "\n"]
           + lines[imp:first] + [l + "\n" for l in block] + lines[last:])
    return "".join(new)


# ------------------------------------------------------------------------- driver


def find_root(root):
    """The vLLM package folder: `root` itself or root/vllm."""
    for cand in (root, os.path.join(root, "vllm")):
        if all(os.path.isfile(os.path.join(cand, f)) for f in (CUSTOM_OPS, PAGED_ATTN)):
            return cand
    raise Refused("--vllm-root %s: looked for %s and %s there and under %s/vllm, found neither"
                  " pair" % (root, CUSTOM_OPS, PAGED_ATTN, root))


def transform(root, undo):
    """{relative path: (original text, new text)} for both files; raises Refused."""
    result = {}
    for rel, patch in ((CUSTOM_OPS, patch_custom_ops), (PAGED_ATTN, patch_paged_attn)):
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if undo:
            new = undo_text(text, path)
            _parse(new, path + " (undone)")
            if patch(new, path) != text:
                raise Refused("%s: patching the undone text does not give this file back: it "
                              "was edited after patching; refusing to guess" % path)
        else:
            new = patch(text, path)
            _parse(new, path + " (patched)")
            if undo_text(new, path) != text:  # the promise --undo makes, checked up front
                raise Refused("%s: the patch would not undo to this file exactly" % path)
        result[rel] = (text, new)
    return result


def write_out(root, outdir, result):
    for rel, (_, new) in result.items():
        dst = os.path.join(outdir, rel)
        src = os.path.join(root, rel)
        if os.path.exists(dst) and os.path.samefile(dst, src):
            raise Refused("--out %s would overwrite %s in the installation; choose another "
                          "folder" % (outdir, src))
    for rel, (_, new) in result.items():
        dst = os.path.join(outdir, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = dst + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, dst)
        print("wrote %s" % dst)
    print("to install: " + "; ".join("cp %s %s" % (os.path.join(outdir, rel),
                                                  os.path.join(root, rel)) for rel in result))


def write_patch(patch_file, result):
    parts = []
    for rel, (old, new) in result.items():
        parts.extend(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                          "a/" + rel, "b/" + rel))
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += "\n\\ No newline at end of file\n"
    with open(patch_file, "w", encoding="utf-8") as f:
        f.writelines(parts)
    print("wrote %s (apply: patch -p1 -d VLLM_ROOT < %s; revert: patch -R -p1 -d VLLM_ROOT < %s)"
          % (patch_file, patch_file, patch_file))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m pagedattn_torch.switch_on",
        description="Route vLLM's paged_attention_v1/v2 to pagedattn and replace the use_v1 "
        "hard-code with the project's version rule. Writes patched copies or a patch; never "
        "edits the installation.")
    parser.add_argument("--vllm-root", required=True,
                        help="the vllm package folder (holding _custom_ops.py) or its parent")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="write the patched (or, with --undo, restored) files here")
    where.add_argument("--patch", help="write a unified diff (apply with patch -p1 -d ROOT)")
    parser.add_argument("--undo", action="store_true",
                        help="the files under --vllm-root are patched: produce the originals")
    args = parser.parse_args(argv)
    try:
        root = find_root(args.vllm_root)
        result = transform(root, args.undo)
        if args.out:
            write_out(root, args.out, result)
        else:
            write_patch(args.patch, result)
    except Refused as e:
        print("switch_on: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
