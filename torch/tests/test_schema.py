"""Schema checks (torch 1.13 has no opcheck): the registered schemas are vLLM's argument
for argument, outputs are written in place, inputs are left untouched, the two scale
forms and the reduce agree with the fused kernels bit for bit, Meta tensors validate.
Catches: a renamed, reordered or retyped argument, an output not marked mutable, an
output written into a fresh tensor instead of in place, an input modified, an
output-dtype tmp_out not given its partials."""
import unittest

import torch

import pagedattn_torch as pa
from vllm_like import Case

# vLLM's schemas (csrc/torch_bindings.cpp): v0.6.x takes the scales as floats, later
# versions as one-element tensors. Facts restated here, not imported from pagedattn.
_V1_HEAD = ("Tensor! out, Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, "
            "float scale, Tensor block_tables, Tensor seq_lens, int block_size, int max_seq_len, "
            "Tensor? alibi_slopes, str kv_cache_dtype, ")
_V2_HEAD = _V1_HEAD.replace("Tensor! out, ", "Tensor! out, Tensor! exp_sums, Tensor! max_logits, "
                            "Tensor! tmp_out, ")
_TAIL = ("int tp_rank, int blocksparse_local_blocks, int blocksparse_vert_stride, "
         "int blocksparse_block_size, int blocksparse_head_sliding_step) -> ()")
VLLM = {
    "paged_attention_v1": "paged_attention_v1(" + _V1_HEAD + "float k_scale, float v_scale, " + _TAIL,
    "paged_attention_v1.tensor_scales":
        "paged_attention_v1(" + _V1_HEAD + "Tensor k_scale, Tensor v_scale, " + _TAIL,
    "paged_attention_v2": "paged_attention_v2(" + _V2_HEAD + "float k_scale, float v_scale, " + _TAIL,
    "paged_attention_v2.tensor_scales":
        "paged_attention_v2(" + _V2_HEAD + "Tensor k_scale, Tensor v_scale, " + _TAIL,
}


def signature(schema):
    """(name, type, written?) per argument, and the return types."""
    args = [(a.name, str(a.type), bool(a.alias_info and a.alias_info.is_write))
            for a in schema.arguments]
    return args, [str(r.type) for r in schema.returns]


def registered(qualified):
    name, _, overload = qualified.partition(".")
    for s in torch._C._jit_get_schemas_for_operator("pagedattn::" + name):
        if s.overload_name == overload:
            return s
    raise AssertionError("pagedattn::%s is not registered" % qualified)


class Schemas(unittest.TestCase):
    def test_registered_schemas_are_vllms(self):
        for qualified, text in VLLM.items():
            with self.subTest(qualified):
                self.assertEqual(signature(registered(qualified)),
                                 signature(torch._C.parse_schema(text)))

    def test_outputs_are_the_written_arguments(self):
        written = {q: [a[0] for a in signature(registered(q))[0] if a[2]] for q in VLLM}
        self.assertEqual(written["paged_attention_v1"], ["out"])
        self.assertEqual(written["paged_attention_v2"],
                         ["out", "exp_sums", "max_logits", "tmp_out"])
        reduce_args = signature(registered("paged_attention_reduce"))[0]
        self.assertEqual([a[0] for a in reduce_args if a[2]], ["out"])


def inputs_of(case):
    return [t for t in (case.query, case.key_cache, case.value_cache, case.block_tables,
                        case.seq_lens, case.alibi_slopes) if t is not None]


