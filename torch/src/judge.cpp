// The check's judge on pagedattn::testing: the call's tensors copied into one Case
// (testing::case_of validates them as the kernels would), its exact output and magnitudes
// computed once, then one element bound per (partition size, numerics).
#include "judge.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "pagedattn_testing/judge.h"

namespace pagedattn::judge {

Judgement judge(const Request& r) {
  const testing::Judge j(testing::case_of(r.call));
  const testing::Case& c = j.input();
  for (int ps : r.partition_sizes) {
    if (ps < 0 || ps % c.block_size != 0) {
      throw std::invalid_argument(
          "partition_sizes: each must be 0 (V1) or a positive multiple "
          "of block_size " +
          std::to_string(c.block_size) + ", got " + std::to_string(ps));
    }
  }
  const ref::Output& ex = j.exact_output();
  const std::size_t n = ex.value.size();
  Judgement out;
  out.num_seqs = c.num_seqs, out.num_heads = c.num_heads, out.head_size = c.head_size;
  out.exact = ex.value;
  out.exact_err = ex.value_err;
  out.exact_bits = ex.bits;
  out.ulp.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.ulp[i] = testing::ulp_of(c.scalar, ex.value[i]);
  out.bounds.reserve(r.partition_sizes.size() * 2 * n);
  for (int ps : r.partition_sizes) {
    for (Numerics numerics : {Numerics::exact_fp32, Numerics::vllm_compatible}) {
      Options opt;
      opt.numerics = numerics;
      testing::BoundSetup setup;  // any device exp within CUDA's __expf accuracy
      setup.warp_size = r.warp_size;
      setup.partition_size = ps;
      setup.choices = effective_choices(opt);
      const std::vector<double> b = j.bounds(setup);
      out.bounds.insert(out.bounds.end(), b.begin(), b.end());
    }
  }
  return out;
}

}  // namespace pagedattn::judge
