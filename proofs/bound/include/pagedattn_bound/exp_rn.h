// exp in double with a proven relative error, so the bound never trusts libm's exp.
//
// exp_rn(t), for kExpMinArg <= t <= kExpMaxArg, returns e^t (1 + theta) with
// |theta| <= kExpRelErr = 2^-47 (round to nearest, the default mode; u = 2^-53 below).
// Proof:
//   1. k = the integer nearest fl(t / ln2) (added to and taken from 1.5 * 2^52, exact in
//      round to nearest for |k| < 2^51). |fl(t inv_ln2) - t/ln2| <= 1024 * 3u < 4e-13, so
//      r = t - k ln2 has |r| <= ln2/2 + 3e-13 < 0.346574; -1010 <= k <= 1023.
//   2. C1 = ln2 to 29 significant bits: k C1 is exact (<= 39 bits); t - k C1 is exact by
//      Sterbenz's lemma (k = 0, or |t - k C1| <= 0.3466 <= |k C1| / 2 with the same sign).
//      C2 = fl(ln2 - C1), |C2| < 4.3e-11, |k C2| < 4.3e-8; fl(k C2) and C2 each err by at
//      most u |k C2|, the last subtraction by u |r_hat|: |r_hat - r| <= u (0.3466 + 9e-8)
//      < 3.9e-17, and |r_hat| < 0.3466.
//   3. Taylor degree 13 by Horner with the doubles nearest 1/j!: Horner's error (Higham,
//      Accuracy and Stability, 2nd ed., eq. 5.3) is gamma_26 sum_j c_j |r|^j, the
//      coefficients' own rounding u sum_j |r|^j / j!, truncation |r|^14/14! e^|r|: in all
//      at most (gamma_28 + 4.2e-18) e^|r| with gamma_28 = 28u/(1 - 28u) < 3.11e-15.
//      Relative to e^r_hat >= e^-|r|: (3.11e-15 + 4.2e-18) e^0.6932 < 6.23e-15.
//   4. e^r_hat = e^r (1 + e') with |e'| < 3.9e-17 (step 2). The product of 2^k, built
//      from its bits (-1010 <= k <= 1023), is exact: the result, at least
//      0.707 * 2^-1010, is normal, and at most 1.415 * 2^1023 < DBL_MAX.
//   Total: (1 + 6.23e-15)(1 + 3.9e-17) - 1 < 6.27e-15 < 2^-47 = 7.1e-15.
// Below kExpMinArg the result underflows the argument reduction's range: callers use
// kExpBelowMin >= e^t there (e^-700 = 2^-1009.89). Checked against MPFR in
// proofs/bound/tests/test_exp_rn.cpp.
#pragma once
#include <cstdint>
#include <cstring>

namespace pagedattn::bound {

constexpr double kExpRelErr = 0x1p-47;
constexpr double kExpMinArg = -700;
constexpr double kExpMaxArg = 709;
constexpr double kExpBelowMin = 0x1p-1009;  // > e^-700: bounds e^t for every t < -700

inline double exp_rn(double t) {
  constexpr double inv_ln2 = 0x1.71547652b82fep0;
  constexpr double c1 = 0x1.62e42ffp-1;          // ln2 to 29 bits
  constexpr double c2 = -0x1.718432a1b0e26p-35;  // fl(ln2 - c1)
  constexpr double shifter = 0x1.8p52;
  const double kd = (t * inv_ln2 + shifter) - shifter;
  const double r = (t - kd * c1) - kd * c2;
  double p = 0x1.6124613a86d09p-33;  // 1/13!
  p = p * r + 0x1.1eed8eff8d898p-29;
  p = p * r + 0x1.ae64567f544e4p-26;
  p = p * r + 0x1.27e4fb7789f5cp-22;
  p = p * r + 0x1.71de3a556c734p-19;
  p = p * r + 0x1.a01a01a01a01ap-16;
  p = p * r + 0x1.a01a01a01a01ap-13;
  p = p * r + 0x1.6c16c16c16c17p-10;
  p = p * r + 0x1.1111111111111p-7;
  p = p * r + 0x1.5555555555555p-5;
  p = p * r + 0x1.5555555555555p-3;
  p = p * r + 0.5;
  p = p * r + 1;
  p = p * r + 1;
  const std::uint64_t bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(kd) + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace pagedattn::bound
