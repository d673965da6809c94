// The property suite's generator: a small, printable Spec that RapidCheck generates and
// shrinks (the generator's parameters, not a case model), the testing::Case it builds,
// and the suite's shorthands for the judge (pagedattn::testing: the exact reference and
// the proven bound, per element).
#pragma once
#include <cstdint>
#include <ostream>
#include <map>
#include <string>
#include <vector>

#include "pagedattn/params.h"
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/case.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/kernel_under_test.h"
#include "pagedattn_testing/run.h"

namespace pagedattn::prop {

using testing::Block;
using testing::Case;
using testing::Dim;
using testing::err_over_bound;  // max over elements of |got - exact| / bound
using testing::exact;           // the exact reference of a case
using testing::kernels_one_each;
using testing::kernels_under_test;
using testing::KernelUnderTest;
using testing::KvHead;
using testing::Outputs;
using testing::Slot;
using testing::traits;
using testing::Verdict;

// How the logits of every row are shaped. `uniform`: q, k uniform in [-1, 1]. The others
// set q = (1, ...) and key element 0 to the wanted logit x_t (rounded to the cache
// format), so the logit pattern is chosen exactly: x_t in [off - span, off] (`spread`,
// up to exp's underflow edge and past it), all equal (`ties`), one token `span` above
// the rest (`dominant`), or partition j's tokens near off + 10 * k_j (`steps`).
enum class LogitShape : std::uint8_t { uniform, spread, ties, dominant, steps };
// Values RapidCheck's float generator never yields, per tensor: `subnormal` mixes the
// format's subnormals with +0 and -0; `nearmax` is within a factor 2 of the format's max.
enum class ValueClass : std::uint8_t { uniform, subnormal, nearmax };
// Physical blocks: all distinct in random order, or drawn with repetition (shared blocks).
enum class BlockLayout : std::uint8_t { distinct, repeated };

struct Spec {
  DType scalar = DType::f32;
  CacheFormat cache = CacheFormat::same;
  double k_scale = 1, v_scale = 1;  // fp8 caches only
  int head_size = 32;
  int block_size = 16;
  int num_kv_heads = 1;
  int gqa = 1;  // query heads per KV head
  bool alibi = false;
  int partition_size = 64;  // V2's, in options()
  std::vector<int> seq_lens = {1};
  int extra_len = 0;  // max_seq_len = max(seq_lens) + extra_len: trailing empty partitions
  BlockLayout layout = BlockLayout::distinct;
  bool tight_table = false;  // UniformSpec::tight_table (the longest sequence is last)
  LogitShape logits = LogitShape::uniform;
  double span = 1;                           // logit spread for the shaped logits
  double offset = 0;                         // logit level for the shaped logits
  ValueClass q_lanes = ValueClass::uniform;  // shaped logits: q elements 1.. (k's are 0)
  ValueClass v_class = ValueClass::uniform;
  std::uint64_t seed = 1;
  std::string profile = "h200";

  int num_heads() const { return num_kv_heads * gqa; }
  int max_seq_len() const;
  // The launch options: V2 at partition_size, `numerics`.
  Options options(Numerics numerics = Numerics::exact_fp32) const;
};
std::ostream& operator<<(std::ostream& os, const Spec& s);

Case build(const Spec& s);

// The bound each accuracy property asserts, per output element: theorem
// kernel_error_bound with the exact magnitudes of the case, for the profile's warp width,
// `kernel` with `options` (V2's partition size, the numerics), and any exp within CUDA's
// documented __expf accuracy (so it holds for every emulator exp model). Rows with a
// non-finite input get NaN (nothing to bound).
std::vector<double> element_bounds(const Case& c, Kernel kernel, const Options& options,
                                   const ref::Output& ex, const std::string& profile);

// Outputs that can be compared bit for bit.
bool same_bits(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b);

// The distribution of err_over_bound for campaigns (the tightness figures): counts in
// quarter decades of log10 from 1e-8 to 1, with exact zeros, (0, 1e-8) and > 1 apart.
struct RatioHistogram {
  static constexpr int kLowDecade = -8, kPerDecade = 4, kBins = -kLowDecade * kPerDecade;
  long zero = 0, below = 0, over = 0;
  std::vector<long> bins = std::vector<long>(kBins, 0);
  double worst = 0;
  void add(double r);
  void add(const RatioHistogram& h);
};

// Records the worst err_over_bound a property saw, for campaigns (campaign.cpp reads it),
// and, with a tag ("<dtype>/<kernel>/<numerics>", e.g. "f32/v2/ours"), adds it to that
// tag's distribution.
void observe(double err_over_bound, const std::string& what, const std::string& tag = "");
struct Observation {
  double worst = -1;
  std::string what;
  std::map<std::string, RatioHistogram> by_tag;
};
Observation& observation();
// The tag assert_within gives kernel outputs: set by run() (checks.h) for each launch.
std::string& output_tag();

}  // namespace pagedattn::prop
