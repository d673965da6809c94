"""The operators and `pagedattn run` (tools/cli_run.cpp: the same library, inputs from
.npy) give the same bits on the same inputs: out for V1 and V2, and V2's exp_sums,
max_logits and fp32 tmp_out. Catches a binding that reorders or re-strides a tensor,
passes a rounded scale, another profile, or other options than the library's default."""
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch

import pagedattn_torch as pa
from vllm_like import Case

CLI = os.environ.get("PAGEDATTN_CLI", "")

# (label, dtype, heads, kv heads, head size, block size, alibi, kv_cache_dtype, max_seq_len,
#  k_scale, v_scale). 1100 tokens give V2 three partitions.
CASES = [
    ("f32 gqa alibi", torch.float, 8, 2, 128, 16, True, "auto", 1100, 1.0, 1.0),
    ("f16 block 32", torch.half, 4, 4, 64, 32, False, "auto", 700, 1.0, 1.0),
    ("bf16 head 80 alibi", torch.bfloat16, 6, 3, 80, 16, True, "auto", 1100, 1.0, 1.0),
    ("f16 fp8_e4m3 scales", torch.half, 4, 2, 96, 16, False, "fp8_e4m3", 900, 0.5, 1.75),
    ("bf16 fp8_e5m2", torch.bfloat16, 4, 1, 256, 8, True, "fp8_e5m2", 600, 1.25, 0.75),
]


def as_numpy(t):
    """A tensor as `pagedattn run` reads it: bf16 as its '<u2' bits."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def bits(t):
    """Comparable bit patterns (NaN-safe, -0 distinct from +0)."""
    if t.dtype in (torch.half, torch.bfloat16):
        return t.view(torch.int16)
    return t.view(torch.int32)


@unittest.skipUnless(os.path.isfile(CLI), "PAGEDATTN_CLI (the pagedattn program) not set")
class RunEquality(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pa.set_profile("bi-v100")

    def test_operators_equal_pagedattn_run(self):
        for label, dtype, h, kvh, d, bs, alibi, kv, max_len, ks, vs in CASES:
            with self.subTest(label), tempfile.TemporaryDirectory() as tmp:
                c = Case(5, h, kvh, d, bs, alibi, dtype, kv, max_len, 3 * max_len // bs, seed=3)
                c.k_scale, c.v_scale = ks, vs
                c.scale = 0.0883883  # not head_size**-0.5: the value itself must travel
                if kv == "fp8_e5m2":  # any byte is an E5M2 value; avoid inf/NaN codes
                    for cache in (c.key_cache, c.value_cache):
                        cache.bitwise_and_(0xBB)
                inp, out_dir = os.path.join(tmp, "in"), os.path.join(tmp, "out")
                os.mkdir(inp)
                for name in ("query", "key_cache", "value_cache", "block_tables", "seq_lens",
                             "alibi_slopes"):
                    t = getattr(c, name)
                    if t is not None:
                        np.save(os.path.join(inp, name + ".npy"), as_numpy(t))
                cmd = [CLI, "run", inp, "--out", out_dir, "--profile", "bi-v100", "--scale",
                       repr(c.scale), "--kv-cache-dtype", kv, "--k-scale", repr(ks),
                       "--v-scale", repr(vs)]
                if dtype == torch.bfloat16:
                    cmd.append("--bf16")
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

                def load(name, like):
                    a = np.load(os.path.join(out_dir, name + ".npy"))
                    if like.dtype == torch.bfloat16:  # '<u2' bits
                        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
                    return torch.from_numpy(a)

                out1 = torch.empty_like(c.query)
                pa.paged_attention_v1(*c.v1_args(out1))
                out2 = torch.empty_like(c.query)
                states = c.v2_states(torch.float32)
                pa.paged_attention_v2(*c.v2_args(out2, *states))
                self.assertTrue(torch.equal(bits(out1), bits(load("out_v1", out1))))
                self.assertTrue(torch.equal(bits(out2), bits(load("out_v2", out2))))
                # V2's states, where written: partitions that hold tokens of their sequence.
                lens = c.seq_lens.tolist()
                for name, t in zip(("exp_sums", "max_logits", "tmp_out"), states):
                    cli = load(name, t)
                    for s, n in enumerate(lens):
                        p = (n + 511) // 512
                        self.assertTrue(torch.equal(bits(t[s, :, :p]), bits(cli[s, :, :p])),
                                        "%s of sequence %d" % (name, s))


if __name__ == "__main__":
    unittest.main()
