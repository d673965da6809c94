// The merge's monoid laws (docs/NUMERICS.md) on the templates the kernels use
// (kernels/include/pagedattn/lse_state.h): in real arithmetic with T = a 512-bit MPFR
// number, and in fp32 bitwise where IEEE arithmetic makes the law exact (identity,
// commutativity) and within a derived bound where it does not (associativity).
// "Equal" in MPFR means within a relative 2^-480: each MPFR operation errs by at most a
// relative 2^-512, a merge tree of three states takes fewer than 30 operations, and exp
// multiplies its argument's relative error by |argument| <= 2^9 here, so two evaluations
// of the same real number differ by < 2^-490 of it; any wrong merge (docs/NUMERICS.md's list)
// moves the result by more than 2^-30 of it.
#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <cstring>
#include <vector>
#include "generators.h"
#include "pagedattn/lse_state.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

using Mp = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<512>>;
constexpr int kN = 4;  // output elements per state: enough for the laws, cheap in MPFR

// exp for the multiprecision type (lse_state.h's StdExp covers float and double).
struct MpExp {
  Mp operator()(const Mp& x) const { return exp(x); }
};

struct F32State {
  float m, s;
  float o[kN];
};
std::ostream& operator<<(std::ostream& os, const F32State& x) {
  os.precision(9);
  os << "(m=" << x.m << " s=" << x.s << " o=[";
  for (int i = 0; i < kN; ++i) os << (i ? "," : "") << x.o[i];
  return os << "])";
}

// A partition state as fp32 numbers a kernel could write: empty (-inf, 0, 0) one time in
// five, else m with ties and spreads past exp's underflow, s >= 1 (a true max), o with
// subnormals, signed zeros and large values.
rc::Gen<F32State> gen_state() {
  return rc::gen::exec([] {
    F32State st{};
    if (*rc::gen::weightedElement<bool>({{1, true}, {4, false}})) {
      st.m = -INFINITY;
      st.s = 0;
      return st;
    }
    st.m = *rc::gen::weightedOneOf<float>(
        {{2, rc::gen::element(0.f, 1.f, -1.f, 10.f)},
         {3, rc::gen::map(rc::gen::inRange(-2000, 2000), [](int k) { return k / 8.f; })}});
    st.s = *rc::gen::weightedOneOf<float>({{1, rc::gen::just(1.f)},
                                           {3, rc::gen::map(rc::gen::inRange(1 << 20, 1 << 30),
                                                            [](int k) { return k / 1048576.f; })}});
    for (float& o : st.o) {
      o = *rc::gen::weightedOneOf<float>(
          {{3, rc::gen::map(rc::gen::inRange(-(1 << 20), 1 << 20),
                            [](int k) { return k / 1048576.f; })},
           {1, rc::gen::map(gen_special(DType::f32, CacheFormat::same, false),
                            [](double v) { return static_cast<float>(v); })}});
    }
    return st;
  });
}

template <class T>
PartitionState<T, kN> as(const F32State& f) {
  PartitionState<T, kN> p;
  p.ms = LseState<T>{T(f.m), T(f.s)};
  for (int i = 0; i < kN; ++i) p.o[i] = T(f.o[i]);
  return p;
}

template <class T, class Exp>
PartitionState<T, kN> merged(PartitionState<T, kN> a, const PartitionState<T, kN>& b, Exp e) {
  a.merge(b, e);
  return a;
}

bool overlap(const Mp& a, const Mp& b) {
  if (a == b) return true;  // includes the empty state's -inf and 0
  if (isinf(a) || isinf(b) || isnan(a) || isnan(b)) return false;
  return abs(a - b) <= ldexp(Mp(1), -480) * (abs(a) > abs(b) ? abs(a) : abs(b));
}
bool same(const PartitionState<Mp, kN>& a, const PartitionState<Mp, kN>& b) {
  // m is a max of exact inputs: no rounding, so equality is exact.
  if (!(a.ms.m == b.ms.m) && !(isinf(a.ms.m) && isinf(b.ms.m))) return false;
  if (!overlap(a.ms.s, b.ms.s)) return false;
  for (int i = 0; i < kN; ++i) {
    if (!overlap(a.o[i], b.o[i])) return false;
  }
  return true;
}
bool bitwise(const PartitionState<float, kN>& a, const PartitionState<float, kN>& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The direct real-arithmetic fold of a list of states (no merge tree).
PartitionState<Mp, kN> direct(const std::vector<F32State>& xs) {
  PartitionState<Mp, kN> r;
  Mp M = -Mp(INFINITY);
  bool any = false;
  for (const auto& x : xs) {
    if (x.s == 0) continue;
    if (!any || Mp(x.m) > M) M = Mp(x.m);
    any = true;
  }
  if (!any) return r;
  Mp s = 0;
  Mp num[kN] = {};
  for (const auto& x : xs) {
    if (x.s == 0) continue;
    const Mp w = Mp(x.s) * exp(Mp(x.m) - M);
    s += w;
    for (int i = 0; i < kN; ++i) num[i] += w * Mp(x.o[i]);
  }
  r.ms = LseState<Mp>{M, s};
  for (int i = 0; i < kN; ++i) r.o[i] = num[i] / s;
  return r;
}

}  // namespace

