// The overflow-rescue ("rare") P.V path of the attention kernel with fp8 caches and scales
// (issue 19, item 3d). The path runs when a warp's fp32 partial sum passes
// FLT_MAX / NUM_WARPS (kernels/src/attention_kernel.cuh): with an fp8 cache that happens
// only under vLLM's numerics, which dequantize each value as fl_s(fl(v * v_scale)) before
// P.V, so the partial carries v_scale (ours multiplies v_scale in after the division, so
// its fp8 partial is at most n * 57344 and never takes the path).
#include <rapidcheck.h>

#include <cfloat>
#include <cmath>
#include "checks.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {

namespace {

// Value element 0 of every token set to 0.7 FLT_MAX (a dominant token's warp partial then
// passes FLT_MAX / NUM_WARPS), then every kernel under test with both numerics: every output
// finite and within its own proven bound.
void check_rescued_rows(Case c, const Spec& s) {
  for (int q = 0; q < c.num_seqs; ++q) {
    for (std::int64_t t = 0; t < c.seq_lens[q]; ++t) {
      const auto [blk, slot] = c.where(q, t);
      for (int h = 0; h < c.num_kv_heads; ++h)
        c.set_value(blk, KvHead{h}, slot, Dim{0}, 0.7 * FLT_MAX);
    }
  }
  const testing::Judge judge(std::move(c));
  for (Numerics numerics : {Numerics::vllm_compatible, Numerics::exact_fp32}) {
    const Options opt = s.options(numerics);
    for (const KernelUnderTest& k : kernels_one_each(judge.input())) {
      const Options ko = k.options(opt);
      const Outputs o = run(judge.input(), k.kernel, ko, s.profile);
      for (double x : o.out) RC_ASSERT(std::isfinite(x));
      assert_within(judge.verdict(o.out, k.kernel, ko, s.profile),
                    std::string(k.name) +
                        (numerics == Numerics::exact_fp32 ? " (ours)" : " (vLLM's numerics)"));
    }
  }
}

}  // namespace

// fp8 caches (both), f32 or bf16 queries (f16's 65504 caps every dequantized value, so its
// partials cannot reach the path), v_scale 2^119..2^120 (e4m3, max 448) or 2^112..2^113
// (e5m2, max 57344), so dequantized values reach 0.75 FLT_MAX; value element 0 of every
// token set to 0.7 FLT_MAX and one dominant token (logit +20 over the rest: p > 0.999 for
// the lengths drawn), so the partial of the warp holding it passes FLT_MAX / 2 >=
// FLT_MAX / NUM_WARPS for element 0 on both profiles: every case takes the rare path in the
// dominant token's partition under vLLM's numerics (shown by the mutant that drops v_scale
// there: property_tests/README.md). Both numerics are judged against their own proven bound
// (ours takes the fast path: its result times a v_scale of 2^120 must stay within it too);
// every output is finite.
PAGEDATTN_PROPERTY(prop_rare_path_fp8_scales, 100) {
  Spec s = *gen_spec();
  s.cache = *rc::gen::element(CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2);
  if (s.scalar == DType::f16) s.scalar = DType::bf16;
  if (s.head_size % 16 != 0) s.head_size = 128;  // fp8 keys: 16-element chunks
  const int e = s.cache == CacheFormat::fp8_e4m3 ? 119 : 112;
  s.v_scale = std::ldexp(1.0, e + *rc::gen::inRange(0, 2));
  s.logits = LogitShape::dominant;
  s.span = 20;
  s.offset = 0;
  s.v_class = ValueClass::nearmax;
  check_rescued_rows(build(s), s);
}

// The rare path on a row of mixed magnitudes, without fp8 scales: f32 or bf16 (the formats
// that hold 0.7 FLT_MAX), cache of the query's type, value element 0 of every token 0.7
// FLT_MAX and the others as drawn (|v| <= 1 or subnormal), one dominant token. Element 0's
// warp partial passes FLT_MAX / NUM_WARPS, so the whole row is recomputed by the rescue,
// and its small elements must come out within their own (small) bound: an error the size of
// element 0's ulp there is caught. prop_rare_path_fp8_scales cannot see one, every element
// of its rows being scaled near FLT_MAX. Catches rescue's sum starting at 1 instead of 0
// (mutant attention_phases.cuh:369:19:const, which survived the whole catalogue's run:
// applied by hand, this property failed after 7 cases at the CI seed).
PAGEDATTN_PROPERTY(prop_rare_path_mixed_row, 60) {
  Limits lim;
  lim.fp8 = false;
  Spec s = *gen_spec(lim);
  s.scalar = *rc::gen::element(DType::f32, DType::bf16);
  s.logits = LogitShape::dominant;
  s.span = 20;
  s.offset = 0;
  check_rescued_rows(build(s), s);
}

}  // namespace pagedattn::prop
