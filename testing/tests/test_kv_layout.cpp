// The KV layout: vLLM's key [blocks, kv_heads, D/x, B, x] and value [blocks, kv_heads, D, B]
// orders as one function of typed coordinates. That swapping coordinates does not compile
// is asserted here at compile time; that the offsets are vLLM's, element by element
// against the exact reference's own gather, is reference/tests/test_gather_layout.cpp.
#include <gtest/gtest.h>

#include <set>
#include <type_traits>

#include "pagedattn_testing/kv_layout.h"

namespace pagedattn::testing {
namespace {

// Callable only with (Block, KvHead, Slot, Dim) in that order: not with swapped
// coordinates, not with plain integers, not with braces (explicit constructors).
template <class... A>
constexpr bool key_takes = std::is_invocable_v<decltype(&KvLayout::key), const KvLayout&, A...>;
static_assert(key_takes<Block, KvHead, Slot, Dim>);
static_assert(!key_takes<Block, KvHead, Dim, Slot>);  // audit's old (block, kvh, d, slot)
static_assert(!key_takes<KvHead, Block, Slot, Dim>);
static_assert(!key_takes<Block, Slot, KvHead, Dim>);
static_assert(!key_takes<std::int64_t, int, int, int>);
static_assert(!std::is_convertible_v<int, Slot> && !std::is_convertible_v<int, Dim>);
template <class... A>
constexpr bool value_takes = std::is_invocable_v<decltype(&KvLayout::value), const KvLayout&, A...>;
static_assert(value_takes<Block, KvHead, Slot, Dim> && !value_takes<Block, KvHead, Dim, Slot>);

// Every element of a block maps to a distinct offset inside the block, for every cache
// element size: each layout is a bijection onto its buffer.
TEST(KvLayout, EachOrderIsABijectionOntoItsBuffer) {
  for (int bytes : {4, 2, 1}) {
    const KvLayout l = KvLayout::of(3, 64, 16, bytes);
    std::set<std::int64_t> keys, values, tokens;
    for (std::int64_t b = 0; b < 2; ++b) {
      for (int h = 0; h < 3; ++h) {
        for (int s = 0; s < 16; ++s) {
          for (int d = 0; d < 64; ++d) {
            keys.insert(l.key(Block{b}, KvHead{h}, Slot{s}, Dim{d}));
            values.insert(l.value(Block{b}, KvHead{h}, Slot{s}, Dim{d}));
            tokens.insert(l.token_major(Block{b}, KvHead{h}, Slot{s}, Dim{d}));
          }
        }
      }
    }
    for (const auto* set : {&keys, &values, &tokens}) {
      ASSERT_EQ(set->size(), 2u * 3 * 16 * 64);
      EXPECT_EQ(*set->begin(), 0);
      EXPECT_EQ(*set->rbegin(), 2 * 3 * 16 * 64 - 1);
    }
  }
}

// The x elements of a token's 16-byte chunk are contiguous in the key cache; a value row
// is strided by the block size.
TEST(KvLayout, KeyChunksAndValueRows) {
  const KvLayout l = KvLayout::of(2, 128, 16, 2);  // f16: x = 8
  ASSERT_EQ(l.x, 8);
  const Block b{1};
  EXPECT_EQ(l.key(b, KvHead{0}, Slot{3}, Dim{5}) - l.key(b, KvHead{0}, Slot{3}, Dim{4}), 1);
  EXPECT_EQ(l.key(b, KvHead{0}, Slot{4}, Dim{0}) - l.key(b, KvHead{0}, Slot{3}, Dim{0}), 8);
  EXPECT_EQ(l.key(b, KvHead{0}, Slot{0}, Dim{8}) - l.key(b, KvHead{0}, Slot{0}, Dim{0}), 16 * 8);
  EXPECT_EQ(l.value(b, KvHead{0}, Slot{0}, Dim{1}) - l.value(b, KvHead{0}, Slot{0}, Dim{0}), 16);
  EXPECT_EQ(l.value(b, KvHead{0}, Slot{1}, Dim{0}) - l.value(b, KvHead{0}, Slot{0}, Dim{0}), 1);
  EXPECT_EQ(l.key_shape(5), (std::array<std::int64_t, 5>{5, 2, 16, 16, 8}));
  EXPECT_EQ(l.value_shape(5), (std::array<std::int64_t, 4>{5, 2, 128, 16}));
}

}  // namespace
}  // namespace pagedattn::testing
