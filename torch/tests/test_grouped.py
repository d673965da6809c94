"""set_grouped: the V1/V2 operators with Options::grouped. The outputs (and V2's states)
are the per-head operators' bits, at shapes with grouped kernels and without; the option
reaches the launch (a device whose shared memory fits the per-head V1 block but not the
grouped one refuses only the grouped call). Catches set_grouped not reaching the call's
Options (shown once: run_attention with a default Options fails
test_option_reaches_the_launch), and a grouped output that differs."""
import json
import os
import tempfile
import unittest

import torch

import pagedattn_torch as pa
from vllm_like import Case

# (label, dtype, heads, kv heads, head size, block size, alibi, kv_cache_dtype, max_seq_len)
CASES = [
    ("f16 ratio 4 head 128", torch.half, 8, 2, 128, 16, False, "auto", 1100),
    ("bf16 ratio 8 alibi fp8", torch.bfloat16, 8, 1, 64, 16, True, "fp8_e4m3", 700),
    ("f32 (no grouped kernels)", torch.float, 8, 2, 64, 16, False, "auto", 300),
    ("f16 block 8 (no grouped kernels)", torch.half, 4, 2, 64, 8, False, "auto", 300),
]


def bits(t):
    if t.dtype in (torch.half, torch.bfloat16):
        return t.view(torch.int16)
    return t.view(torch.int32)


def run_both(c):
    out1 = torch.empty_like(c.query)
    pa.paged_attention_v1(*c.v1_args(out1))
    out2 = torch.empty_like(c.query)
    states = c.v2_states(torch.float32)
    for s in states:
        s.zero_()  # partitions past a sequence are not written: compare defined bytes
    pa.paged_attention_v2(*c.v2_args(out2, *states))
    return [out1, out2] + list(states)


class Grouped(unittest.TestCase):
    def setUp(self):
        pa.set_profile("bi-v100")
        pa.set_grouped(False)

    def tearDown(self):
        pa.set_grouped(False)
        pa.set_profile("bi-v100")

    def test_default_off_and_settable(self):
        self.assertFalse(pa.get_grouped())  # $PAGEDATTN_GROUPED is not set by the tests
        pa.set_grouped(True)
        self.assertTrue(pa.get_grouped())

    def test_use_v1_applies_the_grouped_choice(self):
        # The switch-on's use_v1 (given num_kv_heads) sets the operators' grouped flag to the
        # choice it made the version for. Catches use_v1 choosing V1/V2 for the grouped grid
        # while the operators keep running per head (the flag left as it was).
        pa.set_grouped(False)
        self.assertFalse(pa.use_v1(1, 32, 128, 16, 100000, num_kv_heads=8, dtype=torch.float16))
        self.assertTrue(pa.choose_version(1, 32, 128, 16, 100000, num_kv_heads=8,
                                          dtype=torch.float16).grouped)
        self.assertTrue(pa.get_grouped())
        pa.use_v1(1, 32, 128, 16, 4096, num_kv_heads=32, dtype=torch.float16)  # nothing shared
        self.assertFalse(pa.get_grouped())
        pa.set_grouped(True)
        pa.use_v1(1, 32, 128, 16, 4096)  # without num_kv_heads the flag is left alone
        self.assertTrue(pa.get_grouped())

    def test_same_bits_as_the_per_head_operators(self):
        for label, dtype, h, kvh, d, bs, alibi, kv, max_len in CASES:
            with self.subTest(label):
                c = Case(3, h, kvh, d, bs, alibi, dtype, kv, max_len, 3 * max_len // bs, seed=5)
                pa.set_grouped(False)
                plain = run_both(c)
                pa.set_grouped(True)
                grouped = run_both(c)
                for name, a, b in zip(("out v1", "out v2", "exp_sums", "max_logits", "tmp_out"),
                                      plain, grouped):
                    self.assertTrue(torch.equal(bits(a), bits(b)), "%s: %s" % (label, name))

    def test_option_reaches_the_launch(self):
        # f16, 8 heads over 2 (4 per KV head), head 64, 1000 tokens, warp 64 (2 warps):
        # the per-head V1 block asks 4 * (4 + 64 + 1008) = 4304 bytes, the grouped one
        # (4 heads) 4 * (32 + 4 * (64 + 1008)) = 17280 (resources.h; `pagedattn limits`
        # prints both). A device allowing 8192 runs the first and refuses the second.
        with open(os.path.join(os.path.dirname(pa.__file__), "..", "..", "..", "emulator",
                               "profiles", "bi-v100.json")) as f:
            prof = json.load(f)
        prof["name"] = "bi-v100-8k"
        for key in ("shared_memory_per_block", "shared_memory_per_block_optin"):
            prof[key]["value"] = 8192
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bi-v100-8k.json")
            with open(path, "w") as f:
                json.dump(prof, f)
            pa.set_profile(path)
            c = Case(1, 8, 2, 64, 16, False, torch.half, "auto", 1000, 70, seed=2)
            out = torch.empty_like(c.query)
            pa.paged_attention_v1(*c.v1_args(out))  # per-head: fits
            pa.set_grouped(True)
            with self.assertRaisesRegex(RuntimeError, "needs 17280 bytes"):
                pa.paged_attention_v1(*c.v1_args(out))


if __name__ == "__main__":
    unittest.main()
