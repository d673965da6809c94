// The partition state of split-KV attention as a value type: (m, s) is the max logit and
// the exp-sum relative to it; a full state also carries o, the partition's output
// normalized by s. Merging is a commutative monoid with the empty state (-inf, 0, 0) as
// identity (docs/NUMERICS.md), so any reduction tree gives the softmax-weighted sum. Usable on
// host and device; the exp is a policy so kernels can pass __expf. The kernels run these
// operations: the attention kernel weighs each token as the one-token state (x_i, 1) and
// finalizes its partition with `normalized`; the V2 reduce folds states with WeightedSum.
//
// NaN rule: an empty state is s == 0 exactly. Anything else with a NaN (or an infinite m
// or s) is a poisoned state and every operation carries the NaN on: its weight is NaN,
// so a merge or a fold that includes it has s = NaN and a NaN output. fmaxf ignores NaN,
// so the max cannot carry it; the sum does.
#pragma once
#include <cmath>
#include "pagedattn/host_device.h"

namespace pagedattn {

// exp used when the caller names none: the C library's on host, CUDA's expf on device.
struct StdExp {
  PAGEDATTN_HD float operator()(float x) const { return expf(x); }
  PAGEDATTN_HD double operator()(double x) const { return exp(x); }
};

// a * b + c with one rounding where the type has an fma (as the kernels compute it);
// other types (e.g. Boost.Multiprecision) get the expression.
PAGEDATTN_HD float lse_fma(float a, float b, float c) { return fmaf(a, b, c); }
PAGEDATTN_HD double lse_fma(double a, double b, double c) { return fma(a, b, c); }
template <class T>
PAGEDATTN_HD T lse_fma(const T& a, const T& b, const T& c) {
  return a * b + c;
}

template <class T>
struct LseState {
  T m;  // max logit seen; -inf when empty
  T s;  // sum of exp(x_i - m); 0 when empty

  PAGEDATTN_HD static LseState empty() { return {-static_cast<T>(INFINITY), T(0)}; }
  // Exactly s == 0: a NaN exp-sum is a poisoned state, not an empty one.
  PAGEDATTN_HD bool is_empty() const { return s == T(0); }

  // This state's exp-sum rescaled to a reference max M >= m: s * exp(m - M). An empty
  // state weighs 0 by selection (exp(-inf - -inf) is never evaluated, and a garbage
  // output is never multiplied by it). A state whose m is -inf but s is not 0 (every
  // logit -inf) weighs s * 0: 0, or NaN when s is NaN (every logit NaN: fmaxf skipped
  // them all). Any other NaN in m, s or M gives a NaN weight.
  template <class Exp = StdExp>
  PAGEDATTN_HD T weight_at(T M, Exp exp_fn = Exp()) const {
    if (is_empty()) return T(0);
    if (m == -static_cast<T>(INFINITY)) return s * T(0);
    return s * exp_fn(m - M);
  }

  // Weights (w_self, w_other) of the two operands in their merge, at M = max(m, other.m).
  template <class Exp = StdExp>
  PAGEDATTN_HD void merge_weights(const LseState& other, T* w_self, T* w_other,
                                  Exp exp_fn = Exp()) const {
    const T M = max_m(other);
    *w_self = weight_at(M, exp_fn);
    *w_other = other.weight_at(M, exp_fn);
  }

  // The (m, s) part of the merge; empty merged with empty stays empty.
  template <class Exp = StdExp>
  PAGEDATTN_HD LseState merged(const LseState& other, Exp exp_fn = Exp()) const {
    if (is_empty()) return other;
    if (other.is_empty()) return *this;
    T w1, w2;
    merge_weights(other, &w1, &w2, exp_fn);
    return {max_m(other), w1 + w2};
  }

  // An accumulated sum_i exp(x_i - m) v_i divided into this state's normalized output.
  // s >= 1 when m is the exact max (its own term is exp(0) = 1): no epsilon. Empty: 0.
  PAGEDATTN_HD T normalized(T acc) const { return is_empty() ? T(0) : acc / s; }

  // log(sum exp(x_i)); -inf when empty.
  PAGEDATTN_HD T lse() const { return is_empty() ? -static_cast<T>(INFINITY) : m + log(s); }

  PAGEDATTN_HD T max_m(const LseState& other) const { return m > other.m ? m : other.m; }
};

// The two-pass fold of many states, as the V2 reduce runs it: with M the exact max of every
// state's m (found first), the fold is sum_p w_p o_p / sum_p w_p, w_p = weight_at(M). By
// the monoid laws this equals any tree of `merge`s in real arithmetic; it needs no rescale
// of the running sums. N output elements per instance (a thread's share of the row).
template <class T, int N>
struct WeightedSum {
  T M;             // reference max: >= every m added
  T total = T(0);  // sum_p w_p; NaN once a poisoned state is added
  T acc[N] = {};   // sum_p w_p o_p[k]

  PAGEDATTN_HD explicit WeightedSum(T max_m) : M(max_m) {}

  template <class Exp = StdExp>
  PAGEDATTN_HD T weight(const LseState<T>& st, Exp exp_fn = Exp()) const {
    return st.weight_at(M, exp_fn);
  }
  // Adds a state's weight; returns false for weight 0, whose output must not be read
  // (an empty state's o may be garbage, and 0 * NaN is NaN).
  PAGEDATTN_HD bool add_weight(T w) {
    if (w == T(0)) return false;
    total += w;
    return true;
  }
  PAGEDATTN_HD void add_output(int k, T w, T o) { acc[k] = lse_fma(w, o, acc[k]); }
  // The folded state's normalized output element k: 0 when every state was empty.
  PAGEDATTN_HD T result(int k) const { return LseState<T>{M, total}.normalized(acc[k]); }
};

// A full partition state with an N-element output vector.
template <class T, int N>
struct PartitionState {
  LseState<T> ms = LseState<T>::empty();
  T o[N] = {};  // normalized output: sum_i exp(x_i - m) v_i / s; zero when empty

  PAGEDATTN_HD static PartitionState empty() { return PartitionState(); }

  // Merges `other` into this state (the online form of the fold). o = (w1 o1 + w2 o2) /
  // (w1 + w2) with no epsilon: the denominator is >= the larger operand's s (>= 1 for a
  // true max), or the result is empty. A poisoned operand makes s and o NaN.
  template <class Exp = StdExp>
  PAGEDATTN_HD void merge(const PartitionState& other, Exp exp_fn = Exp()) {
    if (other.ms.is_empty()) return;
    if (ms.is_empty()) {
      *this = other;
      return;
    }
    T w1, w2;
    ms.merge_weights(other.ms, &w1, &w2, exp_fn);
    const T s = w1 + w2;
    // Normalized weights first: each term is at most max|o|, so outputs near the format's
    // maximum do not overflow (w1 o1 + w2 o2 can: property_tests/README.md). The exact
    // result is a convex combination, inside [min(o1, o2), max(o1, o2)]: clamping to that
    // interval only moves a rounded result closer, and keeps a1 + a2 = 1 + u from
    // overflowing at the format's maximum. Comparisons, not fmin/fmax, so NaN stays NaN.
    const T a1 = w1 / s, a2 = w2 / s;
    for (int i = 0; i < N; ++i) {
      const T lo = o[i] < other.o[i] ? o[i] : other.o[i];
      const T hi = o[i] < other.o[i] ? other.o[i] : o[i];
      const T x = a1 * o[i] + a2 * other.o[i];
      o[i] = x < lo ? lo : (x > hi ? hi : x);
    }
    ms = {ms.max_m(other.ms), s};
  }
};

}  // namespace pagedattn
