// The check's judge (python -m pagedattn_torch.check): for one decode step in vLLM's layout,
// the exact answer and, per output element, the proven error bound (theorem
// kernel_error_bound) of our numerics and of Numerics::vllm_compatible, for V1 and for V2
// at given partition sizes. A thin layer over pagedattn::testing (its case_of, exact
// reference, magnitudes and bound), the judge every other test uses: no torch here.
#pragma once
#include <cstdint>
#include <vector>

#include "pagedattn/attention_call.h"

namespace pagedattn::judge {

struct Request {
  // The inputs as the kernels would take them (host memory; out and V2's tensors unused).
  AttentionCall call;
  // 0: V1 (one partition); > 0: V2 at that many tokens per partition. One bound per entry.
  std::vector<int> partition_sizes{0};
  int warp_size = 32;  // the device's warp width: 32 on NVIDIA, 64 on BI-V100
};

struct Judgement {
  int num_seqs = 0, num_heads = 0, head_size = 0;
  // [num_seqs, num_heads, head_size]. `exact`: the exact output as a double (the nearest
  // double where the reference certified one, else within exact_err); NaN for a row that
  // reads a non-finite input. `exact_bits`: the exact output rounded to the output dtype
  // (ref::Output::bits). `ulp`: the output format's spacing at |exact| (its quantum below
  // the normal range).
  std::vector<double> exact, exact_err, ulp;
  std::vector<std::uint32_t> exact_bits;
  // [partition_sizes.size()][2][num_seqs * num_heads * head_size]: Bound::total of our
  // numerics ([.][0]) and of vLLM's ([.][1]); NaN on rows whose exact value is NaN.
  std::vector<double> bounds;
};

// Throws std::invalid_argument naming the argument (a partition size the bound refuses),
// or pagedattn::Error as the kernels' validation would (shapes, dtypes, index values).
Judgement judge(const Request& r);

}  // namespace pagedattn::judge
