// The grouped kernels where a KV head's query heads span several thread blocks: GQA ratios past
// group_max_heads (resources.h: 8 heads a block up to head size 128, 4 above; 7 and 3 at warp 32,
// block size 32), the ratios 5 to 16 of today's models (64 query heads over 8 KV heads and wider).
// Per head the grouped kernels do the per-head kernels' arithmetic, so their outputs and V2 states
// are bit-identical (kernels/tests/test_grouped.cpp); here that is asserted on every drawn case,
// with ALiBi and fp8 caches, under memcheck. The general generators draw ratios up to 4, where one
// block serves the whole group, so a block's first head or live count could be wrong there unseen:
// a block's heads off by its index (mutants grouped_attention_kernel.cuh:30:23 and 30:77, `-` for
// `+`, `/` for `*`), the live count (31:65) and a spare slot aliasing head 1 (46:31: it reads the
// slope one past the last head when the last block serves one) all survived the whole catalogue's
// run; applied by hand, 30:77 failed here on the first case and 46:31 after 14 (memcheck: the slope
// read).
#include <algorithm>
#include <cstring>
#include <vector>

#include "checks.h"
#include "generators.h"
#include "pagedattn/resources.h"
#include "registry.h"

namespace pagedattn::prop {

PAGEDATTN_PROPERTY(prop_grouped_split_groups_bitwise, 40) {
  // Every dtype, cache, head size and block size (the grouped kernels are built for every
  // shape, supported.h); gen_spec keeps fp8 caches off head size 120.
  Spec s = *gen_spec();
  s.partition_size = *gen_partition_size(s.block_size, 256);
  s.num_kv_heads = *rc::gen::inRange(1, 3);
  // Half the cases, where some ratio up to 16 leaves the last block a single head (G = 4 at
  // head sizes 192 and 256: 13 = 4 + 4 + 4 + 1, head_groups spreading heads evenly over the
  // fewest blocks; G = 3 at warp 32, block size 32, head size 256: 7, 10 and 13), one of those.
  const int warp = testing::profile_warp_size(s.profile);
  const int most = group_max_heads(warp, s.head_size, s.block_size);
  const auto per_block = [&](int ratio) {
    return head_groups(warp, s.head_size, s.block_size, ratio, s.partition_size).heads_per_block;
  };
  std::vector<int> lone;  // ratios past `most` whose last block serves one head
  for (int r = most + 1; r <= 16; ++r)
    if (r % per_block(r) == 1) lone.push_back(r);
  const bool single = !lone.empty() && *rc::gen::arbitrary<bool>();
  s.gqa = single ? *rc::gen::elementOf(lone) : *rc::gen::inRange(most + 1, 17);
  s.alibi = *rc::gen::arbitrary<bool>();  // a spare slot reads its head's slope
  for (int& L : s.seq_lens) L = std::min(L, 2 * s.partition_size + 1);
  RC_TAG(s.gqa % per_block(s.gqa) == 1 ? "last block serves one head" : "even split");
  const WithMemcheck memcheck;
  const testing::Judge judge(build(s));
  const Case& p = judge.input();
  if (const char* why = grouped_fallback(p)) RC_FAIL(std::string("grouped fell back: ") + why);
  const Options opt = s.options();
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    Options g = opt;
    g.grouped = true;
    const Outputs per_head = run(p, k, opt, s.profile), grouped = run(p, k, g, s.profile);
    RC_ASSERT(grouped.out_bytes == per_head.out_bytes);
    if (k == Kernel::v2) {
      RC_ASSERT(std::memcmp(grouped.exp_sums.data(), per_head.exp_sums.data(),
                            per_head.exp_sums.size() * sizeof(float)) == 0);
      RC_ASSERT(std::memcmp(grouped.max_logits.data(), per_head.max_logits.data(),
                            per_head.max_logits.size() * sizeof(float)) == 0);
      RC_ASSERT(grouped.tmp_out == per_head.tmp_out);
    }
    assert_within(judge.verdict(grouped.out, k, g, s.profile),
                  k == Kernel::v1 ? "V1 grouped" : "V2 grouped");
  }
}

}  // namespace pagedattn::prop
