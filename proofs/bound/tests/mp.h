// An MPFR number for the bound's tests: every operation at kPrec bits rounded upward
// (MPFR_RNDU), the table's functions (formula.h) over it. It is the high-precision
// evaluation the double-interval bound is checked against: independent arithmetic (MPFR's
// correctly rounded operations, mpfr_exp, mpfr_pow_ui), the same table.
#pragma once
#include <mpfr.h>

#include <cmath>
#include <string>

namespace pagedattn::bound::test {

constexpr mpfr_prec_t kPrec = 320;
// How far below the real value an upward-rounded evaluation at kPrec bits can land: each
// operation's result is at least its exact value at its (rounded) inputs, but a
// subtraction or division of a rounded-up operand moves down by at most the operand's
// relative error (2^-319 per operation) times its condition, at most 2 for every
// subtraction and divisor of the table (1 - S_T, 1 - a_D, 1 - alpha: each operand is
// below 1/2), over fewer than 1000 operations on any path: below 2^-300 relative. Tests
// accept an evaluation that is at least value * (1 - 2^-280).
constexpr double kMpSlack = 0x1p-280;

class Mp {
 public:
  Mp() { mpfr_init2(v_, kPrec), mpfr_set_zero(v_, 1); }
  Mp(double x) { mpfr_init2(v_, kPrec), mpfr_set_d(v_, x, MPFR_RNDN); }  // NOLINT: exact
  Mp(int x) { mpfr_init2(v_, kPrec), mpfr_set_si(v_, x, MPFR_RNDN); }    // NOLINT: exact
  Mp(const Mp& o) { mpfr_init2(v_, kPrec), mpfr_set(v_, o.v_, MPFR_RNDN); }
  Mp& operator=(const Mp& o) {
    mpfr_set(v_, o.v_, MPFR_RNDN);
    return *this;
  }
  ~Mp() { mpfr_clear(v_); }
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }
  double to_double(mpfr_rnd_t r = MPFR_RNDN) const { return mpfr_get_d(v_, r); }

 private:
  mpfr_t v_;
};

inline Mp operator+(const Mp& a, const Mp& b) {
  Mp r;
  mpfr_add(r.get(), a.get(), b.get(), MPFR_RNDU);
  return r;
}
inline Mp operator-(const Mp& a, const Mp& b) {
  Mp r;
  mpfr_sub(r.get(), a.get(), b.get(), MPFR_RNDU);
  return r;
}
inline Mp operator-(const Mp& a) {
  Mp r;
  mpfr_neg(r.get(), a.get(), MPFR_RNDU);
  return r;
}
inline Mp operator*(const Mp& a, const Mp& b) {
  Mp r;
  mpfr_mul(r.get(), a.get(), b.get(), MPFR_RNDU);
  return r;
}
inline Mp operator/(const Mp& a, const Mp& b) {
  Mp r;
  mpfr_div(r.get(), a.get(), b.get(), MPFR_RNDU);
  return r;
}
inline bool operator<(const Mp& a, const Mp& b) {
  return mpfr_less_p(a.get(), b.get());
}
inline Mp exp(const Mp& a) {
  Mp r;
  mpfr_exp(r.get(), a.get(), MPFR_RNDU);
  return r;
}
// (1 + u)^k - 1 with k an integer (the table's geometry).
inline Mp grow(const Mp& u, const Mp& k) {
  Mp r;
  mpfr_add_ui(r.get(), u.get(), 1, MPFR_RNDU);
  mpfr_pow_ui(r.get(), r.get(), static_cast<unsigned long>(k.to_double()), MPFR_RNDU);
  mpfr_sub_ui(r.get(), r.get(), 1, MPFR_RNDU);
  return r;
}
inline Mp comb(const Mp& a, const Mp& b) {
  return a + b + a * b;
}
inline Mp max(const Mp& a, const Mp& b) {
  return a < b ? b : a;
}
inline Mp min(const Mp& a, const Mp& b) {
  return b < a ? b : a;
}
inline Mp sel(const Mp& flag, const Mp& a, const Mp& b) {
  return mpfr_zero_p(flag.get()) ? b : a;
}
inline Mp step(const Mp& x) {
  return Mp(mpfr_sgn(x.get()) > 0 ? 1 : 0);
}
inline Mp ceil_div(const Mp& a, const Mp& b) {
  Mp r;
  mpfr_div(r.get(), a.get(), b.get(), MPFR_RNDU);
  mpfr_ceil(r.get(), r.get());
  return r;
}
inline Mp ceil_log2(const Mp& x) {
  int k = 0;
  while (std::ldexp(1.0, k) < x.to_double(MPFR_RNDU)) ++k;
  return Mp(k);
}
inline Mp abs(const Mp& a) {
  return a < Mp(0) ? -a : a;
}
inline Mp le(const Mp& a, const Mp& b) {
  return Mp(b < a ? 0 : 1);
}
inline bool holds_lt(const Mp& a, const Mp& b) {
  return a < b;
}
inline bool holds_le(const Mp& a, const Mp& b) {
  return !(b < a);
}

}  // namespace pagedattn::bound::test
