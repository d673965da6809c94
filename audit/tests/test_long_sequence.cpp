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

// The fp32 error of V2's output element, first order in u = 2^-24, as derived in
// kernels/tests/reference.cpp (error_bounds): with V = max|v|, A = max_i scale sum_d
// |q_d k_id|, R the logit spread, n tokens per partition and P partitions,
//   logits: dx = (D + 1) u A + 3 u |x|max, moving the output by 2 dx V;
//   exp: (2 + 2.2 R) u per weight, in numerator and denominator: 2 (2 + 2.2 R) u V;
//   the partition's sums and division: (2 n + 2) u V;
//   the reduce: 2 (P u + (2 + 2.2 R) u) V for the weights, (2 P + 1) u V for its sums
//   and division, u V for tmp_out;
// times 1.25 for the second-order terms. The f16 rounding adds half an ulp of f16 at the
// fp32 result, taken at |exact| + E (the larger binade, conservatively).
double fp32_error_bound(const Inputs& in, std::int64_t L, int P_size) {
  const double u = std::ldexp(1.0, -24);
  const int D = in.head_size, B = in.block_size;
  std::vector<double> q(D);
  for (int d = 0; d < D; ++d) q[d] = element(in, in.query, in.dtype, d);
  double V = 0, A = 0, xmax = 0, lo = INFINITY, hi = -INFINITY;
  for (std::int64_t t = 0; t < L; ++t) {
    const std::int64_t blk = in.block_tables[t / B];
    double dot = 0, dot_abs = 0;
    for (int d = 0; d < D; ++d) {
      const double k = element(in, in.key_cache, in.cache_elem(), key_offset(in, blk, 0, d, t % B));
      const double v =
          element(in, in.value_cache, in.cache_elem(), value_offset(in, blk, 0, d, t % B));
      dot += q[d] * k;
      dot_abs += std::fabs(q[d] * k);
      V = std::max(V, std::fabs(v));
    }
    const double x = in.scale * dot;
    A = std::max(A, in.scale * dot_abs);
    xmax = std::max(xmax, std::fabs(x));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double R = hi - lo, n = P_size, P = std::ceil(double(L) / P_size);
  const double dx = (D + 1) * u * A + 3 * u * xmax;
  const double rel = 2 * dx + 2 * (2 + 2.2 * R) * u + (2 * n + 2) * u +
                     2 * (P * u + (2 + 2.2 * R) * u) + (2 * P + 1) * u + u;
  return 1.25 * rel * V;
}

// max_d |got_d - exact_d| / (E + half an f16 ulp + the reference's own error bound).
double worst_ratio(const std::vector<double>& got, const ref::Output& exact, double E) {
  double r = 0;
  for (std::size_t d = 0; d < got.size(); ++d) {
    const double b =
        E + 0.5 * ulp_of(DType::f16, std::fabs(exact.value[d]) + E) + exact.value_err[d];
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
                       in.max_seq_len, TensorView{}, "auto", 1, 1, 0, 0, 0, 64, 0,
                       Backend::emulator("bi-v100"), opt);
    ADD_FAILURE() << "V1 ran 4M tokens in 48 KiB of shared memory";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }

  std::vector<float> es(NP), ml(NP), tmp(NP * D);
  paged_attention_v2(
      view(out.data(), DType::f16, {1, 1, D}), view(es.data(), DType::f32, {1, 1, NP}),
      view(ml.data(), DType::f32, {1, 1, NP}), view(tmp.data(), DType::f32, {1, 1, NP, D}), q, kc,
      vc, 1, in.scale, bt, sl, B, in.max_seq_len, TensorView{}, "auto", 1, 1, 0, 0, 0, 64, 0,
      Backend::emulator("bi-v100"), opt);
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
  const double E = fp32_error_bound(in, L, Psize);

  std::vector<double> got(D);
  for (int d = 0; d < D; ++d) got[d] = f16_bits_to_float(out[d]);
  const double ratio = worst_ratio(got, exact, E);
  std::printf("  V2 4M tokens: fp32 bound %.3g, worst error / bound %.3g\n", E, ratio);
  EXPECT_LE(ratio, 1.0);

  // The wrong reductions on the kernel's own states, rounded to f16 like the output.
  const test::wrong::States st =
      test::wrong::row_states(ml.data(), es.data(), tmp.data(), static_cast<int>(NP), D);
  using test::wrong::Reduction;
  for (Reduction r :
       {Reduction::largest_max_partition, Reduction::exp_sum_twice, Reduction::no_rescale}) {
    std::vector<double> w = test::wrong::reduce(r, st);
    for (double& x : w) x = test::wrong::round_to_f16(x);
    const double wr = worst_ratio(w, exact, E);
    std::printf("  %s: error / bound %.3g\n", test::wrong::name(r).c_str(), wr);
    EXPECT_GT(wr, 1.0) << test::wrong::name(r) << " would pass";
  }
  EXPECT_GT(worst_ratio(std::vector<double>(D, 0.0), exact, E), 1.0) << "all zeros would pass";
}

}  // namespace
}  // namespace pagedattn::audit