class InPlace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pa.set_profile("bi-v100")

    def case(self, dtype=torch.half, kv="auto"):
        # 1100 tokens: three partitions, so V2's states and reduce are real.
        return Case(3, 8, 2, 128, 16, True, dtype, kv, 1100, 100, seed=5)

    def test_v1_and_v2_write_in_place_and_leave_inputs_untouched(self):
        c = self.case()
        before = [t.clone() for t in inputs_of(c)]
        out = torch.full_like(c.query, float("nan"))
        ptr = out.data_ptr()
        pa.paged_attention_v1(*c.v1_args(out))
        self.assertEqual(out.data_ptr(), ptr)
        self.assertTrue(torch.isfinite(out).all())
        states = c.v2_states(torch.float32)
        for s in states:
            s.fill_(float("nan"))
        out2 = torch.full_like(c.query, float("nan"))
        pa.paged_attention_v2(*c.v2_args(out2, *states))
        # Every partition holds tokens of the longest sequence; seq 0.. may be shorter, so
        # check the last sequence's states, which all three partitions cover.
        for s in states:
            self.assertTrue(torch.isfinite(s[-1]).all())
        self.assertTrue(torch.isfinite(out2).all())
        for a, b in zip(before, inputs_of(c)):
            self.assertTrue(torch.equal(a, b))

    def test_output_dtype_tmp_out_gets_the_rounded_fp32_partials(self):
        c = self.case()
        out32, out16 = torch.empty_like(c.query), torch.empty_like(c.query)
        s32, s16 = c.v2_states(torch.float32), c.v2_states(torch.half)
        pa.paged_attention_v2(*c.v2_args(out32, *s32))
        pa.paged_attention_v2(*c.v2_args(out16, *s16))
        # out is computed from fp32 partials either way: identical bits.
        self.assertTrue(torch.equal(out32, out16))
        last = c.seq_lens.tolist()[-1]
        parts = (last + 511) // 512
        self.assertTrue(torch.equal(s16[2][-1, :, :parts], s32[2][-1, :, :parts].half()))
        self.assertTrue(torch.equal(s16[0][-1], s32[0][-1]))
        self.assertTrue(torch.equal(s16[1][-1], s32[1][-1]))

    def test_tensor_scales_equal_float_scales(self):
        c = self.case(torch.bfloat16, "fp8")
        a, b = torch.empty_like(c.query), torch.empty_like(c.query)
        c.k_scale, c.v_scale = 0.5, 2.0
        pa.paged_attention_v1(*c.v1_args(a))
        args = list(c.v1_args(b))
        args[12], args[13] = torch.tensor([0.5]), torch.tensor([2.0])
        pa.paged_attention_v1(*args)
        self.assertTrue(torch.equal(a, b))
        # and the scales are used: k_scale 1 gives another result
        c.k_scale = 1.0
        pa.paged_attention_v1(*c.v1_args(b))
        self.assertFalse(torch.equal(a, b))

    def test_reduce_equals_v2s_own_reduce(self):
        c = self.case(torch.float)
        out = torch.empty_like(c.query)
        states = c.v2_states(torch.float32)
        pa.paged_attention_v2(*c.v2_args(out, *states))
        again = torch.full_like(out, float("nan"))
        pa.paged_attention_reduce(again, *states, c.seq_lens, c.max_seq_len)
        self.assertTrue(torch.equal(out, again))

    def test_meta_tensors_validate_only(self):
        c = self.case()
        meta = lambda t: None if t is None else t.to("meta")
        out = torch.empty_like(c.query, device="meta")
        args = list(c.v1_args(out))
        for i in (1, 2, 3, 6, 7, 10):
            args[i] = meta(args[i])
        pa.paged_attention_v1(*args)  # valid shapes: no error, nothing computed
        args[1] = args[1][:, :, :60]
        with self.assertRaisesRegex(ValueError, r"head_size \(query.size\(2\)\)"):
            pa.paged_attention_v1(*args)


class Versions(unittest.TestCase):
    def test_choose_version_is_the_library_rule(self):
        # Cases of kernels/tests/test_resources.cpp (VersionSelect.FollowsTheDeviceFacts).
        self.assertEqual(pa.choose_version(64, 32, 128, 16, 8192, "bi-v100").version, "v1")
        self.assertEqual(pa.choose_version(64, 32, 128, 16, 16384, "bi-v100").version, "v2")
        self.assertEqual(pa.choose_version(1, 8, 128, 16, 300, "h200").version, "v1")
        self.assertEqual(pa.choose_version(1, 8, 128, 16, 4000, "h200").version, "v2")
        self.assertEqual(pa.choose_version(64, 32, 128, 16, 4000, "h200").version, "v1")
        self.assertTrue(pa.choose_version(1, 1, 128, 16, 100000).reason.startswith("bi-v100: "))
        self.assertTrue(pa.use_v1(1, 8, 128, 16, 300, torch.device("cpu")))
        with self.assertRaisesRegex(ValueError, "profile"):
            pa.choose_version(1, 8, 128, 16, 300, "no-such-device")
        if not pa.has_cuda_backend():
            with self.assertRaisesRegex(ValueError, "no CUDA backend"):
                pa.choose_version(1, 8, 128, 16, 300, torch.device("cuda", 0))

    def test_grouped_choice_is_the_library_rule(self):
        # Cases of VersionSelect.GroupedWhereBuiltAndShared. Catches a binding that drops
        # num_kv_heads or the dtype (grouped where the kernels fall back), or that does not
        # return the grouped choice.
        c = pa.choose_version(1, 32, 128, 16, 100000, "h200", num_kv_heads=8,
                              dtype=torch.float16)
        self.assertEqual((c.version, c.grouped), ("v2", True))
        self.assertIn("once for 4 query heads", c.grouped_reason)
        # 64 sequences at 4,000 tokens: per head V1 fills h200; grouped, rule 6 takes V2.
        self.assertTrue(pa.use_v1(64, 32, 128, 16, 4000, "h200"))
        self.assertFalse(pa.use_v1(64, 32, 128, 16, 4000, "h200", num_kv_heads=8,
                                   dtype=torch.bfloat16))
        f32 = pa.choose_version(1, 32, 128, 16, 100000, "h200", num_kv_heads=8,
                                dtype=torch.float32)
        self.assertTrue(f32.grouped)  # every dtype has grouped kernels
        self.assertIn("once for 4 query heads", f32.grouped_reason)
        mha = pa.choose_version(1, 32, 128, 16, 100000, "h200")
        self.assertFalse(mha.grouped)
        self.assertIn("one query head per KV head", mha.grouped_reason)
        with self.assertRaisesRegex(ValueError, "num_kv_heads"):
            pa.choose_version(1, 32, 128, 16, 100, "h200", num_kv_heads=5)
        with self.assertRaisesRegex(ValueError, "dtype 'int8'.*float16, bfloat16, float32"):
            pa.choose_version(1, 32, 128, 16, 100, "h200", num_kv_heads=8, dtype=torch.int8)


if __name__ == "__main__":
    unittest.main()
