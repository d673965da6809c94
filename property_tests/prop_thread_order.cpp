// Outputs that do not depend on the order the GPU threads run in. The emulator's default
// pass runs threads by linear index, each up to its next barrier or collective, and a
// missing __syncthreads is invisible whenever that one order happens to finish every write
// before the first read. Since P.V's first block-table load became a warp shuffle
// (block_number, attention_phases.cuh), every thread reaches it only after rounding its own
// p_i, so the barrier after vLLM's rounding (round_p) could go: removed, it survived every
// property and mutate.py's racecheck stage in the whole-catalogue run on d59a702
// (attention_phases.cuh:299:1), where 52bc466's run killed it at the first stage.
//
// Here each kernel runs under racecheck's reordering passes (emulator/README.md,
// "racecheck"): the grid again in reverse and in seeded random thread order, one warp at a
// time through its own collectives; any output or state byte that differs from the
// in-order run fails the launch. The numerics mix is drawn (vLLM's rounded probabilities
// half the time), and a block's span holds more than 64 tokens in most cases, so the tokens
// a warp reads in P.V were rounded by threads of other warps. With that barrier removed the
// property fails on the first case of the CI seed, with the grouped kernel's query barrier
// removed on the 6th (each applied by hand, property_tests/README.md).
#include "checks.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {

PAGEDATTN_PROPERTY(prop_thread_order_independent, 30) {
  Limits lim;
  lim.max_seqs = 1;  // the reordering passes run each grid three times: keep cases small
  Spec s = *gen_spec(lim);
  // Half the cases with 2-4 query heads per KV head, where the grouped kernels run too
  // (every shape has them, supported.h): their own query barrier
  // (grouped_attention_kernel.cuh:53, removed) also survived the whole run, whose racecheck
  // stage runs f32 only.
  if (*rc::gen::arbitrary<bool>()) s.gqa = *rc::gen::inRange(2, 5);
  // A span of more than 64 tokens: V2 partitions of 128 or 256 tokens and a sequence
  // longer than half of one (V1's span is the sequence).
  s.partition_size = *rc::gen::element(128, 256);
  s.seq_lens[0] = *rc::gen::inRange(s.partition_size / 2 + 1, s.partition_size + 17);
  NumericsChoices ch;
  ch.round_probabilities = *rc::gen::arbitrary<bool>();
  ch.epsilon_denominator = *rc::gen::arbitrary<bool>();
  ch.partials_in_output_dtype = *rc::gen::arbitrary<bool>();
  RC_TAG(ch.round_probabilities ? "rounded p" : "fp32 p");
  const Case c = build(s);
  Options opt = s.options();
  opt.vllm_choices = ch;
  // One kernel a case, drawn (each grid runs three times here): V1, V2 and, on grouped
  // shapes, the grouped kernels.
  const KernelUnderTest k = *rc::gen::elementOf(kernels_under_test(c));
  RC_TAG(k.name);
  const WithChecks reorder(emu::check_racecheck_reorder);
  // A finding makes the launch fail, which paged_attention reports by throwing.
  const Outputs o = run(c, k.kernel, k.options(opt), s.profile);
  RC_ASSERT(o.out.size() > 0u);
}

}  // namespace pagedattn::prop
