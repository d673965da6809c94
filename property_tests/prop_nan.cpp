// nan_propagation (docs/NUMERICS.md, docs/VLLM_CONTRACT.md): what is never read changes nothing,
// bit for bit; a non-finite value that is read poisons its output row on V1, V2 at every partition
// size, and the reference alike; other rows keep their bits.
#include <cmath>
#include <set>
#include "checks.h"
#include "generators.h"
#include "pagedattn_testing/uniform_case.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

bool all_nan(const std::vector<double>& out, int row, int D) {
  for (int d = 0; d < D; ++d) {
    if (!std::isnan(out[static_cast<std::size_t>(row) * D + d])) return false;
  }
  return true;
}

// Bits of row `row` of a scalar-typed output.
bool same_row(const Outputs& a, const Outputs& b, int row, int D, std::size_t esz) {
  return std::memcmp(a.out_bytes.data() + row * D * esz, b.out_bytes.data() + row * D * esz,
                     D * esz) == 0;
}

}  // namespace

// NaN in every cache slot no sequence uses (slots past seq_len in a last block, spare
// blocks) changes no bit of V1's or V2's outputs or V2's partition states: catches a
// kernel that multiplies unused slots by 0 instead of not reading them.
PAGEDATTN_PROPERTY(prop_nan_propagation_unused, 125) {
  const Spec s = *gen_spec();
  Case zero = build(s);
  testing::fill_unused_slots(zero, false);
  Case nan = zero;
  testing::fill_unused_slots(nan, true);
  for (const KernelUnderTest& kut : kernels_one_each(zero)) {
    const Kernel k = kut.kernel;
    const Options o = kut.options(s.options());
    const Outputs a = run(zero, k, o, s.profile), b = run(nan, k, o, s.profile);
    RC_ASSERT(same_bits(a.out_bytes, b.out_bytes));
    if (kut.partitioned()) {
      RC_ASSERT(std::memcmp(a.exp_sums.data(), b.exp_sums.data(), 4 * a.exp_sums.size()) == 0);
      RC_ASSERT(std::memcmp(a.max_logits.data(), b.max_logits.data(), 4 * a.max_logits.size()) ==
                0);
    }
  }
}

// A NaN or +-inf in one live input (a query element, a live key or value element, or an
// ALiBi slope) makes every output row that reads it all-NaN on V1, on V2 at the case's
// partition size and at another, and in the reference; every other row keeps its bits.
PAGEDATTN_PROPERTY(prop_nan_propagation_live, 200) {
  Limits lim;
  lim.allow_empty = false;
  const Spec s = *gen_spec(lim);
  const int P2 = *gen_partition_size(s.block_size, 1024);
  const int where_kind = *rc::gen::inRange(0, s.alibi ? 4 : 3);  // q, k, v, slope
  const double poison = *gen_special(s.scalar, s.cache, true);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;
  const int seq = *rc::gen::inRange(0, S);
  const int t = *rc::gen::inRange(0, s.seq_lens[seq]);
  const int head = *rc::gen::inRange(0, H);
  const int d = *rc::gen::inRange(0, D);
  const Case p = build(s);
  Case bad = p;
  std::set<int> rows;  // (seq * H + head) rows that read the poisoned element
  if (where_kind == 0) {
    bad.set_q(seq, head, d, poison);
    rows.insert(seq * H + head);
  } else if (where_kind == 3) {
    bad.alibi_slopes[head] = static_cast<float>(poison);
    for (int q = 0; q < S; ++q) rows.insert(q * H + head);
  } else {
    const auto [blk, slot] = p.where(seq, t);
    const int kvh = head / s.gqa;
    if (where_kind == 1) {
      bad.set_key(blk, KvHead{kvh}, slot, Dim{d}, poison);
    } else {
      bad.set_value(blk, KvHead{kvh}, slot, Dim{d}, poison);
    }
    for (int q = 0; q < S; ++q) {  // repeated blocks: every sequence reading that slot
      for (int u = 0; u < p.seq_lens[q]; ++u) {
        const testing::Physical at = p.where(q, u);
        if (at.block.v == blk.v && at.slot.v == slot.v) {
          for (int g = 0; g < s.gqa; ++g) rows.insert(q * H + kvh * s.gqa + g);
        }
      }
    }
  }
  RC_TAG(where_kind == 0 ? "q" : where_kind == 1 ? "k" : where_kind == 2 ? "v" : "slope");
  const ref::Output ex = exact(bad);
  for (int r : rows) RC_ASSERT(all_nan(ex.value, r, D));
  const std::size_t esz = traits(s.scalar).size;
  const Options opt = s.options();
  Options opt2 = opt;
  opt2.partition_size = P2;
  const Outputs v1 = run(bad, Kernel::v1, opt, s.profile), v1c = run(p, Kernel::v1, opt, s.profile);
  const Outputs v2 = run(bad, Kernel::v2, opt, s.profile), v2c = run(p, Kernel::v2, opt, s.profile);
  const Outputs w2 = run(bad, Kernel::v2, opt2, s.profile),
                w2c = run(p, Kernel::v2, opt2, s.profile);
  for (int r = 0; r < S * H; ++r) {
    if (rows.count(r)) {
      if (!all_nan(v1.out, r, D)) RC_FAIL("V1 row " + std::to_string(r) + " not all NaN");
      if (!all_nan(v2.out, r, D)) RC_FAIL("V2 row " + std::to_string(r) + " not all NaN");
      if (!all_nan(w2.out, r, D)) {
        RC_FAIL("V2 at partition size " + std::to_string(P2) + " row " + std::to_string(r) +
                " not all NaN");
      }
    } else {
      RC_ASSERT(same_row(v1, v1c, r, D, esz));
      RC_ASSERT(same_row(v2, v2c, r, D, esz));
      RC_ASSERT(same_row(w2, w2c, r, D, esz));
    }
  }
}

}  // namespace pagedattn::prop
