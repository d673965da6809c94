// Reads stay inside vLLM's block table. Its rows have as many columns as the longest
// sequence has blocks, so that row has no entry past its last block, and when it is the
// last row an entry read past it lies past the tensor. Under memcheck the allocation ends
// flush against a guard page (emulator/README.md, "Sanitizer-like checks"): such a read is
// a finding and the launch fails. The kernels' outputs cannot show it (tokens past the span
// are masked), so this is the property that catches a span running one KV block too far:
// attention_phases.cuh's `end_blk` rounded up with `+ 1` for `- 1` (mutant
// attention_phases.cuh:84:35:aor, which survived every other property).
#include <algorithm>

#include "checks.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {
PAGEDATTN_PROPERTY(prop_block_table_reads_stay_inside, 60) {
  Spec s = *gen_spec();
  s.tight_table = true;
  // The last row's length: a whole number of blocks, one token short of it, or one past.
  const int blocks = *rc::gen::inRange(1, 2 * s.partition_size / s.block_size + 3);
  const int shift = *rc::gen::element(0, -1, 1);
  const int last = std::max(1, blocks * s.block_size + shift);
  for (int& L : s.seq_lens) L = std::min(L, last);
  s.seq_lens.back() = last;
  RC_TAG(shift == 0 ? "whole blocks" : shift < 0 ? "one short" : "one past");
  const WithMemcheck memcheck;
  const testing::Judge judge(build(s));
  const Case& p = judge.input();
  const Options opt = s.options();
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Options o = k.options(opt);
    assert_within(judge.verdict(run(p, k.kernel, o, s.profile).out, k.kernel, o, s.profile),
                  k.name);
  }
}

}  // namespace pagedattn::prop
