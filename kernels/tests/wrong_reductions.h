// Host implementations of V2 reductions known to be wrong (docs/NUMERICS.md, "Reductions
// known to be wrong"; issue 7 item 3a), beside the right one, for tests that must show they can
// fail: a test runs a wrong variant once on its own states and asserts that its check
// rejects the result. Each takes one row's partition states (m_p, s_p, o_p) as the V2
// kernel writes them (o_p normalized by s_p; an empty state is (-inf, 0, anything)) and
// returns the row's output. Arithmetic is double so the wrong variants differ from the
// right one by their mistake, not by rounding. Header-only; no kernel code is shared.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace pagedattn::test::wrong {

// One row of partition states: P states, each with a head_size-long o.
struct States {
  int head_size = 0;
  std::vector<double> m, s;  // [P]
  std::vector<double> o;     // [P][head_size]
  int parts() const { return static_cast<int>(m.size()); }
  double o_at(int p, int d) const { return o[static_cast<std::size_t>(p) * head_size + d]; }
};

// Reads one row from the kernels' buffer layout ([row][P] states, [row][P][head_size] o).
template <class F>
States row_states(const F* max_logits, const F* exp_sums, const F* tmp_out, int num_parts,
                  int head_size) {
  States st;
  st.head_size = head_size;
  for (int p = 0; p < num_parts; ++p) {
    st.m.push_back(max_logits[p]);
    st.s.push_back(exp_sums[p]);
    for (int d = 0; d < head_size; ++d) {
      st.o.push_back(tmp_out[static_cast<std::size_t>(p) * head_size + d]);
    }
  }
  return st;
}

enum class Reduction {
  right,                  // sum_p w_p o_p / sum_p w_p, w_p = s_p exp(m_p - M), M the exact max
  exp_sum_twice,          // weights s_p^2 exp(m_p - M): o_p treated as unnormalized
  no_rescale,             // w_p = s_p: exp(m_p - M) forgotten
  epsilon_denominator,    // / (sum_p w_p + 1e-6), vLLM's epsilon, a bias
  partials_rounded,       // o_p rounded to the output dtype (fp16) before the merge
  empty_merge_nan,        // empty states weighed by 0 * exp(-inf - M): NaN with M = -inf
  partial_max,            // M stale: partition 0's max only; weights in fp32 as a kernel
                          // computes them, so exp(m_p - M) overflows past a gap of 88
  largest_max_partition,  // the o_p of the partition with the largest m_p
};

inline const std::vector<Reduction>& all_wrong() {
  static const std::vector<Reduction> v = {
      Reduction::exp_sum_twice,        Reduction::no_rescale,      Reduction::epsilon_denominator,
      Reduction::partials_rounded,     Reduction::empty_merge_nan, Reduction::partial_max,
      Reduction::largest_max_partition};
  return v;
}

inline std::string name(Reduction r) {
  switch (r) {
    case Reduction::right:
      return "right";
    case Reduction::exp_sum_twice:
      return "exp_sum_twice";
    case Reduction::no_rescale:
      return "no_rescale";
    case Reduction::epsilon_denominator:
      return "epsilon_denominator";
    case Reduction::partials_rounded:
      return "partials_rounded";
    case Reduction::empty_merge_nan:
      return "empty_merge_nan";
    case Reduction::partial_max:
      return "partial_max";
    case Reduction::largest_max_partition:
      return "largest_max_partition";
  }
  return "?";
}

// Round to nearest binary16 (ties to even), overflow to inf, in double: the rounding the
// partials_in_output_dtype variant applies to o_p.
inline double round_to_f16(double x) {
  if (!std::isfinite(x) || x == 0) return x;
  const double a = std::fabs(x);
  if (a >= 65520.0) return std::copysign(INFINITY, x);
  int e;
  std::frexp(a, &e);                    // a = f 2^e, f in [0.5, 1)
  const int q = std::max(e - 11, -24);  // quantum exponent: 11 significant bits, min 2^-24
  return std::copysign(std::nearbyint(std::ldexp(a, -q)) * std::ldexp(1.0, q), x);
}

// The reduction `r` of one row of states. Empty states (s == 0) are skipped by every
// variant except empty_merge_nan, whose mistake is about them.
inline std::vector<double> reduce(Reduction r, const States& st) {
  const int P = st.parts(), D = st.head_size;
  std::vector<double> out(D, 0.0);
  if (P == 0) return out;
  auto empty = [&](int p) { return st.s[p] == 0; };
  if (r == Reduction::largest_max_partition) {
    int best = 0;
    for (int p = 1; p < P; ++p) {
      if (st.m[p] > st.m[best]) best = p;
    }
    for (int d = 0; d < D; ++d) out[d] = empty(best) ? 0 : st.o_at(best, d);
    return out;
  }
  const int max_over = r == Reduction::partial_max ? 1 : P;
  double M = -INFINITY;
  for (int p = 0; p < max_over; ++p) M = std::max(M, st.m[p]);
  std::vector<double> w(P, 0.0);
  double total = 0;
  for (int p = 0; p < P; ++p) {
    if (empty(p) && r != Reduction::empty_merge_nan) continue;
    switch (r) {
      case Reduction::exp_sum_twice:
        w[p] = st.s[p] * st.s[p] * std::exp(st.m[p] - M);
        break;
      case Reduction::no_rescale:
        w[p] = st.s[p];
        break;
      case Reduction::partial_max:
        w[p] = static_cast<float>(st.s[p]) * std::exp(static_cast<float>(st.m[p] - M));
        break;
      // -inf - -inf = NaN when every state before is empty too (M = -inf), and 0 * NaN = NaN.
      case Reduction::empty_merge_nan:
        w[p] = st.s[p] * std::exp(st.m[p] - M);
        break;
      default:
        w[p] = st.s[p] * std::exp(st.m[p] - M);
        break;
    }
    total += w[p];
  }
  const double den = r == Reduction::epsilon_denominator ? total + 1e-6 : total;
  for (int d = 0; d < D; ++d) {
    double acc = 0;
    for (int p = 0; p < P; ++p) {
      if (w[p] == 0 && r != Reduction::empty_merge_nan) continue;
      const double o =
          r == Reduction::partials_rounded ? round_to_f16(st.o_at(p, d)) : st.o_at(p, d);
      acc += w[p] * o;
    }
    out[d] = total == 0 && r != Reduction::empty_merge_nan ? 0.0 : acc / den;
  }
  return out;
}

}  // namespace pagedattn::test::wrong