// merge_empty_identity: e . a = a . e = a, e . e = e; in MPFR and bitwise in fp32
// (the merge returns the other operand by selection, no arithmetic).
PAGEDATTN_PROPERTY(prop_merge_empty_identity, 2000) {
  const F32State a = *gen_state();
  const auto e = PartitionState<Mp, kN>::empty();
  const auto am = as<Mp>(a);
  RC_ASSERT(same(merged(e, am, MpExp()), am));
  RC_ASSERT(same(merged(am, e, MpExp()), am));
  RC_ASSERT(merged(e, e, MpExp()).ms.is_empty());
  const auto ef = PartitionState<float, kN>::empty();
  const auto af = as<float>(a);
  RC_ASSERT(bitwise(merged(ef, af, StdExp()), af));
  RC_ASSERT(bitwise(merged(af, ef, StdExp()), af));
  const auto ee = merged(ef, ef, StdExp());
  RC_ASSERT(bitwise(ee, ef));  // (-inf, 0, 0), not NaN
  const auto lse = LseState<float>::empty().merged(LseState<float>::empty());
  RC_ASSERT(lse.m == -INFINITY && lse.s == 0.f);
}

// merge_comm: a . b = b . a; in MPFR; bitwise in fp32 since IEEE + and * commute
// and the weights do not depend on the operand order. Signed zeros: in a case of three
// the non-empty operands' outputs are zeros, b's of the other sign than a's (random), so
// -0 meets +0 in both operand orders; gen_state alone draws
// such a pair in about 1% of cases, too few for the mutants' 25 (the clamp's `x <= lo` and
// `x >= hi` turned -0 into the merged value in one order only, and survived the whole
// catalogue's run). A zero meeting a zero follows IEEE addition's sign rule: w1 * o1 +
// w2 * o2 with positive weights is -0 only when both are -0, fused or not, and the clamp
// to [min, max] must leave it (a value inside the interval is never moved).
PAGEDATTN_PROPERTY(prop_merge_comm, 2000) {
  F32State a = *gen_state(), b = *gen_state();
  if (*rc::gen::inRange(0, 3) == 0) {
    RC_TAG("signed zeros meet");
    for (int i = 0; i < kN; ++i) {
      const float z = *rc::gen::element(0.f, -0.f);
      if (a.s != 0) a.o[i] = z;  // an empty state keeps its (-inf, 0, +0)
      if (b.s != 0) b.o[i] = -z;
    }
  }
  if (a.s != 0 && b.s != 0) {  // both non-empty: the outputs are combined, not selected
    const auto ab = merged(as<float>(a), as<float>(b), StdExp());
    for (int i = 0; i < kN; ++i) {
      if (a.o[i] != 0 || b.o[i] != 0) continue;
      RC_ASSERT(ab.o[i] == 0.f);
      RC_ASSERT(std::signbit(ab.o[i]) == (std::signbit(a.o[i]) && std::signbit(b.o[i])));
    }
  }
  RC_ASSERT(same(merged(as<Mp>(a), as<Mp>(b), MpExp()), merged(as<Mp>(b), as<Mp>(a), MpExp())));
  RC_ASSERT(bitwise(merged(as<float>(a), as<float>(b), StdExp()),
                    merged(as<float>(b), as<float>(a), StdExp())));
  const auto ab = as<float>(a).ms.merged(as<float>(b).ms),
             ba = as<float>(b).ms.merged(as<float>(a).ms);
  RC_ASSERT(std::memcmp(&ab, &ba, sizeof ab) == 0);
}

// A state whose max is -inf with a non-zero exp-sum (every logit -inf, which the kernels
// never write: finite logits saturate at -FLT_MAX, non-finite ones poison the state)
// weighs s * 0 = 0 at any reference max, as lse_state.h's weight_at states, so merging it
// into a non-empty state leaves that state's max and exp-sum bit for bit and its outputs
// as values (0 * o + o can turn -0 into +0); with s = NaN it weighs NaN and poisons the
// merge. The merge-law generators never draw it: weight_at returning s (its constant
// 0 -> 1) or s / 0 survived the whole catalogue's run.
PAGEDATTN_PROPERTY(prop_merge_all_logits_neg_inf_weighs_zero, 1000) {
  F32State a = *gen_state();
  RC_PRE(a.s != 0.f);
  F32State x = *gen_state();
  x.m = -INFINITY;
  x.s = *rc::gen::weightedOneOf<float>(
      {{4, rc::gen::map(rc::gen::inRange(1, 1 << 20), [](int k) { return k / 64.f; })},
       {1, rc::gen::just(NAN)}});
  const LseState<float> xs{x.m, x.s};
  const auto af = as<float>(a);
  for (float M : {a.m, -INFINITY, x.s}) {  // a's max, -inf, and any other (NaN included)
    const float w = xs.weight_at(M);
    RC_ASSERT((std::isnan(x.s) ? std::isnan(w) : w == 0.f));
  }
  for (const auto& r : {merged(af, as<float>(x), StdExp()), merged(as<float>(x), af, StdExp())}) {
    if (std::isnan(x.s)) {
      RC_ASSERT(std::isnan(r.ms.s));
      for (float o : r.o) RC_ASSERT(std::isnan(o));
      continue;
    }
    RC_ASSERT(std::memcmp(&r.ms, &af.ms, sizeof r.ms) == 0);
    for (int i = 0; i < kN; ++i) {
      if (std::isfinite(x.o[i]))
        RC_ASSERT(r.o[i] == a.o[i] || (std::isnan(r.o[i]) && std::isnan(a.o[i])));
    }
  }
}

