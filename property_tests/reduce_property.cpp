#include "reduce_property.h"

#include <rapidcheck.h>

#include <cmath>
#include <cstring>
#include "checks.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

std::string show_states(const test::wrong::States& st) {
  std::ostringstream os;
  os.precision(9);
  for (int p = 0; p < st.parts(); ++p) {
    os << "(m=" << st.m[p] << " s=" << st.s[p] << " o0=" << st.o_at(p, 0) << ") ";
  }
  return os.str();
}

}  // namespace

// The kernels' reduce on the states, with 1-2 more partitions past the sequence holding NaN
// garbage (vLLM leaves them unwritten; the reduce must not read them) and a seq_len
// anywhere in the last live partition.
Reducer kernel_reducer(const std::string& profile) {
  return [profile](const test::wrong::States& st, DType out_dtype) {
    const int P = st.parts(), D = st.head_size, Psize = 64;
    const int NP = P + *rc::gen::inRange(1, 3);
    const int seq_len = P * Psize - *rc::gen::inRange(0, Psize);
    std::vector<float> es(NP, NAN), ml(NP, NAN), tmp(static_cast<std::size_t>(NP) * D, NAN);
    for (int p = 0; p < P; ++p) {
      es[p] = static_cast<float>(st.s[p]);
      ml[p] = static_cast<float>(st.m[p]);
      for (int d = 0; d < D; ++d)
        tmp[static_cast<std::size_t>(p) * D + d] = static_cast<float>(st.o_at(p, d));
    }
    std::vector<std::uint8_t> out(static_cast<std::size_t>(D) * traits(out_dtype).size, 0xff);
    std::vector<std::int32_t> sl = {seq_len};
    Options opt;
    opt.partition_size = Psize;
    paged_attention_reduce(TensorView::contiguous(out.data(), out_dtype, {1, 1, D}),
                           TensorView::contiguous(es.data(), DType::f32, {1, 1, NP}),
                           TensorView::contiguous(ml.data(), DType::f32, {1, 1, NP}),
                           TensorView::contiguous(tmp.data(), DType::f32, {1, 1, NP, D}),
                           TensorView::contiguous(sl.data(), DType::i32, {1}), NP * Psize,
                           Backend::emulator(profile), opt);
    std::vector<double> r(D);
    for (int d = 0; d < D; ++d) r[d] = testing::decode(out_dtype, out.data(), d);
    return r;
  };
}

void reduce_property(const Reducer& reduce) {
  // (A) the kernels' own partition states.
  {
    Limits lim;
    const Spec s = *gen_spec(lim);
    const Case p = build(s);
    const Options opt = s.options();
    const Outputs o = run(p, Kernel::v2, opt, s.profile);
    const ref::Output ex = exact(p);
    const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;
    const int NP = o.num_partitions;
    std::vector<float> tmp(o.tmp_out.size() / 4);  // f32: our numerics
    std::memcpy(tmp.data(), o.tmp_out.data(), o.tmp_out.size());
    std::vector<double> got;
    for (int row = 0; row < S * H; ++row) {
      const auto st =
          test::wrong::row_states<float>(&o.max_logits[row * NP], &o.exp_sums[row * NP],
                                         &tmp[static_cast<std::size_t>(row) * NP * D], NP, D);
      const std::vector<double> r = reduce(st, s.scalar);
      got.insert(got.end(), r.begin(), r.end());
    }
    assert_within(err_over_bound(p, got, ex, element_bounds(p, Kernel::v2, opt, ex, s.profile)),
                  "reduce of V2 states");
  }
  // (B) states with a known fold: every o_p = o, so the exact result is o whatever the
  // weights; maxima c + g_p up to 300 apart (a stale max overflows exp); empty states
  // (-inf, 0, NaN garbage, as vLLM leaves them) anywhere; sometimes all empty (result 0).
  {
    const DType out = *gen_scalar();
    const int P = *rc::gen::inRange(2, 7);
    const int D = *rc::gen::element(32, 64, 128);
    const float c = static_cast<float>(*rc::gen::inRange(-2000, 2000)) / 4;
    const bool all_empty = *rc::gen::weightedElement<bool>({{1, true}, {7, false}});
    test::wrong::States st;
    st.head_size = D;
    std::vector<double> o(D);
    for (double& v : o) v = static_cast<double>(*rc::gen::inRange(-1024, 1025)) / 1024;
    for (int p = 0; p < P; ++p) {
      const bool empty =
          all_empty || (p > 0 && *rc::gen::weightedElement<bool>({{1, true}, {3, false}}));
      const double g =
          *rc::gen::element(0.0, 10.0, -10.0, 50.0, -50.0, 100.0, -100.0, 150.0, -150.0);
      st.m.push_back(empty ? -INFINITY : c + g);
      st.s.push_back(empty ? 0.0 : static_cast<double>(*rc::gen::inRange(1, 65)));
      for (int d = 0; d < D; ++d) st.o.push_back(empty ? NAN : o[d]);
    }
    const std::vector<double> r = reduce(st, out);
    const double u = std::ldexp(1.0, -24);
    const double u_out = traits(out).unit_roundoff;
    for (int d = 0; d < D; ++d) {
      const double want = all_empty ? 0.0 : o[d];
      // tests/test_reduce.cpp's reduce bound with every o_p equal: the weights' errors
      // cancel, the two P-term sums and the division give (2P + 1) u |o|, the output
      // rounding u_out |o| (o is a multiple of 2^-10, never subnormal). 1.25: second order.
      const double bound = 1.25 * (2.0 * P + 1) * u * std::fabs(want) + u_out * std::fabs(want);
      if (!(std::fabs(r[d] - want) <= bound)) {
        RC_FAIL("known fold: d " + std::to_string(d) + " got " + std::to_string(r[d]) + " want " +
                std::to_string(want) + " for states " + show_states(st));
      }
    }
  }
}

// fold_partitions_softmax on the kernels' reduce: the property above with the emulator's
// reduce kernel as the reduction.
PAGEDATTN_PROPERTY(prop_fold_partitions_softmax_reduce, 150) {
  const std::string profile = *gen_profile();
  reduce_property(kernel_reducer(profile));
  // seq_len 0: no partition is the sequence's, all hold NaN garbage; the output is 0.
  const DType out_dtype = *gen_scalar();
  const int D = *rc::gen::element(32, 64, 128), NP = *rc::gen::inRange(1, 4);
  std::vector<float> es(NP, NAN), ml(NP, NAN), tmp(static_cast<std::size_t>(NP) * D, NAN);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(D) * traits(out_dtype).size, 0xff);
  std::vector<std::int32_t> sl = {0};
  Options opt;
  opt.partition_size = 64;
  paged_attention_reduce(TensorView::contiguous(out.data(), out_dtype, {1, 1, D}),
                         TensorView::contiguous(es.data(), DType::f32, {1, 1, NP}),
                         TensorView::contiguous(ml.data(), DType::f32, {1, 1, NP}),
                         TensorView::contiguous(tmp.data(), DType::f32, {1, 1, NP, D}),
                         TensorView::contiguous(sl.data(), DType::i32, {1}), NP * 64,
                         Backend::emulator(profile), opt);
  for (int d = 0; d < D; ++d) {
    const double got = testing::decode(out_dtype, out.data(), d);
    if (!(got == 0.0)) RC_FAIL("seq_len 0: d " + std::to_string(d) + " got " + std::to_string(got));
  }
}

}  // namespace pagedattn::prop
