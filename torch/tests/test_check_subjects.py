"""The check on subjects whose verdict is known (ctest check.subjects).

- This project's operators: exact-class (V1 and V2, CPU, bi-v100).
- The careful PyTorch V1 and V2 (pagedattn_torch/check/contract_torch.py): at least
  vllm-class.
- Every known-wrong subject (pagedattn_torch/check/known_wrong.py): wrong, within the CI
  case budget, and shrunk to a small case: one sequence, at most 4 query heads, head size at
  most 64, and at most 33 tokens (one block of 32 plus one: a wrong gather, head map, NaN
  rule, fp16 partial, store or input change shows in the first block), except the dropped
  rescale, which needs two partitions: at most 1025 tokens (2 x 512 + 1), and in practice 513.
- A random key cache (drawn from the real cache's own elements) is judged wrong on the
  cases whose keys matter (no poisoned input, two or more tokens), while vLLM's own test
  method (torch/tests/vllm_like.py, its tolerances) passes it.

Each assertion can fail: the known-wrong subjects are the wrong variants, run here once
each; the careful subjects differ from them by one knob.
"""
import os
import tempfile
import unittest

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

from pagedattn_torch.check import VLLM, EXACT, WRONG, check, known_wrong
from pagedattn_torch.check import cases, judging, subjects
from vllm_like import Case, reference, vllm_tolerances

CI_CASES = 100       # per version: what the CI budget allows (about 10 s per subject here)
SEED = 20261130      # the project's CI seed
SMALL = {"num_seqs": 1, "num_heads": 4, "head_size": 64, "tokens": 33}
TWO_PARTITIONS = dict(SMALL, tokens=2 * cases.PARTITION_SIZE + 1)


class Subjects(unittest.TestCase):
    def run_check(self, impl, **kw):
        with tempfile.TemporaryDirectory() as d:
            r = check(impl, cases=CI_CASES, seed=SEED, replay_dir=d, **kw)
            for v in r.versions:
                if v.failure:
                    self.assertTrue(os.path.isfile(os.path.join(v.failure["replay_dir"],
                                                                "case.json")))
        return r

    def test_pagedattn_is_exact_class(self):
        r = self.run_check("pagedattn")
        self.assertEqual(r.verdict, EXACT, "\n".join(r.lines()))
        self.assertEqual([v.version for v in r.versions], ["v1", "v2"])
        self.assertTrue(all(v.cases == CI_CASES for v in r.versions))

    def test_careful_pytorch_is_at_least_vllm_class(self):
        r = self.run_check("pagedattn_torch.check.contract_torch")
        self.assertEqual([v.version for v in r.versions], ["v1", "v2"])
        for v in r.versions:
            self.assertIn(v.verdict, (EXACT, VLLM), "\n".join(r.lines()))

    def test_known_wrong_are_caught_and_shrunk(self):
        for name in known_wrong.ALL:
            with self.subTest(subject=name):
                r = self.run_check("pagedattn_torch.check.known_wrong:" + name)
                (v,) = r.versions
                self.assertEqual(v.verdict, WRONG, "\n".join(r.lines()))
                self.assertLessEqual(v.cases - v.shrink_steps, CI_CASES)
                size = v.failure["size"]
                limit = TWO_PARTITIONS if name == "v2_no_rescale" else SMALL
                self.assertEqual(size["num_seqs"], 1, v.failure["case"])
                for k in ("num_heads", "head_size", "tokens"):
                    self.assertLessEqual(size[k], limit[k], "%s: %s" % (k, v.failure["case"]))

    def test_random_keys_wrong_where_keys_matter_but_pass_vllms_test(self):
        drawn = []

        @settings(max_examples=80, database=None, deadline=None, phases=(Phase.generate,),
                  suppress_health_check=list(HealthCheck))
        @seed(SEED)
        @given(cases.specs())
        def draw(spec):
            drawn.append(spec)
        draw()
        subject = subjects.resolve("pagedattn_torch.check.known_wrong:v1_random_keys", "v1")
        keyed = [s for s in drawn if s.poison == "none" and max(s.seq_lens) >= 2
                 and s.logits == "normal" and s.values != "subnormal"]
        self.assertGreaterEqual(len(keyed), 15)
        for spec in keyed:
            case = cases.build(spec)
            v = judging.judge_case(subject, "v1", case, judging.reference(case, "bi-v100"),
                                   torch.device("cpu"))
            self.assertEqual(v.verdict, WRONG, str(spec))
            self.assertTrue(v.reason.startswith("error over both bounds"), v.reason)
        # vLLM's test method on its own inputs: uniform +-head_size^-0.5, 7 sequences.
        for dtype in (torch.half, torch.bfloat16, torch.float):
            vc = Case(7, 40, 40, 128, 16, False, dtype, "auto", 96, 16, seed=0)
            out = torch.empty_like(vc.query)
            known_wrong.v1_random_keys(*vc.v1_args(out))
            atol, rtol = vllm_tolerances("auto")
            self.assertTrue(torch.allclose(out, reference(vc), atol=atol, rtol=rtol))


class RatioCountsTheReferenceError(unittest.TestCase):
    """The judge's ratio counts the reference's own error, as the C++ judge does
    (Judge.RatioCountsTheReferenceErrorAndRoundsUp): an output 0.25 off a value known within
    0.125 of the exact result, against bounds of 0.3, is up to 0.375 off: wrong. Read as
    |out - value| / bound (0.83) it passed, exact-class."""

    def test_error_of_the_reference_counts(self):
        shape = (1, 1, 2)
        exact = torch.ones(shape, dtype=torch.float64)
        bound = torch.full(shape, 0.3, dtype=torch.float64)
        out = torch.tensor([[[1.25, 1.0]]], dtype=torch.float32)

        def ref(err):
            e = torch.tensor([[[err, 0.0]]], dtype=torch.float64)
            return judging.Reference(exact, e, torch.full(shape, 2.0 ** -23, dtype=torch.float64),
                                     exact.clone(), {"v1": (bound, bound)})

        self.assertEqual(judging.judge_outputs(out, ref(0.0), "v1").verdict, EXACT)
        wrong = judging.judge_outputs(out, ref(0.125), "v1")
        self.assertEqual(wrong.verdict, WRONG)
        self.assertGreater(wrong.over_ours, 1.0)
        # Equal to the reference's value, its error within the bound: 0.
        self.assertEqual(judging.judge_outputs(exact.float(), ref(0.125), "v1").over_ours, 0.0)


if __name__ == "__main__":
    unittest.main()
