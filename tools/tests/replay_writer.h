// Test helper: a generated decode step as a pagedattn::testing::Case (the kernel tests'
// generator, uniform_case, with NaN in every slot no token uses: a kernel that lets one
// reach arithmetic fails, vLLM bug #641) and the .npy files of a replay folder that hold
// it (the files `pagedattn run` reads). Tests that break a file's structure edit the
// files; tests about values edit the case through its layout, then write the files.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "npy.h"
#include "pagedattn_testing/case.h"

namespace tools_test {

struct ReplaySpec {
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_size = 64;
  int block_size = 16;
  std::vector<int> seq_lens = {150, 37, 64};
  std::string scalar = "f32";  // "f32", "f16", "bf16"
  std::string cache = "auto";  // "auto", "fp8_e4m3", "fp8_e5m2"
  double kv_scale = 1.0;       // k_scale = v_scale for fp8 caches
  bool alibi = true;
  unsigned seed = 1;
  // Inputs uniform in +-range: with 1 and scale head_size^-0.5 the logits spread over
  // several units, so the softmax is far from uniform (unlike vLLM's own test).
  double range = 1.0;
};

pagedattn::testing::Case make_case(const ReplaySpec& spec);

// The replay folder's files of a case: stem ("query", ...) -> contents.
using Files = std::map<std::string, npy::Array>;
Files replay_files(const pagedattn::testing::Case& c);
// Writes every file into `dir` (created); returns dir.
std::string write_replay(const Files& files, const std::string& dir);
// Decodes an output array ('<f4', '<f2', or '<u2' as bfloat16 bits) to double.
std::vector<double> decode(const npy::Array& a);

npy::Array make_array(const std::string& descr, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes);

}  // namespace tools_test