// merge_assoc: (a . b) . c = a . (b . c) = the direct softmax-weighted fold; exactly in
// MPFR (all three agree to 2^-480), and in fp32 within the bound below.
PAGEDATTN_PROPERTY(prop_merge_assoc, 2000) {
  const F32State a = *gen_state(), b = *gen_state(), c = *gen_state();
  const auto L = merged(merged(as<Mp>(a), as<Mp>(b), MpExp()), as<Mp>(c), MpExp());
  const auto Rt = merged(as<Mp>(a), merged(as<Mp>(b), as<Mp>(c), MpExp()), MpExp());
  const auto X = direct({a, b, c});
  RC_ASSERT(same(L, Rt));
  RC_ASSERT(same(L, X));
  // The reduce's two-pass form (WeightedSum: M first, then sum w_p o_p / sum w_p) is the
  // same fold.
  if (!X.ms.is_empty()) {
    WeightedSum<Mp, kN> ws(X.ms.m);
    for (const auto& st : {as<Mp>(a), as<Mp>(b), as<Mp>(c)}) {
      const Mp w = ws.weight(st.ms, MpExp());
      if (!ws.add_weight(w)) continue;
      for (int i = 0; i < kN; ++i) ws.add_output(i, w, st.o[i]);
    }
    RC_ASSERT(overlap(ws.total, X.ms.s));
    for (int i = 0; i < kN; ++i) RC_ASSERT(overlap(ws.result(i), X.o[i]));
  }

  // fp32, both trees against the exact fold. Two merges; per merge each weight
  // s exp(m - M) errs by exp's <= 1 ulp (2u), the rounding of m - M (u |m - M|, and the
  // |m - M| along a path telescope to <= R, the spread of the non-empty maxima), the
  // product (u), and the sum into s (u): weights err by e_w <= 2 (4u) + 2 R u, so s by
  // e_w s, and o moves by <= 2 e_w max|o|; each merge's a1 o1 + a2 o2 (a = w / s) adds 3
  // roundings relative to max|o|: <= 8u for two. Factor 1.25: second-order terms (e_w < 1e-3 here).
  const double u = std::ldexp(1.0, -24);
  double lo = INFINITY, hi = -INFINITY, vmax = 0;
  for (const auto& x : {a, b, c}) {
    if (x.s == 0) continue;
    lo = std::min(lo, double(x.m));
    hi = std::max(hi, double(x.m));
    for (float o : x.o) vmax = std::max(vmax, std::fabs(double(o)));
  }
  const double R = hi > lo ? hi - lo : 0;
  const double e_w = 8 * u + 2 * R * u;
  for (const auto& f :
       {merged(merged(as<float>(a), as<float>(b), StdExp()), as<float>(c), StdExp()),
        merged(as<float>(a), merged(as<float>(b), as<float>(c), StdExp()), StdExp())}) {
    if (X.ms.is_empty()) {
      RC_ASSERT(f.ms.is_empty());
      continue;
    }
    RC_ASSERT(double(f.ms.m) == X.ms.m.convert_to<double>());
    const double s = X.ms.s.convert_to<double>();
    RC_ASSERT(std::fabs(f.ms.s - s) <= 1.25 * e_w * s);
    for (int i = 0; i < kN; ++i) {
      const double want = X.o[i].convert_to<double>();
      // Underflow: the products a1 o1, a2 o2 of two merges err by eta = 2^-150 each.
      const double bound = 1.25 * (2 * e_w + 8 * u) * vmax + 4 * std::ldexp(1.0, -150);
      const double r =
          bound > 0 ? std::fabs(f.o[i] - want) / bound : (f.o[i] == want ? 0 : INFINITY);
      observe(r, "o[" + std::to_string(i) + "]");
      if (!(r <= 1.0)) {
        RC_FAIL("o[" + std::to_string(i) + "] = " + std::to_string(f.o[i]) + ", exact " +
                std::to_string(want) + ", bound " + std::to_string(bound));
      }
    }
  }
}

}  // namespace pagedattn::prop
