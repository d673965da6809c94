// No length cap, at a precision that can fail: V2 (and its streaming reduce) takes a
// 4,000,000-token sequence on bi-v100, where V1 is refused, and every output element is
// within a derived bound of the exact answer (the high-precision reference). The inputs
// ("normal": logits with standard deviation 4, so a few dozen tokens spread over several
// partitions carry the softmax and the outputs are O(0.1 to 1)) make the wrong reductions
// named below miss the bound by far, which the test shows by running each once on the
// kernel's own partition states: an all-zero output (what the old version of this test
// let through ~98% of the time), the partition with the largest max alone, exp-sums
// weighted twice, and the exp(m_p - M) rescale forgotten. (Epsilon, fp16 partials, a stale
// max and NaN-producing empty merges are below f16 resolution or absent here:
// kernels/tests/test_reduce.cpp catches those.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "derived_bound.h"
#include "pagedattn/api.h"
#include "pagedattn_audit/inputs.h"
#include "pagedattn_audit/metrics.h"
#include "pagedattn_ref/reference.h"
#include "wrong_reductions.h"

namespace pagedattn::audit {
namespace {

TensorView view(const void* data, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(const_cast<void*>(data), t, shape);
}

// max_d |got_d - exact_d| / (derived_bound.h's element bound + the reference's own
// rigorous error bound on its value).
double worst_ratio(const std::vector<double>& got, const ref::Output& exact,
                   const derived::CaseBound& cb) {
  double r = 0;
  for (std::size_t d = 0; d < got.size(); ++d) {
    const double b = derived::element_bound(cb, DType::f16, exact.value[d]) + exact.value_err[d];
    const double e = std::fabs(got[d] - exact.value[d]);
    r = std::isnan(e) ? INFINITY : std::max(r, e / b);
  }
  return r;
}

TEST(LongSequence, FourMillionTokensOnBiV100WithinTheBound) {
  CaseShape sh;
  sh.num_heads = sh.num_kv_heads = 1;
  sh.head_size = 32;
  sh.block_size = 16;
  sh.seq_len = 4000000;
  sh.dtype = DType::f16;
  const Inputs in = generate_inputs(sh, "normal", 7, 2);
  const std::int64_t L = in.seq_lens[0], D = in.head_size, B = in.block_size;
  const int Psize = 512;
  const std::int64_t NP = (L + Psize - 1) / Psize;
  const TensorView q = view(in.query.data(), in.dtype, {1, 1, D});
  const TensorView kc = view(in.key_cache.data(), in.dtype, {in.num_blocks, 1, D / 8, B, 8});
  const TensorView vc = view(in.value_cache.data(), in.dtype, {in.num_blocks, 1, D, B});
  const TensorView bt = view(in.block_tables.data(), DType::i32, {1, in.max_blocks_per_seq});
  const TensorView sl = view(in.seq_lens.data(), DType::i32, {1});
  std::vector<std::uint16_t> out(D);
  Options opt;
  opt.partition_size = Psize;

  // V1 would need the whole sequence's logits in shared memory: refused on bi-v100.
  try {
    paged_attention_v1(view(out.data(), DType::f16, {1, 1, D}), q, kc, vc, 1, in.scale, bt, sl, B,
                       in.max_seq_len, TensorView{}, "auto", 1, 1, Backend::emulator("bi-v100"),
                       opt);
    ADD_FAILURE() << "V1 ran 4M tokens in 48 KiB of shared memory";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }

  std::vector<float> es(NP), ml(NP), tmp(NP * D);
  paged_attention_v2(view(out.data(), DType::f16, {1, 1, D}),
                     view(es.data(), DType::f32, {1, 1, NP}),
                     view(ml.data(), DType::f32, {1, 1, NP}),
                     view(tmp.data(), DType::f32, {1, 1, NP, D}), q, kc, vc, 1, in.scale, bt, sl, B,
                     in.max_seq_len, TensorView{}, "auto", 1, 1, Backend::emulator("bi-v100"), opt);
  ref::Problem p;
  p.num_seqs = p.num_heads = p.num_kv_heads = 1;
  p.head_size = static_cast<int>(D);
  p.block_size = static_cast<int>(B);
  p.num_blocks = static_cast<int>(in.num_blocks);
  p.max_blocks_per_seq = in.max_blocks_per_seq;
  p.scalar_dtype = p.cache_dtype = ref::DType::f16;
  p.query = in.query.data();
  p.key_cache = in.key_cache.data();
  p.value_cache = in.value_cache.data();
  p.block_tables = in.block_tables.data();
  p.seq_lens = in.seq_lens.data();
  p.scale = in.scale;
  ref::Options ro;
  ro.out_dtype = ref::DType::f32;  // `value` (rigorous error value_err) is what is compared
  const ref::Output exact = ref::reference_attention(p, ro);
  const derived::CaseBound E = derived::derived_bound(in, Psize);

  std::vector<double> got(D);
  for (int d = 0; d < D; ++d) got[d] = f16_bits_to_float(out[d]);
  const double ratio = worst_ratio(got, exact, E);
  std::printf("  V2 4M tokens: fp32 bound %.3g, worst error / bound %.3g\n", E.fp32, ratio);
  EXPECT_LE(ratio, 1.0);

  // The wrong reductions on the kernel's own states, rounded to f16 like the output.
  const pagedattn::test::wrong::States st =
      pagedattn::test::wrong::row_states(ml.data(), es.data(), tmp.data(), static_cast<int>(NP), D);
  using pagedattn::test::wrong::Reduction;
  for (Reduction r :
       {Reduction::largest_max_partition, Reduction::exp_sum_twice, Reduction::no_rescale}) {
    std::vector<double> w = pagedattn::test::wrong::reduce(r, st);
    for (double& x : w) x = pagedattn::test::wrong::round_to_f16(x);
    const double wr = worst_ratio(w, exact, E);
    std::printf("  %s: error / bound %.3g\n", pagedattn::test::wrong::name(r).c_str(), wr);
    EXPECT_GT(wr, 1.0) << pagedattn::test::wrong::name(r) << " would pass";
  }
  EXPECT_GT(worst_ratio(std::vector<double>(D, 0.0), exact, E), 1.0) << "all zeros would pass";
}

}  // namespace
}  // namespace pagedattn::audit
