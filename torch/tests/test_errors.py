"""Bad arguments raise a Python error naming the argument, and nothing is written.
Catches: a binding that passes a tensor through unchecked (wrong dtype read as another,
a meta or other-device pointer dereferenced, a non-contiguous output written as if
packed), or that writes part of the output before failing."""
import unittest

import torch

import pagedattn_torch as pa
from vllm_like import Case

OUT, QUERY, KEY, VALUE, KV_HEADS = 0, 1, 2, 3, 4
TABLES, LENS, BLOCK, MAX_LEN, ALIBI, KV_DTYPE, K_SCALE = 6, 7, 8, 9, 10, 11, 12


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pa.set_profile("bi-v100")

    def setUp(self):
        self.case = Case(2, 4, 2, 64, 16, True, torch.float, "auto", 40, 8)

    def expect(self, change, error, pattern, version="v1"):
        """Applies change(args) to a valid argument list; the call must raise `error`
        matching `pattern` and leave out (NaN-filled) untouched."""
        out = torch.full_like(self.case.query, float("nan"))
        if version == "v1":
            args = list(self.case.v1_args(out))
        else:
            args = list(self.case.v2_args(out, *self.case.v2_states(torch.float32)))
        change(args)
        target = args[OUT]
        sentinel = target.clone() if target.device.type == "cpu" else None
        with self.assertRaisesRegex(error, pattern):
            (pa.paged_attention_v1 if version == "v1" else pa.paged_attention_v2)(*args)
        if sentinel is not None:
            self.assertTrue(torch.equal(target.isnan(), sentinel.isnan()), "out was written")

    def set(self, i, value):
        def change(args):
            args[i] = value(args[i]) if callable(value) else value
        return change

    def test_wrong_dtype(self):
        self.expect(self.set(QUERY, lambda t: t.double()), TypeError,
                    r"query must have dtype float32, float16 or bfloat16, got Double")
        self.expect(self.set(TABLES, lambda t: t.long()), TypeError,
                    r"block_tables must have dtype int32, got Long")
        self.expect(self.set(KEY, lambda t: t.half()), ValueError,
                    r"key_cache must have dtype float32 \(kv_cache_dtype \"auto\"")
        self.expect(self.set(ALIBI, lambda t: t.half()), ValueError, r"alibi_slopes must have dtype")
        self.expect(self.set(OUT, lambda t: t.half()), ValueError, r"out must have dtype float32")

    def test_wrong_device(self):
        self.expect(self.set(KEY, lambda t: t.to("meta")), ValueError,
                    r"key_cache is on meta but out is on cpu")
        self.expect(self.set(OUT, lambda t: t.to("meta")), ValueError,
                    r"query is on cpu but out is on meta")
        self.expect(self.set(LENS, lambda t: t.to("meta")), ValueError, r"seq_lens is on meta")

    def test_wrong_shape(self):
        self.expect(self.set(OUT, lambda t: t[:1]), ValueError, r"out must have shape \[2, 4, 64\]")
        self.expect(self.set(VALUE, lambda t: t[:, :1]), ValueError, r"value_cache must have shape")
        self.expect(self.set(TABLES, lambda t: t[:1]), ValueError, r"block_tables must have shape")
        self.expect(self.set(KV_HEADS, 3), ValueError, r"num_kv_heads must be >= 1 and divide")
        self.expect(self.set(ALIBI, lambda t: t[:2]), ValueError, r"alibi_slopes must have shape \[4\]")
        self.expect(lambda a: a.__setitem__(1, a[1][:1]), ValueError,
                    r"exp_sums must have shape", version="v2")

    def test_non_contiguous(self):
        self.expect(self.set(OUT, lambda t: t.transpose(0, 1).contiguous().transpose(0, 1)),
                    ValueError, r"out must be contiguous")
        self.expect(self.set(KEY, lambda t: t.transpose(3, 4).contiguous().transpose(3, 4)),
                    ValueError, r"key_cache.stride\(4\) must be 1")
        self.expect(self.set(QUERY, lambda t: t.transpose(1, 2).contiguous().transpose(1, 2)),
                    ValueError, r"query.stride\(2\) must be 1")
        self.expect(lambda a: a.__setitem__(3, a[3].transpose(0, 1).contiguous().transpose(0, 1)),
                    ValueError, r"tmp_out must be contiguous", version="v2")

    def test_unsupported_values(self):
        self.expect(self.set(QUERY, lambda t: torch.zeros(2, 4, 48)), ValueError,
                    r"head_size \(query.size\(2\)\) must be one of \{32, 64, 80, 96, 112, 120, 128, "
                    r"192, 256\}, got 48")
        self.expect(self.set(BLOCK, 64), ValueError, r"block_size must be one of \{8, 16, 32\}")
        self.expect(self.set(KV_DTYPE, "int8"), ValueError, r"kv_cache_dtype must be one of")
        def tensor_scales(args):
            args[K_SCALE], args[K_SCALE + 1] = torch.tensor([1.0, 2.0]), torch.tensor([1.0])
        self.expect(tensor_scales, ValueError, r"k_scale must be a one-element float32 tensor")
        self.expect(self.set(18, 1), ValueError, r"blocksparse_head_sliding_step must be 0")

    def test_bad_indices(self):
        tables = self.case.block_tables.clone()
        tables[0, 0] = 8  # num_blocks is 8
        self.expect(self.set(TABLES, tables), ValueError, r"block")
        self.expect(self.set(LENS, torch.tensor([41, 1], dtype=torch.int)), ValueError,
                    r"seq_len")

    def test_unknown_profile(self):
        with self.assertRaisesRegex(ValueError, r"unknown device profile 'bi-v200'"):
            pa.set_profile("bi-v200")
        self.assertEqual(pa.get_profile(), "bi-v100")


if __name__ == "__main__":
    unittest.main()
