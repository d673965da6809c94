// The partition state of split-KV attention as a value type: (m, s) is the running max
// logit and the exp-sum relative to it; a full state also carries o, the partition's
// output normalized by s. Merging is a commutative monoid with the empty state
// (-inf, 0, 0) as identity (NUMERICS.md), so any reduction tree gives the softmax-weighted
// sum. Usable on host and device; the exp is a policy so kernels can pass __expf.
#pragma once
#include <cmath>
#include "pagedattn/host_device.h"

namespace pagedattn {

// exp used when the caller names none: the C library's on host, CUDA's expf on device.
struct StdExp {
  PAGEDATTN_HD float operator()(float x) const { return expf(x); }
  PAGEDATTN_HD double operator()(double x) const { return exp(x); }
};

template <class T>
struct LseState {
  T m;  // max logit seen; -inf when empty
  T s;  // sum of exp(x_i - m); 0 when empty

  PAGEDATTN_HD static LseState empty() { return {-static_cast<T>(INFINITY), T(0)}; }
  PAGEDATTN_HD bool is_empty() const { return !(s > T(0)); }

  // This state's exp-sum rescaled to a reference max M >= m: s * exp(m - M). An empty
  // state weighs 0 by selection, so exp(-inf - -inf) is never evaluated.
  template <class Exp = StdExp>
  PAGEDATTN_HD T weight_at(T M, Exp exp_fn = Exp()) const {
    return is_empty() || !(m > -static_cast<T>(INFINITY)) ? T(0) : s * exp_fn(m - M);
  }

  // Weights (w_self, w_other) of the two operands in their merge, at M = max(m, other.m).
  template <class Exp = StdExp>
  PAGEDATTN_HD void merge_weights(const LseState& other, T* w_self, T* w_other,
                                  Exp exp_fn = Exp()) const {
    const T M = m > other.m ? m : other.m;
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
    return {m > other.m ? m : other.m, w1 + w2};
  }

  // log(sum exp(x_i)); -inf when empty.
  PAGEDATTN_HD T lse() const { return is_empty() ? -static_cast<T>(INFINITY) : m + log(s); }
};

// A full partition state with an N-element output vector.
template <class T, int N>
struct PartitionState {
  LseState<T> ms = LseState<T>::empty();
  T o[N] = {};  // normalized output: sum_i exp(x_i - m) v_i / s; zero when empty

  PAGEDATTN_HD static PartitionState empty() { return PartitionState(); }

  // Merges `other` into this state. o = (w1 o1 + w2 o2) / (w1 + w2) with no epsilon: the
  // denominator is >= the larger operand's s (>= 1 for a true max), or the result is empty.
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
    ms = {ms.m > other.ms.m ? ms.m : other.ms.m, s};
  }
};

}  // namespace pagedattn
