// The NaN rule (reference.h): a non-finite input that is read (a q element, a key or value
// element of a token inside seq_len, the head's ALiBi slope) makes exactly that (seq, head)
// row NaN on the certified path, the MPFR oracle and the partition states; the other rows
// are unchanged bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "builder.h"

namespace pagedattn::ref::testing {
namespace {

void expect_only_row_nan(const Case& poisoned, const Case& clean, int seq, int head) {
  const Output a = reference_attention(poisoned.p), b = reference_attention(clean.p);
  const Output m = reference_attention_mpfr(poisoned.p, DType::f16);
  const PartitionStates ps = reference_partitions(poisoned.p, 16);
  for (int s = 0; s < a.num_seqs; ++s)
    for (int h = 0; h < a.num_heads; ++h) {
      const bool hit = s == seq && h == head;
      for (int d = 0; d < a.head_size; ++d) {
        const size_t i = a.index(s, h, d);
        EXPECT_EQ(std::isnan(a.value[i]), hit) << s << " " << h << " " << d;
        EXPECT_EQ(std::isnan(m.value[i]), hit) << s << " " << h << " " << d;
        if (!hit) EXPECT_EQ(a.bits[i], b.bits[i]);
      }
      bool any_nan_state = false;
      for (int j = 0; j < ps.num_partitions; ++j)
        any_nan_state |= std::isnan(ps.s[ps.index(s, h, j)]);
      EXPECT_EQ(any_nan_state, hit) << s << " " << h;
    }
}

TEST(NonFinite, SlopeOrQueryPoisonsOneRow) {
  Spec sp;
  sp.lens = {40, 9};
  sp.alibi = true;
  const Case clean = build(sp);
  const int hs = sp.head_size;
  {
    Case c = build(sp);
    c.slopes[3] = NAN;  // head 3 reads KV head 1; seq 0 and seq 1 both have tokens
    c.wire();
    const Output a = reference_attention(c.p);
    for (int s = 0; s < 2; ++s)
      for (int h = 0; h < 4; ++h) EXPECT_EQ(std::isnan(a.value[a.index(s, h, 0)]), h == 3);
  }
  {
    Case c = build(sp);
    c.slopes[1] = INFINITY;
    c.lens[1] = 0;  // a zero-length sequence reads no slope: still +0
    c.wire();
    const Output a = reference_attention(c.p);
    EXPECT_TRUE(std::isnan(a.value[a.index(0, 1, 5)]));
    EXPECT_EQ(a.value[a.index(1, 1, 5)], 0.0);
  }
  {
    Case c = build(sp);
    put(c.q, (size_t(1) * 4 + 2) * hs + 7, to_dtype(INFINITY, DType::f16), 2);  // seq 1, head 2
    c.wire();
    expect_only_row_nan(c, clean, 1, 2);
  }
}

}  // namespace
}  // namespace pagedattn::ref::testing
