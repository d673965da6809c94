// Behaviours beyond the combination grid: ALiBi, GQA, partition sizes and boundaries,
// 1 token, empty sequences and partitions, NaN in unused slots, wide logit spreads,
// vLLM-compatible numerics, strided queries. Each runs on both warp widths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/kernel_under_test.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

using namespace pagedattn::testing;

const char* const kProfiles[] = {"bi-v100", "h200"};

// V2 at 64 tokens per partition unless a test says otherwise: several partitions at the
// tests' lengths.
Options partitions_of(int size) {
  Options o;
  o.partition_size = size;
  return o;
}

// V1 and V2 on both warp widths against the exact reference within the proven bound.
void expect_both(const UniformSpec& c, const std::string& what,
                 const Options& opt = partitions_of(64)) {
  const Judge judge(uniform_case(c));
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& k : kernels_under_test(judge.input())) {
      const Outputs o = run_kernel(judge.input(), k.kernel, profile, k.options(opt));
      const Verdict v = judge.verdict(o.out, k.kernel, k.options(opt), profile);
      EXPECT_LE(v.worst, 1.0) << what << " on " << profile << " " << k.name << ": " << v.where;
    }
  }
}

TEST(Cases, Alibi) {
  for (DType t : {DType::f32, DType::f16}) {
    UniformSpec c;
    c.scalar = t;
    c.alibi = true;
    c.num_heads = 8;
    c.num_kv_heads = 8;
    c.seq_lens = {130, 7};
    expect_both(c, "alibi");
  }
}

TEST(Cases, GroupedAndMultiQuery) {
  for (int kv : {1, 2, 8}) {
    UniformSpec c;
    c.num_heads = 8;
    c.num_kv_heads = kv;
    c.seq_lens = {45, 90};
    c.seed = 40 + kv;
    expect_both(c, "num_kv_heads " + std::to_string(kv));
  }
}

// Lengths P-1, P, P+1 at every partition size from 64 to 4096.
TEST(Cases, PartitionSizesAndBoundaries) {
  for (int P : {64, 128, 256, 512, 1024, 2048, 4096}) {
    UniformSpec c;
    c.scalar = DType::f16;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_size = 64;
    c.block_size = 32;
    c.seq_lens = {P - 1, P, P + 1};
    c.seed = P;
    expect_both(c, "partition " + std::to_string(P), partitions_of(P));
  }
}

TEST(Cases, OneTokenGivesItsValueRow) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    UniformSpec c;
    c.scalar = t;
    c.seq_lens = {1};
    const Case p = uniform_case(c);
    const ref::Output ex = exact(p);
    for (const char* profile : kProfiles) {
      for (const KernelUnderTest& k : kernels_under_test(p)) {
        // One token: e = exp(0) = 1, s = 1, so the output is the value row exactly (and
        // the exact reference's nearest double is that row).
        const Outputs o = run_kernel(p, k.kernel, profile, k.options(partitions_of(64)));
        EXPECT_EQ(o.out, ex.value) << profile << " " << k.name;
      }
    }
  }
}

TEST(Cases, SeqLenZeroGivesZeroAndEmptyStates) {
  UniformSpec c;
  c.seq_lens = {0, 5, 0};
  c.max_seq_len = 130;  // three partitions of 64, all empty for the zero-length sequences
  const Case p = uniform_case(c);
  const int H = c.num_heads, D = c.head_size;
  for (const char* profile : kProfiles) {
    for (const KernelUnderTest& k : kernels_under_test(p)) {
      const Outputs o = run_kernel(p, k.kernel, profile, k.options(partitions_of(64)));
      for (int s : {0, 2}) {
        for (int i = 0; i < H * D; ++i) {
          ASSERT_EQ(o.out[s * H * D + i], 0.0) << profile << " seq " << s;
        }
      }
    }
  }
}

// Partitions that start at or past seq_len hold exactly (-inf, 0, 0); V2's tmp_out and
// states are prefilled with NaN so anything unwritten shows.
TEST(Cases, EmptyPartitionsWriteTheEmptyStateExactly) {
  UniformSpec c;
  c.seq_lens = {10, 200, 64};
  const Case p = uniform_case(c);
  const int H = c.num_heads, D = c.head_size, P = 4;
  for (const char* profile : kProfiles) {
    const Outputs o = run_kernel(p, Kernel::v2, profile, partitions_of(64));
    for (int s = 0; s < 3; ++s) {
      const int used = (c.seq_lens[s] + 63) / 64;
      for (int h = 0; h < H; ++h) {
        for (int part = 0; part < P; ++part) {
          const int i = (s * H + h) * P + part;
          if (part < used) {
            EXPECT_TRUE(std::isfinite(o.max_logits[i])) << profile;
            EXPECT_GE(o.exp_sums[i], 1.0f) << profile;  // the max term alone is exp(0) = 1
            continue;
          }
          EXPECT_EQ(o.max_logits[i], -INFINITY) << profile << " seq " << s << " part " << part;
          EXPECT_EQ(o.exp_sums[i], 0.0f) << profile;
          for (int d = 0; d < D; ++d) {
            EXPECT_EQ(o.tmp(static_cast<std::size_t>(i) * D + d), 0.0)
                << profile << " seq " << s << " part " << part << " d " << d;
          }
        }
      }
    }
  }
}

