"""python -m pagedattn_torch.check as a user meets it (ctest check.cli):

- every bad argument: exit 2, one line naming the argument and the allowed values, nothing
  written (no JSON, no replay folder);
- the JSON a run writes has the documented fields (torch/CHECK_SCHEMA.md);
- a failure's replay folder is read by `pagedattn run` (whose output is judged exact-class
  on it) and the printed reproduce command judges the subject wrong again, for the same
  reason;
- subjects that take only float or only tensor scales are called in their form;
- the pytest plugin fails a wrong subject's item and passes a careful one's.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

from pagedattn_torch.check import check, judging

PY = sys.executable
WRONG_SUBJECT = "pagedattn_torch.check.known_wrong:v1_round_robin_gqa"


def cli(*args, cwd=None, env=None):
    return subprocess.run([PY, "-m", "pagedattn_torch.check", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


class Usage(unittest.TestCase):
    def test_bad_arguments_name_the_argument_and_write_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            afile = os.path.join(d, "a_file")
            open(afile, "w").close()
            bad = [
                (["pagedattn", "--version", "v3"], "--version", "'v1', 'v2', 'both'"),
                (["pagedattn", "--cases", "0"], "--cases", ">= 1"),
                (["pagedattn", "--cases", "many"], "--cases", ">= 1"),
                (["pagedattn", "--seed", "-1"], "--seed", ">= 0"),
                (["pagedattn", "--device", "no-such-device"], "--device", "cpu, cuda"),
                (["pagedattn", "--device", "cuda"], "--device", "allowed: cpu"),
                (["pagedattn", "--profile", "no-such-profile"], "--profile", "no-such-profile"),
                (["pagedattn", "--json", os.path.join(d, "missing", "r.json")], "--json",
                 "existing folder"),
                (["pagedattn", "--replay-dir", afile], "--replay-dir", "must name a folder"),
                (["pagedattn", "--case", d], "--case", "replay folder"),
                (["no_such_module_xyz"], "IMPL", "pagedattn, vllm, a module"),
                (["os:no_such_function"], "IMPL", "no attribute"),
                (["vllm"], "IMPL 'vllm'", "pass pagedattn, a module"),
                (["os:getcwd"], "IMPL", "paged_attention_v1 takes 19"),
                (["pagedattn_torch.check.known_wrong:v2_no_rescale", "--version", "v1"],
                 "--version v1", "has only v2"),
                ([], "IMPL", "required"),
            ]
            for args, name, allowed in bad:
                with self.subTest(args=args):
                    p = cli(*args, "--json", os.path.join(d, "r.json"), cwd=d) \
                        if "--json" not in args and args else cli(*args, cwd=d)
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                    self.assertIn(name, p.stderr)
                    self.assertIn(allowed, p.stderr)
                    self.assertEqual(p.stdout, "")
                    self.assertEqual(sorted(os.listdir(d)), ["a_file"], args)


class Outputs(unittest.TestCase):
    def test_json_has_the_documented_fields(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            p = cli("pagedattn", "--cases", "5", "--json", path, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            last = p.stdout.strip().splitlines()[-1]
            self.assertTrue(last.startswith("verdict: pagedattn on cpu: exact-class"), last)
            with open(path) as f:
                r = json.load(f)
            self.assertEqual(r["schema"], "pagedattn-check/1")
            for k in ("implementation", "device", "profile", "seed", "cases_requested", "torch",
                      "verdict", "versions"):
                self.assertIn(k, r)
            self.assertEqual([v["version"] for v in r["versions"]], ["v1", "v2"])
            for v in r["versions"]:
                for k in ("verdict", "cases", "shrink_steps", "seconds", "cases_per_s", "worst",
                          "failure"):
                    self.assertIn(k, v)
                for k in ("case", "err_ulps", "over_ours", "over_vllm", "where"):
                    self.assertIn(k, v["worst"])
                self.assertIsNone(v["failure"])

    def test_replay_folder_runs_in_pagedattn_run_and_reproduces(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            p = cli(WRONG_SUBJECT, "--cases", "50", "--json", path, "--replay-dir",
                    os.path.join(d, "replays"), cwd=d)
            self.assertEqual(p.returncode, 1, p.stderr)
            with open(path) as f:
                failure = json.load(f)["versions"][0]["failure"]
            folder = failure["replay_dir"]
            for name in ("query", "key_cache", "value_cache", "block_tables", "seq_lens"):
                self.assertTrue(os.path.isfile(os.path.join(folder, name + ".npy")))
                self.assertTrue(os.path.isfile(os.path.join(folder, "clean", name + ".npy")))
            # This project's kernels on the replay: the command printed, then judged.
            run = subprocess.run(shlex.split(failure["pagedattn_run"]), capture_output=True,
                                 text=True, cwd=d, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            ours = np.load(os.path.join(folder, "pagedattn", "out_v1.npy"))
            exact = np.load(os.path.join(folder, "exact.npy"))
            self.assertEqual(ours.shape, exact.shape)
            from pagedattn_torch.check import replay
            import torch
            case = replay.load(folder)
            ref = judging.reference(case, "bi-v100")
            v = judging.judge_outputs(torch.from_numpy(ours), ref, "v1")
            self.assertEqual(v.verdict, judging.EXACT)
            # The subject again, by the printed command: wrong, for the same reason.
            again = subprocess.run(failure["reproduce"], shell=True, capture_output=True,
                                   text=True, cwd=d, timeout=300)
            self.assertEqual(again.returncode, 1, again.stderr)
            self.assertIn(failure["reason"], again.stdout)
            self.assertIn(failure["reason"], p.stdout)

    def test_scale_forms(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "one_form.py"), "w") as f:
                f.write(textwrap.dedent("""
                    import torch
                    from pagedattn_torch.check import contract_torch as ct
                    def _need(x, kind):
                        if not isinstance(x, kind):
                            raise TypeError("k_scale must be %s" % kind.__name__)
                    def tensor_v1(out, q, kc, vc, nkv, scale, bt, sl, bs, msl, alibi, kv, ks, vs,
                                  *rest):
                        _need(ks, torch.Tensor)
                        ct.paged_attention_v1(out, q, kc, vc, nkv, scale, bt, sl, bs, msl, alibi,
                                              kv, ks, vs, *rest)
                    def float_v1(out, q, kc, vc, nkv, scale, bt, sl, bs, msl, alibi, kv, ks, vs,
                                 *rest):
                        _need(ks, float)
                        ct.paged_attention_v1(out, q, kc, vc, nkv, scale, bt, sl, bs, msl, alibi,
                                              kv, ks, vs, *rest)
                    """))
            sys.path.insert(0, d)
            try:
                for name, form in (("tensor_v1", "tensor"), ("float_v1", "float")):
                    r = check("one_form:" + name, version="v1", cases=15, replay_dir=None)
                    self.assertNotEqual(r.verdict, judging.WRONG, "\n".join(r.lines()))
                    self.assertIn("scales=%s" % form, r.versions[0].worst["case"])
            finally:
                sys.path.remove(d)


class Plugin(unittest.TestCase):
    def test_pytest_plugin_gates(self):
        with tempfile.TemporaryDirectory() as d:
            for impl, rc in ((WRONG_SUBJECT, 1), ("pagedattn_torch.check.contract_torch", 0)):
                with self.subTest(impl=impl):
                    p = subprocess.run(
                        [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                         "pagedattn_torch.check.pytest_plugin", "--pagedattn-impl", impl,
                         "--pagedattn-cases", "20", "--pagedattn-replay-dir", d],
                        cwd=d, capture_output=True, text=True, timeout=600)
                    self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
                    self.assertIn("pagedattn-check[%s]" % impl if rc else "1 passed", p.stdout)
                    if rc:
                        self.assertIn("shrunk case:", p.stdout)


if __name__ == "__main__":
    unittest.main()
