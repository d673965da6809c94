// The output-digest grid (output_digests.cpp, test_profile_per_call.cpp): cases, their
// inputs in vLLM's layouts (from a fixed integer generator, so they never move), and one
// run's digest of every byte it writes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/api.h"

namespace pagedattn::digest {

enum class Input { plain, poisoned, huge };
inline const char* input_name(Input i) {
  return i == Input::plain ? "plain" : i == Input::poisoned ? "poisoned" : "huge";
}

struct Case {
  DType scalar;
  CacheFormat cache;
  Numerics numerics;
  int head_size, block_size, partition_size;
  bool alibi;
  Input input;
  std::string name() const;  // "float32/auto/exact/h64/b8/p64/noalibi/plain"
};

// Host copies of one problem in vLLM's layouts.
struct Problem {
  int S = 4, H = 4, KVH = 2, D = 0, B = 0, x = 0, blocks = 0, max_blocks = 0;
  int max_seq_len = 200;
  std::vector<std::int32_t> seq_lens{37, 1, 200, 0};
  std::vector<std::int32_t> tables;
  std::vector<std::uint8_t> q, k, v;
  std::vector<float> slopes;
  double scale = 0, k_scale = 1, v_scale = 1;
};

Problem make(const Case& c, std::uint64_t seed);

// Runs one kernel on `backend` (grouped: Options::grouped); returns the FNV-1a digest of
// out (and of exp_sums, max_logits, tmp_out for V2), every byte of which starts as 0xA5.
std::uint64_t run(const Case& c, const Problem& p, Kernel kernel, const Backend& backend,
                  bool grouped = false);

// The grid's cases in a fixed order, each with its input seed.
std::vector<std::pair<Case, std::uint64_t>> grid();

}  // namespace pagedattn::digest
