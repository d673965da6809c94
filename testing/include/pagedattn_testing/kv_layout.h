// vLLM's paged KV-cache layout as one function from coordinates to element offsets,
// written once (in the spirit of CuTe: a layout is a function of its coordinates):
//   key_cache   [num_blocks, num_kv_heads, head_size / x, block_size, x]
//   value_cache [num_blocks, num_kv_heads, head_size, block_size]
// with x = 16 bytes / element size, and a token-major order [block, kv_head, slot, d] for
// decoded copies. Each coordinate has its own type with an explicit constructor, so
// `key(Block{b}, KvHead{h}, Slot{s}, Dim{d})` is the only way to call it: swapping two
// coordinates, or passing plain integers or braces, does not compile
// (testing/tests/test_kv_layout.cpp asserts it).
//
// Dependency-free on purpose: the exact reference's tests may use it without seeing the
// kernels (reference/ includes nothing of kernels/ or the emulator), and the reference's
// own gather (reference/src/view.cpp) is checked against it element by element.
#pragma once
#include <array>
#include <cstdint>

namespace pagedattn::testing {

struct Block {
  constexpr explicit Block(std::int64_t i) : v(i) {}
  std::int64_t v;
};
struct KvHead {
  constexpr explicit KvHead(int i) : v(i) {}
  int v;
};
struct Slot {
  constexpr explicit Slot(int i) : v(i) {}
  int v;
};
struct Dim {
  constexpr explicit Dim(int i) : v(i) {}
  int v;
};

struct KvLayout {
  int num_kv_heads = 0;
  int head_size = 0;
  int block_size = 0;
  int x = 0;  // cache elements per 16 bytes: 4 (f32), 8 (f16, bf16), 16 (fp8)

  // For a cache whose elements take `element_bytes` bytes.
  static constexpr KvLayout of(int num_kv_heads, int head_size, int block_size, int element_bytes) {
    return {num_kv_heads, head_size, block_size, 16 / element_bytes};
  }

  // 16-byte chunks of a key: head_size / x, rounded up so that a head size x does not
  // divide (which validation refuses, e.g. 120 with fp8) still indexes inside the buffer.
  constexpr int key_chunks() const { return (head_size + x - 1) / x; }
  // Elements of one physical block of the key cache and of the value cache.
  constexpr std::int64_t key_block_elements() const {
    return std::int64_t{num_kv_heads} * key_chunks() * x * block_size;
  }
  constexpr std::int64_t value_block_elements() const {
    return std::int64_t{num_kv_heads} * head_size * block_size;
  }
  constexpr std::int64_t key(Block b, KvHead h, Slot s, Dim d) const {
    return (((b.v * num_kv_heads + h.v) * key_chunks() + d.v / x) * block_size + s.v) * x + d.v % x;
  }
  constexpr std::int64_t value(Block b, KvHead h, Slot s, Dim d) const {
    return ((b.v * num_kv_heads + h.v) * head_size + d.v) * block_size + s.v;
  }
  // Token-major: one token's head_size elements contiguous.
  constexpr std::int64_t token_major(Block b, KvHead h, Slot s, Dim d) const {
    return ((b.v * num_kv_heads + h.v) * block_size + s.v) * head_size + d.v;
  }
  constexpr std::array<std::int64_t, 5> key_shape(std::int64_t num_blocks) const {
    return {num_blocks, num_kv_heads, key_chunks(), block_size, x};
  }
  constexpr std::array<std::int64_t, 4> value_shape(std::int64_t num_blocks) const {
    return {num_blocks, num_kv_heads, head_size, block_size};
  }
};

}  // namespace pagedattn::testing
