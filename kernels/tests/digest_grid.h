// The output-digest grid (output_digests.cpp, test_profile_per_call.cpp): its settings,
// each one's inputs as a pagedattn::testing::Case (from a fixed integer generator, so they
// never move), and one run's digest of every byte it writes.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pagedattn/api.h"
#include "pagedattn_testing/case.h"

namespace pagedattn::digest {

enum class Input { plain, poisoned, huge };
inline const char* input_name(Input i) {
  return i == Input::plain ? "plain" : i == Input::poisoned ? "poisoned" : "huge";
}

// One point of the grid: the case's formats and sizes, and the launch's options.
struct Setting {
  DType scalar;
  CacheFormat cache;
  Numerics numerics;
  int head_size, block_size, partition_size;
  bool alibi;
  Input input;
  std::string name() const;  // "float32/auto/exact/h64/b8/p64/noalibi/plain"
};

// The setting's inputs: 4 sequences (37, 1, 200 and 0 tokens) of 4 query heads over 2 KV
// heads, two spare blocks no sequence uses. The scales are kept as computed in double
// (1 / sqrt(head_size); fp8 scales such as 1e30), not rounded to float: the kernels take
// them as given, so Case::exact_problem() refuses some of these cases (digests need no
// reference).
testing::Case make(const Setting& s, std::uint64_t seed);

// Runs one kernel on `backend` (testing::run_kernel: the case's bytes, every output
// prefilled with NaN bit patterns); returns the FNV-1a digest of out (and of exp_sums,
// max_logits, tmp_out for V2). The committed digests were recorded with every output byte
// prefilled 0xA5 instead: that they still match shows no run leaves a byte unwritten.
// grouped: Options::grouped (the grouped kernels, which must give the same digests).
std::uint64_t run(const Setting& s, const testing::Case& c, Kernel kernel, const Backend& backend,
                  bool grouped = false);

// The grid's settings in a fixed order, each with its input seed.
std::vector<std::pair<Setting, std::uint64_t>> grid();

}  // namespace pagedattn::digest
