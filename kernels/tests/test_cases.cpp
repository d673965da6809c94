// Behaviours beyond the combination grid: ALiBi, GQA, partition sizes and boundaries,
// 1 token, empty sequences and partitions, NaN in unused slots, wide logit spreads,
// vLLM-compatible numerics, strided queries. Each runs on both warp widths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include "reference.h"

namespace pagedattn::test {
namespace {

const char* const kProfiles[] = {"bi-v100", "h200"};

void expect_matches_reference(const Problem& p, Kernel k, const char* profile,
                              const std::string& what) {
  const Outputs o = run_kernel(p, k, profile);
  const Comparison r = compare(p, o.out, reference_attention(p), error_bounds(p, k));
  const std::string where = what + " on " + profile + (k == Kernel::v1 ? " V1: " : " V2: ");
  EXPECT_FALSE(r.any_nan) << where << r.worst;
  EXPECT_LE(r.worst_ratio, 1.0) << where << r.worst;
}

void expect_both(const Config& c, const std::string& what) {
  const Problem p = make_problem(c);
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) expect_matches_reference(p, k, profile, what);
  }
}

TEST(Cases, Alibi) {
  for (DType t : {DType::f32, DType::f16}) {
    Config c;
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
    Config c;
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
    Config c;
    c.scalar = DType::f16;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_size = 64;
    c.block_size = 32;
    c.partition_size = P;
    c.seq_lens = {P - 1, P, P + 1};
    c.seed = P;
    expect_both(c, "partition " + std::to_string(P));
  }
}

TEST(Cases, OneTokenGivesItsValueRow) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Config c;
    c.scalar = t;
    c.seq_lens = {1};
    const Problem p = make_problem(c);
    for (const char* profile : kProfiles) {
      for (Kernel k : {Kernel::v1, Kernel::v2}) {
        // One token: e = exp(0) = 1, s = 1, so the output is the value row exactly.
        const Outputs o = run_kernel(p, k, profile);
        EXPECT_EQ(o.out, reference_attention(p)) << profile;
      }
    }
  }
}

TEST(Cases, SeqLenZeroGivesZeroAndEmptyStates) {
  Config c;
  c.seq_lens = {0, 5, 0};
  c.max_seq_len = 130;  // three partitions of 64, all empty for the zero-length sequences
  const Problem p = make_problem(c);
  const int H = c.num_heads, D = c.head_size;
  for (const char* profile : kProfiles) {
    for (Kernel k : {Kernel::v1, Kernel::v2}) {
      const Outputs o = run_kernel(p, k, profile);
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
  Config c;
  c.seq_lens = {10, 200, 64};
  c.partition_size = 64;
  const Problem p = make_problem(c);
  const int H = c.num_heads, D = c.head_size, P = 4;
  for (const char* profile : kProfiles) {
    const Outputs o = run_kernel(p, Kernel::v2, profile);
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
            float t;
            std::memcpy(&t, &o.tmp_out[(static_cast<std::size_t>(i) * D + d) * 4], 4);
            EXPECT_EQ(t, 0.0f) << profile << " seq " << s << " part " << part << " d " << d;
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
      Config c;
      c.scalar = DType::f16;
      c.cache = cache;
      c.block_size = block;
      c.seq_lens = {block + 3, 67, 1};  // last blocks partly used
      Problem zero = make_problem(c), nan = make_problem(c);
      fill_unused_slots(zero, false);
      fill_unused_slots(nan, true);
      for (const char* profile : kProfiles) {
        for (Kernel k : {Kernel::v1, Kernel::v2}) {
          const Outputs a = run_kernel(zero, k, profile), b = run_kernel(nan, k, profile);
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
    Config c;
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
      Config c;
      c.scalar = t;
      c.cache = cache;
      c.numerics = Numerics::vllm_compatible;
      c.k_scale = 0.5;
      c.v_scale = 2.0;
      c.seq_lens = {100, 20};
      expect_both(c, "vllm_compatible");
    }
  }
}

// With one partition V2 runs V1's body and its reduce copies: the outputs are identical.
TEST(Cases, OnePartitionV2EqualsV1Bitwise) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Config c;
    c.scalar = t;
    c.seq_lens = {60, 3};
    c.partition_size = 64;
    const Problem p = make_problem(c);
    for (const char* profile : kProfiles) {
      EXPECT_EQ(run_kernel(p, Kernel::v1, profile).out_bytes,
                run_kernel(p, Kernel::v2, profile).out_bytes)
          << profile;
    }
  }
}

TEST(Cases, MaxSeqLenAboveEverySeqLen) {
  Config c;
  c.seq_lens = {17, 40};
  c.max_seq_len = 1000;
  expect_both(c, "max_seq_len 1000");
}

// A query with a padded sequence stride (vLLM passes query.stride(0)).
TEST(Cases, StridedQuery) {
  Config c;
  c.seq_lens = {33, 50};
  const Problem p = make_problem(c);
  const std::int64_t S = 2, H = c.num_heads, D = c.head_size, pad = 3 * D;
  std::vector<float> q(S * (H * D + pad), NAN);
  for (int s = 0; s < S; ++s) {
    std::memcpy(&q[s * (H * D + pad)], p.query.data() + s * H * D * 4, H * D * 4);
  }
  std::vector<float> out(S * H * D, NAN);
  std::vector<std::uint8_t> kc = p.key_cache, vc = p.value_cache;
  std::vector<std::int32_t> bt = p.block_tables, sl = p.seq_lens;
  paged_attention_v1(
      TensorView::contiguous(out.data(), DType::f32, {S, H, D}),
      TensorView::strided(q.data(), DType::f32, {S, H, D}, {H * D + pad, D, 1}),
      TensorView::contiguous(kc.data(), DType::f32, {p.num_blocks, c.num_kv_heads, D / 4, 16, 4}),
      TensorView::contiguous(vc.data(), DType::f32, {p.num_blocks, c.num_kv_heads, D, 16}),
      c.num_kv_heads, p.c.scale,
      TensorView::contiguous(bt.data(), DType::i32, {S, p.max_blocks_per_seq}),
      TensorView::contiguous(sl.data(), DType::i32, {S}), 16, p.max_seq_len, TensorView{}, "auto",
      1.0, 1.0, Backend::emulator("bi-v100"));
  const auto want = reference_attention(p);
  const auto bounds = error_bounds(p, Kernel::v1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_LE(std::fabs(out[i] - want[i]), bounds[i / D]) << i;
  }
}

}  // namespace
}  // namespace pagedattn::test
