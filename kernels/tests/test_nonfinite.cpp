// The NaN and inf rule (kernels/README.md "NaN and inf"): a NaN or inf in a live input
// (a query element, a key or value element of a token inside seq_len, an ALiBi slope)
// makes exactly that output row NaN on V1, V2 at every partition size, and the reduce;
// every other row is unchanged bit for bit. Finite inputs never give a non-finite output,
// even when fp32 intermediates overflow. Wrong variants these catch: V2 dropping a NaN
// partition as empty (`!(s > 0)`, the first round's bug), the max skipping a NaN logit
// with nothing carrying it (q NaN gave 0), a poisoned value element reaching only its own
// output element, and an overflowed logit or P.V sum becoming inf or NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <cstring>
#include "pagedattn_testing/kernel_under_test.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

using namespace pagedattn::testing;

const char* const kProfiles[] = {"bi-v100", "h200"};

// A base case and how it runs (V2's partition size).
struct Base {
  UniformSpec spec;
  Options options;
};

// V1 and V2 on both profiles, in that order.
std::vector<Outputs> run_all(const Case& p, const Options& opt) {
  std::vector<Outputs> v;
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& k : kernels_under_test(p)) {
      v.push_back(run_kernel(p, k.kernel, profile, k.options(opt)));
    }
  }
  return v;
}

// Runs the poisoned problem and checks against the clean runs: rows (seq, head) all NaN,
// the rest bitwise as clean; for V2 the poisoned row has a NaN exp-sum in some partition.
void expect_rows_poisoned(const std::vector<Outputs>& clean_runs, const Case& clean,
                          const Case& bad, const Options& opt,
                          const std::vector<std::pair<int, int>>& rows, const std::string& what) {
  const int H = clean.num_heads, D = clean.head_size;
  const std::size_t es = traits(clean.scalar).size;
  int run = 0;
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& kut : kernels_under_test(bad)) {
      const Kernel k = kut.kernel;
      const std::string where = what + " " + profile + " " + kut.name;
      const Outputs& a = clean_runs[run++];
      const Outputs b = run_kernel(bad, k, profile, kut.options(opt));
      for (int s = 0; s < clean.num_seqs; ++s) {
        for (int h = 0; h < H; ++h) {
          const std::size_t row = static_cast<std::size_t>(s) * H + h;
          if (std::find(rows.begin(), rows.end(), std::make_pair(s, h)) != rows.end()) {
            for (int d = 0; d < D; ++d)
              ASSERT_TRUE(std::isnan(b.out[row * D + d])) << where << " d " << d;
            if (k == Kernel::v2) {
              const std::size_t P = static_cast<std::size_t>(b.num_partitions);
              bool nan_state = false;
              for (std::size_t p = 0; p < P; ++p) nan_state |= std::isnan(b.exp_sums[row * P + p]);
              EXPECT_TRUE(nan_state) << where << ": the poison must be carried by an exp-sum";
            }
          } else {
            EXPECT_EQ(0,
                      std::memcmp(&a.out_bytes[row * D * es], &b.out_bytes[row * D * es], D * es))
                << where << " other row seq " << s << " head " << h;
          }
        }
      }
    }
  }
}

void expect_rows_poisoned(const Case& clean, const Case& bad, const Options& opt,
                          const std::vector<std::pair<int, int>>& rows, const std::string& what) {
  expect_rows_poisoned(run_all(clean, opt), clean, bad, opt, rows, what);
}

void expect_row_poisoned(const Case& clean, const Case& bad, const Options& opt, int seq, int head,
                         const std::string& what) {
  expect_rows_poisoned(clean, bad, opt, {{seq, head}}, what);
}

Base base(DType t, CacheFormat cache, int partition) {
  Base b;
  UniformSpec& c = b.spec;
  c.scalar = t;
  c.cache = cache;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {150, 33};  // seq 0: three partitions of 64, or one of 512
  b.options.partition_size = partition;
  c.alibi = true;
  c.k_scale = 0.5;
  c.v_scale = 2.0;
  return b;
}

