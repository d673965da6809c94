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
#include "reference.h"

namespace pagedattn::test {
namespace {

const char* const kProfiles[] = {"bi-v100", "h200"};

// V1 and V2 on both profiles, in that order.
std::vector<Outputs> run_all(const Problem& p) {
  std::vector<Outputs> v;
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) v.push_back(run_kernel(p, k, profile));
  }
  return v;
}

// Runs the poisoned problem and checks against the clean runs: rows (seq, head) all NaN,
// the rest bitwise as clean; for V2 the poisoned row has a NaN exp-sum in some partition.
void expect_rows_poisoned(const std::vector<Outputs>& clean_runs, const Problem& clean,
                          const Problem& bad, const std::vector<std::pair<int, int>>& rows,
                          const std::string& what) {
  const int H = clean.c.num_heads, D = clean.c.head_size;
  const std::size_t es = dtype_size(clean.c.scalar);
  int run = 0;
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const std::string where = what + " " + profile + (k == Kernel::v1 ? " V1" : " V2");
      const Outputs& a = clean_runs[run++];
      const Outputs b = run_kernel(bad, k, profile);
      for (int s = 0; s < static_cast<int>(clean.seq_lens.size()); ++s) {
        for (int h = 0; h < H; ++h) {
          const std::size_t row = static_cast<std::size_t>(s) * H + h;
          if (std::find(rows.begin(), rows.end(), std::make_pair(s, h)) != rows.end()) {
            for (int d = 0; d < D; ++d)
              ASSERT_TRUE(std::isnan(b.out[row * D + d])) << where << " d " << d;
            if (k == Kernel::v2) {
              const std::size_t P = b.exp_sums.size() / (clean.seq_lens.size() * H);
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

void expect_rows_poisoned(const Problem& clean, const Problem& bad,
                          const std::vector<std::pair<int, int>>& rows, const std::string& what) {
  expect_rows_poisoned(run_all(clean), clean, bad, rows, what);
}

void expect_row_poisoned(const Problem& clean, const Problem& bad, int seq, int head,
                         const std::string& what) {
  expect_rows_poisoned(clean, bad, {{seq, head}}, what);
}

Config base(DType t, CacheFormat cache, int partition) {
  Config c;
  c.scalar = t;
  c.cache = cache;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {150, 33};  // seq 0: three partitions of 64, or one of 512
  c.partition_size = partition;
  c.alibi = true;
  c.k_scale = 0.5;
  c.v_scale = 2.0;
  return c;
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
      const Config c = base(t, CacheFormat::same, P);
      const Problem clean = make_problem(c);
      const std::vector<Outputs> clean_runs = run_all(clean);
      for (const Poison& po : poisons) {
        // f32 takes the NaN of each element kind; f16 every poison.
        if (t == DType::f32 && !std::isnan(po.value)) continue;
        Problem bad = clean;
        // seq 0: the query element of head 2, or token 100 of KV head 1 (read by heads 2
        // and 3, GQA 2:1), in the middle partition at P = 64.
        const bool q = po.e == Element::query;
        set_element(bad, po.e, 0, q ? 2 : 100, 1, 5, po.value);
        const std::vector<std::pair<int, int>> rows =
            q ? std::vector<std::pair<int, int>>{{0, 2}}
              : std::vector<std::pair<int, int>>{{0, 2}, {0, 3}};
        expect_rows_poisoned(clean_runs, clean, bad, rows,
                             std::string(po.name) + " P " + std::to_string(P));
      }
    }
  }
}

// vLLM's numerics (probabilities rounded, epsilon, fp16 partials) follow the same rule.
TEST(NonFinite, VllmCompatibleNumericsToo) {
  for (Element e : {Element::query, Element::key, Element::value}) {
    Config c = base(DType::f16, CacheFormat::fp8_e4m3, 64);
    c.numerics = Numerics::vllm_compatible;
    c.num_kv_heads = 4;
    const Problem clean = make_problem(c);
    Problem bad = clean;
    set_element(bad, e, 0, e == Element::query ? 1 : 70, 1, 3, NAN);
    expect_row_poisoned(clean, bad, 0, 1, "vllm_compatible");
  }
}

TEST(NonFinite, Fp8CacheNaNAndInfBytes) {
  for (CacheFormat cache : {CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2}) {
    for (Element e : {Element::key, Element::value}) {
      Config c = base(DType::f16, cache, 64);
      c.num_kv_heads = 4;
      const Problem clean = make_problem(c);
      Problem bad = clean;
      set_element(bad, e, 0, 149, 1, 0, INFINITY);  // E4M3: its NaN byte; E5M2: inf
      expect_row_poisoned(clean, bad, 0, 1, cache_format_name(cache));
    }
  }
}

TEST(NonFinite, SlopeNaNOrInfPoisonsItsHead) {
  for (float slope : {NAN, INFINITY, -INFINITY}) {
    const Config c = base(DType::f16, CacheFormat::same, 64);
    const Problem clean = make_problem(c);
    Problem bad = clean;
    bad.alibi[3] = slope;
    expect_rows_poisoned(clean, bad, {{0, 3}, {1, 3}}, "slope");  // head 3 of both sequences
  }
}

// A query element NaN in every partition of a long row: every state is (-inf, NaN) (fmaxf
// skipped every logit); the reduce must still give NaN, not the 0 of an all-empty row.
TEST(NonFinite, EveryPartitionPoisoned) {
  Config c = base(DType::f32, CacheFormat::same, 64);
  c.alibi = false;
  const Problem clean = make_problem(c);
  Problem bad = clean;
  set_element(bad, Element::query, 0, 1, 0, 0, NAN);
  const Outputs o = run_kernel(bad, Kernel::v2, "bi-v100");
  const int P = 3;
  for (int p = 0; p < P; ++p) {
    EXPECT_EQ(o.max_logits[(0 * c.num_heads + 1) * P + p], -INFINITY);
    EXPECT_TRUE(std::isnan(o.exp_sums[(0 * c.num_heads + 1) * P + p]));
  }
  expect_row_poisoned(clean, bad, 0, 1, "q NaN everywhere");
}

// One token's logit overflows fp32 (q.k = 1e40 from finite f32 inputs): the exact softmax
// puts all weight on it, and saturation at FLT_MAX gives exactly its value row; V2 too,
// with the token in the middle partition. Wrong: the overflowed logit as +inf (exp(inf -
// inf) = NaN) or dropped.
TEST(NonFinite, OverflowingLogitSaturatesToItsToken) {
  Config c = base(DType::f32, CacheFormat::same, 64);
  c.alibi = false;
  c.num_kv_heads = 4;
  Problem p = make_problem(c);
  const int D = c.head_size, tok = 100;
  for (int d = 0; d < D; ++d) {
    set_element(p, Element::query, 0, 0, 0, d, 1e19);  // finite, but its logits overflow fp32
  }
  // Token `tok` aligned with q, the others against it: logits +-1e40 * scale, past FLT_MAX.
  for (int t = 0; t < 150; ++t) {
    for (int d = 0; d < D; ++d) set_element(p, Element::key, 0, t, 0, d, t == tok ? 1e19 : -1e19);
  }
  const std::vector<double> want = [&] {
    std::vector<double> v(D);
    const int blk = p.block_tables[tok / c.block_size];
    for (int d = 0; d < D; ++d) {
      v[d] = p.v[((static_cast<std::size_t>(blk) * c.num_kv_heads + 0) * c.block_size +
                  tok % c.block_size) *
                     D +
                 d];
    }
    return v;
  }();
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const Outputs o = run_kernel(p, k, profile);
      for (int d = 0; d < D; ++d) ASSERT_EQ(o.out[d], want[d]) << profile << " d " << d;
    }
  }
}

// Every logit overflows to -inf in fp32 (finite inputs): all saturate to -FLT_MAX, tie, and
// the output is the mean of the values: finite (the exact logits are beyond fp32, see the
// README). Wrong: m = -inf and exp(-inf - -inf) = NaN.
TEST(NonFinite, EveryLogitOverflowingNegativeStaysFinite) {
  Config c = base(DType::f32, CacheFormat::same, 64);
  c.alibi = false;
  c.num_kv_heads = 4;
  Problem p = make_problem(c);
  for (int d = 0; d < c.head_size; ++d) set_element(p, Element::query, 0, 0, 0, d, 1e19);
  for (int t = 0; t < 150; ++t) {
    for (int d = 0; d < c.head_size; ++d) set_element(p, Element::key, 0, t, 0, d, -1e19);
  }
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const Outputs o = run_kernel(p, k, profile);
      for (double x : o.out) ASSERT_TRUE(std::isfinite(x)) << profile;
    }
  }
}

