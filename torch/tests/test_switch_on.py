"""The switch-on helper on copies of vLLM's two files (fixtures/: vLLM 0.6.3's shape and
the BI-V100 build's, where paged_attention_v2 raises NotImplementedError and use_v1 is
hard-coded True). Catches: a patch that edits the installation, does not route to
pagedattn, leaves use_v1 hard-coded, cannot be undone byte for byte, or accepts files it
does not understand."""
import contextlib
import importlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

import pagedattn_torch as pa
from pagedattn_torch import switch_on
from vllm_like import Case, reference, vllm_tolerances

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = {name: os.path.join(HERE, "fixtures", name, "vllm")
            for name in ("vllm_0_6_3", "vllm_bi_v100")}
FILES = (switch_on.CUSTOM_OPS, switch_on.PAGED_ATTN)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def snapshot(root):
    return {rel: read(os.path.join(root, rel)) for rel in FILES}


def helper(*args):
    """Runs main(); returns (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = switch_on.main(list(args))
    return code, err.getvalue()


@contextlib.contextmanager
def imported_vllm(package_parent):
    """Imports the `vllm` package under package_parent, and forgets it afterwards."""
    sys.path.insert(0, package_parent)
    try:
        for m in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
            del sys.modules[m]
        importlib.invalidate_caches()
        yield importlib.import_module("vllm.attention.ops.paged_attn")
    finally:
        sys.path.remove(package_parent)
        for m in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
            del sys.modules[m]


class SwitchOn(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pagedattn_switch_on_")
        pa.set_profile("bi-v100")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def installed_copy(self, name):
        """A vLLM 'installation' to work on: a copy of the fixture package."""
        dst = os.path.join(self.tmp, name, "site", "vllm")
        shutil.copytree(FIXTURES[name], dst)
        return dst

    def patched_package(self, name):
        """Patched copies written by --out, then installed over a copy, as a user would."""
        root = self.installed_copy(name)
        before = snapshot(root)
        out = os.path.join(self.tmp, name, "patched")
        self.assertEqual(helper("--vllm-root", root, "--out", out), (0, ""))
        self.assertEqual(snapshot(root), before, "the helper must not edit the installation")
        for rel in FILES:
            shutil.copy(os.path.join(out, rel), os.path.join(root, rel))
        return root

    def test_long_sequence_selects_v2_and_runs_pagedattn(self):
        for name in FIXTURES:
            with self.subTest(name):
                root = self.patched_package(name)
                with imported_vllm(os.path.dirname(root)) as paged_attn:
                    ops = sys.modules["vllm._custom_ops"]
                    calls = []
                    for op in ("paged_attention_v1", "paged_attention_v2"):
                        fn = getattr(ops, op)
                        setattr(ops, op, lambda *a, _fn=fn, _op=op: (calls.append(_op), _fn(*a))[1])
                    # 13000 tokens: V1 would need 52 KB of shared memory, over bi-v100's 48 KB.
                    case = Case(1, 4, 2, 64, 16, False, torch.float, "auto", 13000, 820)
                    self.assertEqual(pa.choose_version(1, 4, 64, 16, 13000).version, "v2")
                    out = paged_attn.PagedAttention.forward_decode(
                        case.query, case.key_cache, case.value_cache, case.block_tables,
                        case.seq_lens, case.max_seq_len, "auto", case.num_kv_heads, case.scale,
                        None, 1.0, 1.0)
                    self.assertEqual(calls, ["paged_attention_v2"])
                    atol, rtol = vllm_tolerances("auto")  # vLLM's bar, as in test_vllm_grid
                    self.assertTrue(torch.allclose(out, reference(case), atol=atol, rtol=rtol))
                    # Many short sequences: the rule keeps V1 (one partition).
                    calls.clear()
                    short = Case(3, 4, 2, 64, 16, False, torch.float, "auto", 100, 40)
                    paged_attn.PagedAttention.forward_decode(
                        short.query, short.key_cache, short.value_cache, short.block_tables,
                        short.seq_lens, short.max_seq_len, "auto", short.num_kv_heads,
                        short.scale, None, 1.0, 1.0)
                    self.assertEqual(calls, ["paged_attention_v1"])
                    # The rule sees num_kv_heads and the query's dtype (the grouped choice):
                    # catches a switch-on that calls use_v1 without them.
                    text = read(os.path.join(root, switch_on.PAGED_ATTN))
                    self.assertIn("num_kv_heads=num_kv_heads", text)
                    self.assertIn("dtype=query.dtype", text)

    def test_unpatched_bi_v100_cannot_run_v2(self):
        # The baseline the helper replaces: its V2 raises, and V1 goes to vLLM's own _C.
        root = self.installed_copy("vllm_bi_v100")
        with imported_vllm(os.path.dirname(root)):
            ops = sys.modules["vllm._custom_ops"]
            with self.assertRaises(NotImplementedError):
                ops.paged_attention_v2(*([None] * 17))

    def test_undo_restores_the_originals(self):
        for name in FIXTURES:
            with self.subTest(name):
                original = snapshot(FIXTURES[name])
                root = self.patched_package(name)
                self.assertNotEqual(snapshot(root), original)
                restored = os.path.join(self.tmp, name, "restored")
                self.assertEqual(helper("--vllm-root", root, "--out", restored, "--undo"), (0, ""))
                self.assertEqual(snapshot(restored), original)

    @unittest.skipIf(shutil.which("patch") is None, "no patch program")
    def test_patch_file_applies_and_reverts(self):
        for name in FIXTURES:
            with self.subTest(name):
                root = self.installed_copy(name)
                original = snapshot(root)
                diff = os.path.join(self.tmp, name + ".patch")
                self.assertEqual(helper("--vllm-root", root, "--patch", diff), (0, ""))
                self.assertEqual(snapshot(root), original)
                subprocess.run(["patch", "-s", "-p1", "-d", root, "-i", diff], check=True)
                patched = snapshot(root)
                self.assertIn(switch_on.BEGIN, patched[switch_on.PAGED_ATTN])
                self.assertEqual(patched, {rel: switch_on.transform(FIXTURES[name], False)[rel][1]
                                           for rel in FILES})
                subprocess.run(["patch", "-s", "-R", "-p1", "-d", root, "-i", diff], check=True)
                self.assertEqual(snapshot(root), original)

    def test_refuses_unexpected_files(self):
        root = self.installed_copy("vllm_0_6_3")
        out = os.path.join(self.tmp, "out")
        pa_path = os.path.join(root, switch_on.PAGED_ATTN)
        co_path = os.path.join(root, switch_on.CUSTOM_OPS)
        pa_text, co_text = read(pa_path), read(co_path)
        cases = [
            (pa_path, pa_text.replace("use_v1 = (", "use_v1_old = ("),
             "looked for one 'use_v1 = ...' statement in forward_decode, found 0"),
            (pa_path, pa_text.replace("_PARTITION_SIZE = 512", "_PARTITION_SIZE = 256"),
             "looked for '_PARTITION_SIZE = 512'"),
            (pa_path, pa_text.replace("from vllm import _custom_ops as ops", "import vllm_ops as ops"),
             "looked for the line 'from vllm import _custom_ops as ops'"),
            (co_path, co_text.replace("    seq_lens: torch.Tensor,", "    context_lens: torch.Tensor,"),
             "'def paged_attention_v1' should begin with the parameters"),
            (co_path, co_text.replace("def paged_attention_v2(", "def paged_attention_v2_old("),
             "looked for one module-level 'def paged_attention_v2(...)', found 0"),
        ]
        for path, text, message in cases:
            with self.subTest(message):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                code, err = helper("--vllm-root", root, "--out", out)
                self.assertEqual(code, 2)
                self.assertIn(message, err)
                self.assertFalse(os.path.exists(out), "nothing may be written on refusal")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(pa_text if path == pa_path else co_text)
        # Already patched; undo of an unpatched file; no vLLM there; no output named.
        patched = self.patched_package("vllm_bi_v100")
        self.assertIn("already patched", helper("--vllm-root", patched, "--out", out)[1])
        self.assertIn("it is not patched", helper("--vllm-root", root, "--out", out, "--undo")[1])
        self.assertIn("looked for _custom_ops.py",
                      helper("--vllm-root", self.tmp, "--out", out)[1])
        self.assertIn("would overwrite", helper("--vllm-root", root, "--out", root)[1])
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            switch_on.main(["--vllm-root", root])  # neither --out nor --patch: refused

    def test_refuses_undo_of_an_edited_patch(self):
        root = self.patched_package("vllm_0_6_3")
        path = os.path.join(root, switch_on.PAGED_ATTN)
        text = read(path).replace("block_size, max_seq_len, query.device,",
                                  "block_size, 99999, query.device,")
        self.assertNotEqual(text, read(path))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        code, err = helper("--vllm-root", root, "--out", os.path.join(self.tmp, "o"), "--undo")
        self.assertEqual(code, 2)
        self.assertIn("edited after patching", err)


if __name__ == "__main__":
    unittest.main()