TEST(NonFinite, LiveNaNOrInfPoisonsExactlyItsRow) {
  struct Poison {
    Element e;
    double value;
    const char* name;
  };
  const Poison poisons[] = {
      {Element::query, NAN, "q NaN"},       {Element::query, INFINITY, "q inf"},
      {Element::key, NAN, "k NaN"},         {Element::key, INFINITY, "k +inf"},
      {Element::key, -INFINITY, "k -inf"},  {Element::value, NAN, "v NaN"},
      {Element::value, -INFINITY, "v -inf"}};
  for (DType t : {DType::f32, DType::f16}) {
    for (int P : {64, 512}) {
      const Base c = base(t, CacheFormat::same, P);
      const Case clean = uniform_case(c.spec);
      const std::vector<Outputs> clean_runs = run_all(clean, c.options);
      for (const Poison& po : poisons) {
        // f32 takes the NaN of each element kind; f16 every poison.
        if (t == DType::f32 && !std::isnan(po.value)) continue;
        Case bad = clean;
        // seq 0: the query element of head 2, or token 100 of KV head 1 (read by heads 2
        // and 3, GQA 2:1), in the middle partition at P = 64.
        const bool q = po.e == Element::query;
        set_live(bad, po.e, 0, q ? 2 : 100, 1, 5, po.value);
        const std::vector<std::pair<int, int>> rows =
            q ? std::vector<std::pair<int, int>>{{0, 2}}
              : std::vector<std::pair<int, int>>{{0, 2}, {0, 3}};
        expect_rows_poisoned(clean_runs, clean, bad, c.options, rows,
                             std::string(po.name) + " P " + std::to_string(P));
      }
    }
  }
}

// vLLM's numerics (probabilities rounded, epsilon, fp16 partials) follow the same rule.
TEST(NonFinite, VllmCompatibleNumericsToo) {
  for (Element e : {Element::query, Element::key, Element::value}) {
    Base c = base(DType::f16, CacheFormat::fp8_e4m3, 64);
    c.options.numerics = Numerics::vllm_compatible;
    c.spec.num_kv_heads = 4;
    const Case clean = uniform_case(c.spec);
    Case bad = clean;
    set_live(bad, e, 0, e == Element::query ? 1 : 70, 1, 3, NAN);
    expect_row_poisoned(clean, bad, c.options, 0, 1, "vllm_compatible");
  }
}

TEST(NonFinite, Fp8CacheNaNAndInfBytes) {
  for (CacheFormat cache : {CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2}) {
    for (Element e : {Element::key, Element::value}) {
      Base c = base(DType::f16, cache, 64);
      c.spec.num_kv_heads = 4;
      const Case clean = uniform_case(c.spec);
      Case bad = clean;
      set_live(bad, e, 0, 149, 1, 0, INFINITY);  // E4M3: its NaN byte; E5M2: inf
      expect_row_poisoned(clean, bad, c.options, 0, 1, cache_format_name(cache));
    }
  }
}

TEST(NonFinite, SlopeNaNOrInfPoisonsItsHead) {
  for (float slope : {NAN, INFINITY, -INFINITY}) {
    const Base c = base(DType::f16, CacheFormat::same, 64);
    const Case clean = uniform_case(c.spec);
    Case bad = clean;
    bad.alibi_slopes[3] = slope;
    expect_rows_poisoned(clean, bad, c.options, {{0, 3}, {1, 3}},
                         "slope");  // head 3 of both sequences
  }
}

// A query element NaN in every partition of a long row: every state is (-inf, NaN) (fmaxf
// skipped every logit); the reduce must still give NaN, not the 0 of an all-empty row.
TEST(NonFinite, EveryPartitionPoisoned) {
  Base c = base(DType::f32, CacheFormat::same, 64);
  c.spec.alibi = false;
  const Case clean = uniform_case(c.spec);
  Case bad = clean;
  set_live(bad, Element::query, 0, 1, 0, 0, NAN);
  const Outputs o = run_kernel(bad, Kernel::v2, "bi-v100", c.options);
  const int P = 3, H = c.spec.num_heads;
  ASSERT_EQ(o.num_partitions, P);
  for (int p = 0; p < P; ++p) {
    EXPECT_EQ(o.max_logits[(0 * H + 1) * P + p], -INFINITY);
    EXPECT_TRUE(std::isnan(o.exp_sums[(0 * H + 1) * P + p]));
  }
  expect_row_poisoned(clean, bad, c.options, 0, 1, "q NaN everywhere");
}

// One token's logit overflows fp32 (q.k = 1e40 from finite f32 inputs): the exact softmax
// puts all weight on it, and saturation at FLT_MAX gives exactly its value row; V2 too,
// with the token in the middle partition. Wrong: the overflowed logit as +inf (exp(inf -
// inf) = NaN) or dropped.
TEST(NonFinite, OverflowingLogitSaturatesToItsToken) {
  Base c = base(DType::f32, CacheFormat::same, 64);
  c.spec.alibi = false;
  c.spec.num_kv_heads = 4;
  Case p = uniform_case(c.spec);
  const int D = c.spec.head_size, tok = 100;
  for (int d = 0; d < D; ++d) {
    set_live(p, Element::query, 0, 0, 0, d, 1e19);  // finite, but its logits overflow fp32
  }
  // Token `tok` aligned with q, the others against it: logits +-1e40 * scale, past FLT_MAX.
  for (int t = 0; t < 150; ++t) {
    for (int d = 0; d < D; ++d) set_live(p, Element::key, 0, t, 0, d, t == tok ? 1e19 : -1e19);
  }
  const std::vector<double> want = [&] {
    std::vector<double> v(D);
    const Physical at = p.where(0, tok);
    for (int d = 0; d < D; ++d) v[d] = p.value(at.block, KvHead{0}, at.slot, Dim{d});
    return v;
  }();
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& kut : kernels_under_test(p)) {
      const Outputs o = run_kernel(p, kut.kernel, profile, kut.options(c.options));
      for (int d = 0; d < D; ++d) ASSERT_EQ(o.out[d], want[d]) << profile << " d " << d;
    }
  }
}

