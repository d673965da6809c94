#include "grids.h"

#include <algorithm>

#include "pagedattn_audit/runner.h"

namespace pagedattn::report {
namespace {

audit::Config base(const ReportOptions& o) {
  audit::Config c;
  c.profiles = o.profiles;
  c.threads = o.threads;
  c.quiet = true;
  return c;
}

}  // namespace

std::vector<Grid> precision_grids(const ReportOptions& o) {
  std::vector<Grid> grids;
  // Error against seq_len, ours beside each of vLLM's choices: 8 heads over 2 KV heads
  // (GQA), head size 128, every profile (warp 64 and 32 reduce differently).
  audit::Config sweep = base(o);
  sweep.num_heads = {8};
  sweep.num_kv_heads = {2};
  sweep.dtypes = {"f16", "bf16"};
  sweep.distributions = {"normal"};
  sweep.numerics = "ablation";
  switch (o.size) {
    case Size::quick:
      sweep.seq_lens = {100, 1000, 4000};
      break;
    case Size::standard:
      sweep.seq_lens = {16, 128, 512, 1000, 2048, 4096, 8192, 16384, 32768};
      break;
    case Size::full:
      sweep.seq_lens = {16, 128, 512, 1000, 2048, 4096, 8192, 12144, 16384, 32768, 65536, 100000};
      sweep.distributions = {"normal", "vllm_uniform"};
      break;
  }
  grids.push_back({"precision", sweep});
  if (o.size != Size::quick) {
    // The headline: one sequence, 32 heads over 8 KV heads, 100,000 tokens, on bi-v100.
    audit::Config head = base(o);
    head.profiles = {"bi-v100"};
    if (std::find(o.profiles.begin(), o.profiles.end(), "bi-v100") == o.profiles.end())
      head.profiles = {o.profiles.front()};
    head.seq_lens = {100000};
    head.numerics = "both";
    grids.push_back({"headline", head});
  }
  return grids;
}

audit::Config checks_grid(const ReportOptions& o) {
  audit::Config c = base(o);
  c.num_heads = {4};
  c.num_kv_heads = {2};
  c.head_sizes = {64};
  c.dtypes = {"f16"};
  c.seq_lens = {100, 700};  // one partition, and two with a partial one
  c.numerics = "ours";
  c.threads = 1;
  return c;
}

long case_count(const audit::Config& c) {
  long inputs = 1;
  for (std::size_t n :
       {c.num_seqs.size(), c.num_heads.size(), c.num_kv_heads.size(), c.head_sizes.size(),
        c.block_sizes.size(), c.dtypes.size(), c.kv_cache_dtypes.size(), c.seq_lens.size(),
        c.distributions.size(), c.seeds.size(), c.alibi.size()})
    inputs *= static_cast<long>(n);
  const long per_kernel = static_cast<long>(c.profiles.size() * c.exp_ulps.size() *
                                            audit::numerics_variants(c.numerics).size());
  long kernels = 0;
  if (c.kernel != "v2") kernels += 1;
  if (c.kernel != "v1") kernels += static_cast<long>(c.partition_sizes.size());
  return inputs * per_kernel * kernels;
}

}  // namespace pagedattn::report
