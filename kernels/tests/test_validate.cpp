// One test per validation rule: the call throws pagedattn::Error naming the argument, and
// nothing is written (outputs keep their poison pattern).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include "pagedattn/api.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::test {
namespace {

using testing::Case;
using Config = testing::UniformSpec;

// All arguments of a V1/V2 call, valid by default; a test breaks one.
struct Call {
  Case p;
  std::vector<std::uint8_t> out, tmp;
  std::vector<float> exp_sums, max_logits;
  TensorView out_v, q_v, k_v, v_v, bt_v, sl_v, alibi_v, es_v, ml_v, tmp_v;
  std::int64_t num_kv_heads, block_size, max_seq_len;
  double scale = 0.125, k_scale = 1, v_scale = 1;
  std::string kv_cache_dtype = "auto";
  std::int64_t tp_rank = 0, bs_local = 0, bs_vert = 0, bs_block = 64, bs_step = 0;
  Backend backend = Backend::emulator("h200");
  Options options;

  // V2 at 64 tokens per partition: two partitions for the longer sequence of base().
  explicit Call(const Config& c) : p(testing::uniform_case(c)) {
    const std::int64_t S = p.num_seqs, H = c.num_heads, D = c.head_size,
                       P = (p.max_seq_len + 63) / 64;
    out.assign(S * H * D * dtype_size(c.scalar), 0xab);
    tmp.assign(S * H * P * D * 4, 0xab);
    exp_sums.assign(S * H * P, 12345.f);
    max_logits.assign(S * H * P, 12345.f);
    const AttentionCall in = p.call();
    out_v = TensorView::contiguous(out.data(), c.scalar, {S, H, D});
    q_v = in.query;
    k_v = in.key_cache;
    v_v = in.value_cache;
    bt_v = in.block_tables;
    sl_v = in.seq_lens;
    es_v = TensorView::contiguous(exp_sums.data(), DType::f32, {S, H, P});
    ml_v = TensorView::contiguous(max_logits.data(), DType::f32, {S, H, P});
    tmp_v = TensorView::contiguous(tmp.data(), DType::f32, {S, H, P, D});
    num_kv_heads = c.num_kv_heads;
    block_size = c.block_size;
    max_seq_len = p.max_seq_len;
    options.partition_size = 64;
    if (c.cache != CacheFormat::same) kv_cache_dtype = "fp8";
  }
  void v1() {
    paged_attention_v1(out_v, q_v, k_v, v_v, num_kv_heads, scale, bt_v, sl_v, block_size,
                       max_seq_len, alibi_v, kv_cache_dtype, k_scale, v_scale, tp_rank, bs_local,
                       bs_vert, bs_block, bs_step, backend, options);
  }
  void v2() {
    paged_attention_v2(out_v, es_v, ml_v, tmp_v, q_v, k_v, v_v, num_kv_heads, scale, bt_v, sl_v,
                       block_size, max_seq_len, alibi_v, kv_cache_dtype, k_scale, v_scale, tp_rank,
                       bs_local, bs_vert, bs_block, bs_step, backend, options);
  }
  bool untouched() const {
    for (auto b : out)
      if (b != 0xab) return false;
    for (auto b : tmp)
      if (b != 0xab) return false;
    for (float f : exp_sums)
      if (f != 12345.f) return false;
    for (float f : max_logits)
      if (f != 12345.f) return false;
    return true;
  }
};

Config base() {
  Config c;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {20, 70};
  return c;
}

// Breaks the call with `mutate`, runs V1 and V2, expects Error naming `needle`.
void expect_rejected(const std::function<void(Call&)>& mutate, const std::string& needle,
                     Config c = base(), bool v1 = true, bool v2 = true) {
  for (int version = 1; version <= 2; ++version) {
    if ((version == 1 && !v1) || (version == 2 && !v2)) continue;
    Call call(c);
    mutate(call);
    try {
      version == 1 ? call.v1() : call.v2();
      ADD_FAILURE() << "V" << version << ": no error; expected one naming " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "V" << version << ": message does not name " << needle << ": " << e.what();
    }
    EXPECT_TRUE(call.untouched()) << "V" << version << " wrote output before failing (" << needle
                                  << ")";
  }
}

TEST(Validate, ValidCallPasses) {
  Call call(base());
  EXPECT_NO_THROW(call.v1());
  Call call2(base());
  EXPECT_NO_THROW(call2.v2());
}

TEST(Validate, HeadSizeOutsideTheSupportedSet) {
  Config c = base();
  c.head_size = 48;  // constructible (x divides it) but not supported
  expect_rejected([](Call&) {}, "head_size", c);
}

TEST(Validate, Fp8CacheWithHeadSize120) {
  Config c = base();
  c.head_size = 120;
  c.cache = CacheFormat::fp8_e4m3;
  // The rule rejects before any shape check (the case's tensors round head_size/x up to 8).
  expect_rejected([](Call&) {}, "not a multiple of x = 16", c);
}

TEST(Validate, BlockSizeOutsideTheSupportedSet) {
  expect_rejected([](Call& c) { c.block_size = 64; }, "block_size");
}

TEST(Validate, NumHeadsNotDivisibleByNumKvHeads) {
  expect_rejected([](Call& c) { c.num_kv_heads = 3; }, "num_kv_heads");
}

TEST(Validate, BlockIdOutOfRange) {
  expect_rejected([](Call& c) { c.p.block_tables[1] = c.p.num_blocks; }, "block_tables[0][1]");
  expect_rejected([](Call& c) { c.p.block_tables[0] = -1; }, "block_tables[0][0]");
}

TEST(Validate, UnusedBlockTableEntriesAreNotChecked) {
  Call call(base());  // entries past each sequence hold 1 << 28 (uniform_case)
  EXPECT_NO_THROW(call.v1());
}

TEST(Validate, SeqLenAboveMaxSeqLen) {
  expect_rejected([](Call& c) { c.max_seq_len = 69; }, "max_seq_len");
}

TEST(Validate, SeqLenBeyondTheBlockTable) {
  expect_rejected(
      [](Call& c) {
        c.p.seq_lens[1] = c.p.max_blocks_per_seq * 16 + 1;
        c.max_seq_len = c.p.seq_lens[1];
      },
      "max_blocks_per_seq", base(), true, false);
}

TEST(Validate, NegativeSeqLen) {
  expect_rejected([](Call& c) { c.p.seq_lens[0] = -1; }, "seq_lens[0]");
}

TEST(Validate, PartitionSizeRange) {
  for (int bad : {48, 8192, 72 /* not a multiple of 16 */}) {
    expect_rejected([bad](Call& c) { c.options.partition_size = bad; }, "partition_size", base(),
                    false, true);
  }
}

TEST(Validate, BlocksparseArgumentsOtherThanDefaults) {
  expect_rejected([](Call& c) { c.bs_local = 1; }, "blocksparse_local_blocks");
  expect_rejected([](Call& c) { c.bs_vert = 2; }, "blocksparse_vert_stride");
  expect_rejected([](Call& c) { c.bs_block = 32; }, "blocksparse_block_size");
  expect_rejected([](Call& c) { c.bs_step = 1; }, "blocksparse_head_sliding_step");
}

TEST(Validate, KvCacheDtypeName) {
  expect_rejected([](Call& c) { c.kv_cache_dtype = "fp16"; }, "kv_cache_dtype");
}

TEST(Validate, CacheDtypeMustMatchKvCacheDtype) {
  expect_rejected([](Call& c) { c.kv_cache_dtype = "fp8_e5m2"; }, "key_cache");
}

TEST(Validate, OutDtypeMustMatchQuery) {
  expect_rejected([](Call& c) { c.out_v.dtype = DType::f16; }, "out");
}

TEST(Validate, QueryMustBeAScalarType) {
  expect_rejected([](Call& c) { c.q_v.dtype = DType::i32; }, "query");
}

TEST(Validate, QueryHeadsMustBePacked) {
  expect_rejected([](Call& c) { c.q_v.strides[1] = 65; }, "query.stride(1)");
}

TEST(Validate, KeyCacheShape) {
  expect_rejected([](Call& c) { c.k_v.shape[3] = 8; }, "key_cache");
}

TEST(Validate, ValueCacheShape) {
  expect_rejected([](Call& c) { c.v_v.shape[2] = 32; }, "value_cache");
}

TEST(Validate, MissingTensor) {
  expect_rejected([](Call& c) { c.out_v = TensorView{}; }, "out is required");
}

TEST(Validate, AlibiSlopesShape) {
  std::vector<float> slopes(3, 0.5f);
  expect_rejected(
      [&](Call& c) { c.alibi_v = TensorView::contiguous(slopes.data(), DType::f32, {3}); },
      "alibi_slopes");
}

TEST(Validate, NonFiniteScale) {
  expect_rejected([](Call& c) { c.scale = NAN; }, "scale");
}

TEST(Validate, Fp8ScalesMustBePositive) {
  Config c = base();
  c.cache = CacheFormat::fp8_e4m3;
  expect_rejected([](Call& call) { call.k_scale = 0; }, "k_scale", c);
}

TEST(Validate, TmpOutDtypeFollowsNumerics) {
  expect_rejected([](Call& c) { c.tmp_v.dtype = DType::f16; }, "tmp_out", base(), false, true);
  Config half = base();
  half.scalar = DType::f16;  // f32 tmp_out: right for exact_fp32, wrong for vllm_compatible
  expect_rejected([](Call& c) { c.options.numerics = Numerics::vllm_compatible; }, "tmp_out", half,
                  false, true);
}

TEST(Validate, ExpSumsShape) {
  expect_rejected([](Call& c) { c.es_v.shape[2] = 1; }, "exp_sums", base(), false, true);
}

TEST(Validate, MaxLogitsDtype) {
  expect_rejected([](Call& c) { c.ml_v.dtype = DType::f16; }, "max_logits", base(), false, true);
}

TEST(Validate, NegativeMaxSeqLen) {
  expect_rejected([](Call& c) { c.max_seq_len = -1; }, "max_seq_len");
}

TEST(Validate, TooManyPartitionsForTheGrid) {
  expect_rejected([](Call& c) { c.max_seq_len = 65536LL * 64 + 1; }, "max_num_partitions", base(),
                  false, true);
}

TEST(Validate, CudaBackendMissingFromThisBuild) {
  if (has_cuda_backend()) GTEST_SKIP() << "this build has the CUDA backend";
  expect_rejected([](Call& c) { c.backend = Backend::cuda(); }, "Backend::cuda");
}

TEST(Validate, UnknownEmulatorProfile) {
  expect_rejected([](Call& c) { c.backend = Backend::emulator("no-such-gpu"); }, "no-such-gpu");
}

TEST(Validate, ErrorIsAnInvalidArgument) {
  Call call(base());
  call.block_size = 7;
  EXPECT_THROW(call.v1(), std::invalid_argument);
}

}  // namespace
}  // namespace pagedattn::test