// Every logit overflows to -inf in fp32 (finite inputs): all saturate to -FLT_MAX, tie, and
// the output is the mean of the values: finite (the exact logits are beyond fp32, see the
// README). Wrong: m = -inf and exp(-inf - -inf) = NaN.
TEST(NonFinite, EveryLogitOverflowingNegativeStaysFinite) {
  Base c = base(DType::f32, CacheFormat::same, 64);
  c.spec.alibi = false;
  c.spec.num_kv_heads = 4;
  Case p = uniform_case(c.spec);
  for (int d = 0; d < c.spec.head_size; ++d) set_live(p, Element::query, 0, 0, 0, d, 1e19);
  for (int t = 0; t < 150; ++t) {
    for (int d = 0; d < c.spec.head_size; ++d) set_live(p, Element::key, 0, t, 0, d, -1e19);
  }
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& kut : kernels_under_test(p)) {
      const Outputs o = run_kernel(p, kut.kernel, profile, kut.options(c.options));
      for (double x : o.out) ASSERT_TRUE(std::isfinite(x)) << profile;
    }
  }
}

// Values near FLT_MAX: sum_i e_i v_i overflows fp32 though the output (their mean, all
// logits equal) is 2^127 exactly. The rare path rescales by 2^-64 and gets it exactly.
// Wrong: inf, or NaN from a poisoned-row rule that cannot tell overflow from bad input.
TEST(NonFinite, OverflowingValueSumStaysExact) {
  for (DType t : {DType::f32, DType::bf16}) {
    Base c = base(t, CacheFormat::same, 64);
    c.spec.alibi = false;
    c.spec.num_kv_heads = 4;
    Case p = uniform_case(c.spec);
    const int D = c.spec.head_size;
    for (int d = 0; d < D; ++d) set_live(p, Element::query, 0, 0, 0, d, 0.0);
    for (int tok = 0; tok < 150; ++tok) {
      for (int d = 0; d < D; ++d) {
        set_live(p, Element::value, 0, tok, 0, d, std::ldexp(d % 2 ? 1.0 : -1.0, 127));
      }
    }
    for (const char* profile : kProfiles) {
      for (const KernelUnderTest& kut : kernels_under_test(p)) {
        const Outputs o = run_kernel(p, kut.kernel, profile, kut.options(c.options));
        for (int d = 0; d < D; ++d) {
          ASSERT_EQ(o.out[d], std::ldexp(d % 2 ? 1.0 : -1.0, 127)) << profile << " d " << d;
        }
      }
    }
  }
}

// An fp16 output whose exact value is past fp16's range (an fp8 cache value 448 times
// v_scale 200 = 89600 > 65504): it rounds to +inf, as IEEE round-to-nearest and the
// reference round it. The only finite-input case with a non-finite output, and only when
// v_scale puts values out of the output format's range.
TEST(NonFinite, Fp16OutputPastItsRangeRoundsToInf) {
  Base c = base(DType::f16, CacheFormat::fp8_e4m3, 64);
  c.spec.alibi = false;
  c.spec.v_scale = 200;
  c.spec.num_kv_heads = 4;
  Case p = uniform_case(c.spec);
  const int D = c.spec.head_size;
  for (int tok = 0; tok < 150; ++tok) {
    for (int d = 0; d < D; ++d) {
      ASSERT_EQ(set_live(p, Element::value, 0, tok, 0, d, 448 * 200.0), 448 * 200.0);  // E4M3 448
    }
  }
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& kut : kernels_under_test(p)) {
      const Outputs o = run_kernel(p, kut.kernel, profile, kut.options(c.options));
      for (int d = 0; d < D; ++d) ASSERT_EQ(o.out[d], INFINITY) << profile;
      for (int h = 1; h < c.spec.num_heads; ++h) ASSERT_TRUE(std::isfinite(o.out[h * D]));
    }
  }
}

}  // namespace
}  // namespace pagedattn::test