// Values near FLT_MAX: sum_i e_i v_i overflows fp32 though the output (their mean, all
// logits equal) is 2^127 exactly. The rare path rescales by 2^-64 and gets it exactly.
// Wrong: inf, or NaN from a poisoned-row rule that cannot tell overflow from bad input.
TEST(NonFinite, OverflowingValueSumStaysExact) {
  for (DType t : {DType::f32, DType::bf16}) {
    Config c = base(t, CacheFormat::same, 64);
    c.alibi = false;
    c.num_kv_heads = 4;
    Problem p = make_problem(c);
    for (int d = 0; d < c.head_size; ++d) set_element(p, Element::query, 0, 0, 0, d, 0.0);
    for (int tok = 0; tok < 150; ++tok) {
      for (int d = 0; d < c.head_size; ++d) {
        set_element(p, Element::value, 0, tok, 0, d, std::ldexp(d % 2 ? 1.0 : -1.0, 127));
      }
    }
    for (const char* profile : kProfiles) {
      for (Kernel k : {Kernel::v1, Kernel::v2}) {
        const Outputs o = run_kernel(p, k, profile);
        for (int d = 0; d < c.head_size; ++d) {
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
  Config c = base(DType::f16, CacheFormat::fp8_e4m3, 64);
  c.alibi = false;
  c.v_scale = 200;
  c.num_kv_heads = 4;
  Problem p = make_problem(c);
  const int B = c.block_size;
  for (int tok = 0; tok < 150; ++tok) {
    const int blk = p.block_tables[tok / B];
    for (int d = 0; d < c.head_size; ++d) {
      p.value_cache[((static_cast<std::size_t>(blk) * c.num_kv_heads + 0) * c.head_size + d) * B +
                    tok % B] = 0x7e;  // E4M3 448
    }
  }
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const Outputs o = run_kernel(p, k, profile);
      for (int d = 0; d < c.head_size; ++d) ASSERT_EQ(o.out[d], INFINITY) << profile;
      for (int h = 1; h < c.num_heads; ++h) ASSERT_TRUE(std::isfinite(o.out[h * c.head_size]));
    }
  }
}

}  // namespace
}  // namespace pagedattn::test