// Unused cache slots full of NaN leave the output unchanged bit for bit.
TEST(Cases, NaNInUnusedSlotsChangesNothing) {
  for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2}) {
    for (int block : {8, 16, 32}) {
      UniformSpec c;
      c.scalar = DType::f16;
      c.cache = cache;
      c.block_size = block;
      c.seq_lens = {block + 3, 67, 1};  // last blocks partly used
      Case zero = uniform_case(c), nan = uniform_case(c);
      fill_unused_slots(zero, false);
      fill_unused_slots(nan, true);
      for (const char* profile : kProfiles) {
        for (const KernelUnderTest& kut : kernels_under_test(zero)) {
          const Kernel k = kut.kernel;
          const Options opt = kut.options(partitions_of(64));
          const Outputs a = run_kernel(zero, k, profile, opt), b = run_kernel(nan, k, profile, opt);
          EXPECT_EQ(a.out_bytes, b.out_bytes) << profile << " block " << block;
          EXPECT_EQ(a.tmp_out, b.tmp_out) << profile << " block " << block;
        }
      }
    }
  }
}

// Logits spread over ~60 units: most exps underflow toward 0, the max dominates.
TEST(Cases, WideLogitSpread) {
  for (DType t : {DType::f32, DType::bf16}) {
    UniformSpec c;
    c.scalar = t;
    c.head_size = 128;
    c.scale = 30.0 / std::sqrt(128.0);
    c.seq_lens = {150, 33};
    c.seed = 77;
    expect_both(c, "wide spread");
  }
}

TEST(Cases, VllmCompatibleNumerics) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (CacheFormat cache : {CacheFormat::same, CacheFormat::fp8_e4m3}) {
      UniformSpec c;
      c.scalar = t;
      c.cache = cache;
      c.k_scale = 0.5;
      c.v_scale = 2.0;
      c.seq_lens = {100, 20};
      Options opt = partitions_of(64);
      opt.numerics = Numerics::vllm_compatible;
      expect_both(c, "vllm_compatible", opt);
    }
  }
}

// With one partition V2 runs V1's body and its reduce copies: the outputs are identical.
TEST(Cases, OnePartitionV2EqualsV1Bitwise) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    UniformSpec c;
    c.scalar = t;
    c.seq_lens = {60, 3};
    const Case p = uniform_case(c);
    for (const char* profile : kProfiles) {
      EXPECT_EQ(run_kernel(p, Kernel::v1, profile).out_bytes,
                run_kernel(p, Kernel::v2, profile, partitions_of(64)).out_bytes)
          << profile;
    }
  }
}

TEST(Cases, MaxSeqLenAboveEverySeqLen) {
  UniformSpec c;
  c.seq_lens = {17, 40};
  c.max_seq_len = 1000;
  expect_both(c, "max_seq_len 1000");
}

// A query with a padded sequence stride (vLLM passes query.stride(0)).
TEST(Cases, StridedQuery) {
  UniformSpec c;
  c.seq_lens = {33, 50};
  const Judge judge(uniform_case(c));
  const Case& p = judge.input();
  const std::int64_t S = 2, H = c.num_heads, D = c.head_size, pad = 3 * D;
  std::vector<float> q(S * (H * D + pad), NAN);
  for (int s = 0; s < S; ++s) {
    std::memcpy(&q[s * (H * D + pad)], p.query.data() + s * H * D * 4, H * D * 4);
  }
  std::vector<float> out(S * H * D, NAN);
  AttentionCall call = p.call();
  call.query = TensorView::strided(q.data(), DType::f32, {S, H, D}, {H * D + pad, D, 1});
  call.out = TensorView::contiguous(out.data(), DType::f32, {S, H, D});
  paged_attention(Kernel::v1, call, Backend::emulator("bi-v100"));
  const std::vector<double> got(out.begin(), out.end());
  const Verdict v = judge.verdict(got, Kernel::v1, {}, "bi-v100");
  EXPECT_LE(v.worst, 1.0) << v.where;
}

}  // namespace
}  // namespace pagedattn::test
