// vLLM's numerics choices one at a time (NumericsChoices, params.h): the API selects each
// alone under exact_fp32, and each mix has its own kernel_error_bound (proofs/bound's
// Choices), but the other properties draw only exact_fp32 or all three together.
#include "checks.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {

// numerics_choices_within_bound: V1 and V2 at every mix of the three choices (epsilon
// alone among them) are finite and within the bound for that mix, on the normal P.V path
// and, half of the cases, on the rare one: f32 values within a factor 2 of FLT_MAX, so a
// warp's partial passes FLT_MAX / NUM_WARPS and the kernels recompute the row scaled by
// 2^-64. Half of the cases take head size 128 or 256, where the rare path's row loop runs
// exactly HEAD_SIZE / 128 times (gen_head_size draws them 2 in 9). Catches o / inv for
// o * inv in the epsilon branch of either path (attention_phases.cuh 387:37 rare, 433:27
// normal; before the kernel was split into phases, attention_kernel.cuh 317:37 and 350:23)
// and the rare path's loop running one row chunk past o_row (367:37, was 313:37): run against each
// mutant once, each failed (property_tests/README.md, "Measured").
PAGEDATTN_PROPERTY(prop_numerics_choices_within_bound, 100) {
  Spec s = *gen_spec();
  if (*rc::gen::arbitrary<bool>()) s.head_size = *rc::gen::element(128, 256);
  const bool rare = *rc::gen::arbitrary<bool>();
  if (rare) {  // fp8 and f16/bf16 maxima are far below FLT_MAX / NUM_WARPS
    s.scalar = DType::f32;
    s.cache = CacheFormat::same;
    s.k_scale = s.v_scale = 1;
    s.v_class = ValueClass::nearmax;
  }
  NumericsChoices ch;
  ch.partials_in_output_dtype = *rc::gen::arbitrary<bool>();
  ch.epsilon_denominator = *rc::gen::arbitrary<bool>();
  ch.round_probabilities = *rc::gen::arbitrary<bool>();
  const testing::Judge judge(build(s));  // the exact output and magnitudes, once
  const Case& c = judge.input();
  Options opt = s.options();
  opt.vllm_choices = ch;
  RC_TAG(rare ? "rare path" : "normal path");
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const char* name = k == Kernel::v1 ? "V1" : "V2";
    const Outputs o = run(c, k, opt, s.profile);
    for (std::size_t i = 0; i < o.out.size(); ++i) {
      if (!std::isfinite(o.out[i]))
        RC_FAIL(std::string(name) + " output " + std::to_string(i) + " is not finite");
    }
    assert_within(judge.verdict(o.out, k, opt, s.profile), name);
  }
}

}  // namespace pagedattn::prop
