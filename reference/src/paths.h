// The two evaluation paths of the reference; internal.
#pragma once

#include <cstdint>
#include <vector>

#include "pagedattn_ref/formats.h"
#include "view.h"

namespace pagedattn::ref::detail {

// Fast path for all query heads of KV head g of sequence s (they share each decoded K/V row).
// y[j*hs + d] approximates the exact output of head g*group + j with |y - exact| <= err (err is
// +inf where the bound derivation's preconditions fail); nan[j] marks non-finite inputs.
struct FastGroup {
  std::vector<double> y, err;
  std::vector<uint8_t> nan;
};
FastGroup fast_group(const View& v, int s, int g);

// MPFR path for query head h of sequence s over tokens [t0, t1) (t0 < t1 <= seq_len). For each
// dimension in dims: the exact result's rounding to `out` (when out_fmt is given) and to the
// nearest double, certified, raising the precision from `prec` as needed.
struct MpElem {
  uint32_t bits = 0;
  double nearest = 0;
  unsigned mp_bits = 0;
  bool exact_rational = false;
};
struct MpHead {
  bool nan = false;
  double m_nearest = 0, s_nearest = 0;  // partition max and exp-sum (nearest doubles)
  std::vector<MpElem> elems;            // parallel to dims
};
MpHead mp_head(const View& v, int s, int h, int t0, int t1, const std::vector<int>& dims,
               const Format* out_fmt, DType out, unsigned prec);

}  // namespace pagedattn::ref::detail
