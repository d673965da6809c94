// Test helper: a generated replay folder (the .npy files `pagedattn run` reads) and the
// double-precision reference output of the same decode step, computed from the values
// exactly as stored (after rounding to the file's dtype), so only the kernel's own
// arithmetic separates the two.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "npy.h"

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

struct Replay {
  ReplaySpec spec;
  std::map<std::string, npy::Array> files;  // stem ("query", ...) -> contents
  // Stored values decoded to double, in logical layouts: q [S][H][D]; keys and values
  // per token: k[s][t][kvh][d] flattened as ((s * Lmax + t) * KVH + kvh) * D + d.
  std::vector<double> q, k, v, alibi;
  int max_len = 0;
};

Replay make_replay(const ReplaySpec& spec);
// Writes every file of `r` into `dir` (created); returns dir.
std::string write_replay(const Replay& r, const std::string& dir);
// out[s][h][d] flattened; rows of empty sequences are 0.
std::vector<double> reference_output(const Replay& r, double scale);
// Decodes an output array ('<f4', '<f2', or '<u2' as bfloat16 bits) to double.
std::vector<double> decode(const npy::Array& a);

npy::Array make_array(const std::string& descr, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes);

}  // namespace tools_test
