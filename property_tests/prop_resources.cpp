// V1 is refused (LaunchError, nothing written) exactly when its dynamic shared memory,
// resources.h's attention_smem_bytes for the block-rounded max_seq_len, exceeds the
// profile's opt-in limit, and runs otherwise. Lengths are drawn around the edge
// v1_max_seq_len, +-1 token and +-1 block.
#include <emu/profile.h>

#include "checks.h"
#include "generators.h"
#include "pagedattn/resources.h"
#include "registry.h"

namespace pagedattn::prop {

PAGEDATTN_PROPERTY(prop_v1_refused_iff_smem_exceeds, 200) {
  Spec s;
  s.scalar = *gen_scalar();
  s.head_size = *gen_head_size();
  s.block_size = *gen_block_size();
  s.profile = *gen_profile();
  const emu::Profile prof = emu::load_profile(s.profile);
  const std::int64_t edge =
      v1_max_seq_len(prof.warp_size, s.head_size, s.block_size, prof.shared_memory_per_block_optin);
  const int delta = *rc::gen::element(0, 1, -1, s.block_size, -s.block_size, s.block_size + 1, -7);
  const std::int64_t max_len = std::max<std::int64_t>(1, edge + delta);
  s.seq_lens = {1};
  Case p = build(s);  // one token; max_seq_len alone sets the launch size
  p.max_seq_len = max_len;
  const std::int64_t need =
      attention_smem_bytes(prof.warp_size, s.head_size, v1_partition_tokens(s.block_size, max_len));
  const bool exceeds = need > prof.shared_memory_per_block_optin;
  bool refused = false;
  Outputs o;
  try {
    o = run(p, Kernel::v1, s.options(), s.profile);
  } catch (const LaunchError&) {
    refused = true;
  }
  RC_TAG(exceeds ? "exceeds" : "fits");
  RC_ASSERT(refused == exceeds);
  if (!refused) {
    const auto [blk, slot] = p.where(0, 0);
    RC_ASSERT(o.out[0] == p.value(blk, KvHead{0}, slot, Dim{0}));  // one token: its value, exactly
  }
}

}  // namespace pagedattn::prop

namespace pagedattn::prop {

// The shared-memory opt-in threshold: CUDA (and the emulator) refuse more than 48 KiB of
// dynamic shared memory unless the kernel opted in, and remember an opt-in per kernel for
// the process. So V1 must run on the FIRST launch of an instantiation whose request is just
// above 48 KiB: for each block size, the shortest max_seq_len whose request exceeds
// 49152 bytes (by at most 4 * block_size bytes). Run first in a fresh process (each ctest
// test is one; mutate.py runs it alone first), an opt-in threshold a few bytes too high
// (platform.cuh's allow_dynamic_smem) fails here; later cases see opted-in kernels.
PAGEDATTN_PROPERTY(prop_v1_first_launch_just_above_48k, 30) {
  Spec s;
  s.scalar = *gen_scalar();
  s.head_size = *gen_head_size();
  s.profile = *gen_profile();
  const emu::Profile prof = emu::load_profile(s.profile);
  for (const int bs : {8, 16, 32}) {
    s.block_size = bs;
    std::int64_t len = bs;
    while (attention_smem_bytes(prof.warp_size, s.head_size, v1_partition_tokens(bs, len)) <=
           48 * 1024)
      len += bs;
    const std::int64_t need =
        attention_smem_bytes(prof.warp_size, s.head_size, v1_partition_tokens(bs, len));
    RC_ASSERT(need > 48 * 1024);
    RC_ASSERT(need <= 48 * 1024 + 4 * bs);  // one block of tokens past the edge at most
    if (need > prof.shared_memory_per_block_optin) continue;  // a profile without room
    s.seq_lens = {1};
    Case p = build(s);
    p.max_seq_len = len;
    Outputs o;
    try {
      o = run(p, Kernel::v1, s.options(), s.profile);
    } catch (const LaunchError& e) {
      RC_FAIL(std::string("V1 refused at ") + std::to_string(need) +
              " bytes of shared memory (block size " + std::to_string(bs) + "): " + e.what());
    }
    const auto [blk, slot] = p.where(0, 0);
    RC_ASSERT(o.out[0] == p.value(blk, KvHead{0}, slot, Dim{0}));
  }
}

}  // namespace pagedattn::prop
