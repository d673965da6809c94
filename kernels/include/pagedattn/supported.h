// The shapes the kernels are built for, listed once. Dispatch instantiates exactly these
// (src/dispatch.cuh walks the lists), validation accepts exactly these (validate.cpp),
// the reduce sizes its per-thread rows from the largest (src/reduce_kernel.cuh), and the
// tools print and check them (tools/cli_limits.cpp, audit/src/config.cpp). Adding a head
// size here adds its instantiations, its validation and the reduce's rows at once.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace pagedattn {

// A compile-time list of ints: what dispatch expands over.
template <int... V>
struct IntList {
  static constexpr int size = sizeof...(V);
  static constexpr std::array<int, sizeof...(V)> values{V...};
  static constexpr int max() {
    int m = values[0];
    for (int v : values) m = v > m ? v : m;
    return m;
  }
  static constexpr bool contains(std::int64_t x) {  // int64: a tensor size, never narrowed
    for (int v : values)
      if (v == x) return true;
    return false;
  }
};

using HeadSizeList = IntList<32, 64, 80, 96, 112, 120, 128, 192, 256>;
using BlockSizeList = IntList<8, 16, 32>;
// The grouped kernels (Options::grouped) are built for every shape the per-head kernels
// are: f32, f16 and bf16 queries, each with its fp8 caches, every head size and block size
// above, both warp widths (ALiBi and vLLM's numerics are runtime flags). A grouped
// instantiation costs nvcc about 6x a per-head one (its G heads' loops unrolled); what the
// whole set costs the build is measured in kernels/README.md, "Grouped kernels". Where
// Options::grouped cannot share a KV read (one query head per KV head, or a block with
// room for one head) it runs the per-head kernels, whose outputs are the same bits
// (grouped_launch_fallback_reason, resources.h, says why).
//
// PAGEDATTN_GROUPED_SAMPLE (scripts/targets/compile_targets.sh in CI only; never a library
// build) narrows the grouped lists to a sample with a head size that is not a power of two
// and both slot counts (G = 8 and 4), every dtype and cache, at vLLM's default block size,
// so the five extra compilers' resource reports cost about what they did before every shape
// was grouped; TARGETS_ALL=1 compiles every shape there.
#ifdef PAGEDATTN_GROUPED_SAMPLE
using GroupedHeadSizeList = IntList<80, 128, 256>;
using GroupedBlockSizeList = IntList<16>;
#else
using GroupedHeadSizeList = HeadSizeList;
using GroupedBlockSizeList = BlockSizeList;
#endif

inline constexpr auto kHeadSizes = HeadSizeList::values;
inline constexpr auto kBlockSizes = BlockSizeList::values;
inline constexpr int kMaxHeadSize = HeadSizeList::max();
inline constexpr int kMinPartitionSize = 64;
inline constexpr int kMaxPartitionSize = 4096;

// Every head size must tile vLLM's key layout for 2- and 4-byte caches (x = 8 or 4
// elements per 16 bytes); fp8 (x = 16) is instantiated only where it tiles (not 120).
static_assert(
    [] {
      for (int h : kHeadSizes)
        if (h % 8 != 0) return false;
      return true;
    }(),
    "a head size must be a multiple of 8 (vLLM's key layout for 16-bit caches)");

// "32, 64, 80, ...": the list as people read it (help texts, error messages).
template <class List>
std::string list_text(List) {
  std::string s;
  for (int v : List::values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

}  // namespace pagedattn
