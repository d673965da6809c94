// The reference keeps its own gather (reference/src/view.cpp, written from the contract
// alone) and the tests everywhere else index the caches through pagedattn::testing's one
// KV layout (testing/include/pagedattn_testing/kv_layout.h, dependency-free, so this test
// sees nothing of the kernels). Here the two agree on every element: each cache element
// holds a code of its own offset, so the value the gather returns names the offset it
// read, for every (sequence, token, KV head, d) of permuted block tables, every element
// size (x = 4, 8, 16) and block size. Wrong variants this catches: either side swapping
// slot and d, dropping the x split of the key, or using the value layout for keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "../src/view.h"
#include "pagedattn_ref/formats.h"
#include "pagedattn_testing/kv_layout.h"

namespace pagedattn::ref {
namespace {

using testing::Block;
using testing::Dim;
using testing::KvHead;
using testing::KvLayout;
using testing::Slot;

// The element code of offset o: f32 holds o itself (exact below 2^24); f16 the bits o
// mod 0x7c00 (the finite positive codes); E4M3 the code o mod 126 (finite codes 0..0x7d).
std::uint32_t code(DType t, std::int64_t o) {
  if (t == DType::f32) {
    const float f = static_cast<float>(o);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  return t == DType::f16 ? static_cast<std::uint32_t>(o % 0x7c00)
                         : static_cast<std::uint32_t>(o % 126);
}
double decoded(DType t, std::int64_t o) {
  const std::uint32_t b = code(t, o);
  return t == DType::f32   ? decode_f32(b)
         : t == DType::f16 ? decode_f16(std::uint16_t(b))
                           : decode_e4m3(std::uint8_t(b));
}

void check(DType cache, int head_size, int block_size) {
  const int es = cache == DType::f32 ? 4 : cache == DType::f16 ? 2 : 1;
  const int kv_heads = 3, heads = 6, num_blocks = 9;
  const std::vector<int> lens = {block_size * 3 + 5, 1, block_size * 2};
  const KvLayout l = KvLayout::of(kv_heads, head_size, block_size, es);
  std::vector<std::uint8_t> kc(num_blocks * l.key_block_elements() * es),
      vc(num_blocks * l.value_block_elements() * es);
  for (std::int64_t o = 0; o < num_blocks * l.value_block_elements(); ++o) {
    const std::uint32_t c = code(cache, o);
    std::memcpy(&kc[o * es], &c, es);
    std::memcpy(&vc[o * es], &c, es);
  }
  const int mb = 5;
  std::vector<std::int32_t> bt(lens.size() * mb);
  std::iota(bt.begin(), bt.end(), 0);
  std::mt19937 rng(static_cast<unsigned>(head_size * 100 + block_size));
  std::shuffle(bt.begin(), bt.end(), rng);
  for (auto& b : bt) b %= num_blocks;
  std::vector<std::int32_t> sl(lens.begin(), lens.end());
  std::vector<std::uint8_t> q(lens.size() * heads * head_size * 4, 0);
  Problem p;
  p.num_seqs = static_cast<int>(lens.size());
  p.num_heads = heads;
  p.num_kv_heads = kv_heads;
  p.head_size = head_size;
  p.block_size = block_size;
  p.num_blocks = num_blocks;
  p.max_blocks_per_seq = mb;
  p.scalar_dtype = DType::f32;
  p.cache_dtype = cache == DType::fp8_e4m3 ? DType::fp8_e4m3 : cache;
  if (cache != DType::f32) p.scalar_dtype = DType::f16;
  p.query = q.data();
  p.key_cache = kc.data();
  p.value_cache = vc.data();
  p.block_tables = bt.data();
  p.seq_lens = sl.data();
  const detail::View view(p);
  std::vector<double> k(head_size), v(head_size);
  int checked = 0;
  for (int s = 0; s < p.num_seqs; ++s) {
    for (int i = 0; i < lens[s]; ++i) {
      const Block b{bt[s * mb + i / block_size]};
      const Slot slot{i % block_size};
      for (int g = 0; g < kv_heads; ++g) {
        view.key(s, g, i, k.data());
        view.value(s, g, i, v.data());
        for (int d = 0; d < head_size; ++d, ++checked) {
          ASSERT_EQ(k[d], decoded(cache, l.key(b, KvHead{g}, slot, Dim{d})))
              << "key seq " << s << " token " << i << " kv head " << g << " d " << d;
          ASSERT_EQ(v[d], decoded(cache, l.value(b, KvHead{g}, slot, Dim{d})))
              << "value seq " << s << " token " << i << " kv head " << g << " d " << d;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(GatherLayout, ReferenceGatherAgreesWithTheTestingLayout) {
  for (int block : {8, 16, 32}) {
    check(DType::f32, 64, block);       // x = 4
    check(DType::f16, 120, block);      // x = 8, 15 chunks
    check(DType::fp8_e4m3, 64, block);  // x = 16
  }
}

}  // namespace
}  // namespace pagedattn::ref
