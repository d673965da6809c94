// The MPFR path. Logits are computed exactly (adaptive precision: they are dyadic rationals), so
// the only approximations are exp and the softmax-weighted sums at precision p, each correctly
// rounded (MPFR), with the bound derived below evaluated in MPFR with upward rounding.
//
// Notation: u = 2^-p; N tokens; W_i = exp(x_i - m) exact; w_i = RN_p(W_i), so |w_i - W_i| <= u w_i
// (round to nearest: error <= half an ulp <= u |result|). MPFR's exponent range is wide enough
// that exp(d) does not underflow for d >= -2^20; tokens with d < -2^20 get w_i = 0 and
// W_i < 2^-1400000 ("tiny"). gamma_N = N u / (1 - N u) (Higham, ch. 3-4).
//   S_hat = recursive sum of w_i:  |S_hat - sum w| <= gamma_N sum w, sum w <= S_hat / (1-gamma_N)
//   E_S   = (gamma_N + u) Sw_up + Z tiny                      >= |S_hat - sum W|
//   N_hat = recursive sum of RN(w_i v_i): each product within u of itself, the sum within
//           gamma_N sum |RN(w v)| <= gamma_N (1+u) T, T = sum w |v|; the weights add u T.
//           T_up = (1+u) RU(sum |RN(w_i v_i)|) >= T (|x| <= (1+u) |RN(x)|): the products
//           N_hat adds, not a second, upward-rounded product per term:
//   E_N   = (gamma_N (1+u) + 2u + u^2) T_up + Z tiny 2^145    >= |N_hat - sum W v|
//           (|v| < 2^145 for every finite dequantized value)
//   y_hat = RN(N_hat / S_hat); with y = sum W v / sum W:
//   |y_hat - y| <= u |y_hat| + (E_N + Y E_S) / S_hat,  Y = (|N_hat| + E_N) / (S_hat - E_S) >= |y|
// (expand N_hat/S_hat - Nx/Sx = (N_hat - Nx)/S_hat - y (S_hat - Sx)/S_hat and bound |y| by
// solving |y| <= |N_hat|/S_hat + (E_N + |y| E_S)/S_hat).
// A result is certified when rounding y_hat - e (rounded down) and y_hat + e (rounded up) to the
// target gives the same bits: rounding is monotone, so every value between rounds alike.
// When no precision certifies, the exact result may be rational: by Lindemann-Weierstrass,
// sum_i e^{x_i} (v_i - y) = 0 for rational y and rational x_i holds only if, within each group
// of equal logits, sum (v_i - y) = 0. So y is rational iff all groups have the same mean of v,
// and then y is that mean, rounded exactly (ties to even) here.
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "paths.h"

namespace pagedattn::ref::detail {
namespace {

struct Mp {
  mpfr_t v;
  explicit Mp(mpfr_prec_t prec = 64) { mpfr_init2(v, prec); }
  Mp(const Mp&) = delete;
  Mp(Mp&& o) noexcept {
    mpfr_init2(v, 2);
    mpfr_swap(v, o.v);
  }
  ~Mp() { mpfr_clear(v); }
  operator mpfr_ptr() { return v; }
  operator mpfr_srcptr() const { return v; }
};

[[noreturn]] void inexact(const char* where) {
  throw std::logic_error(std::string("pagedattn reference: an exact MPFR step was inexact in ") +
                         where);
}

// rop = exact sum of doubles (every term a double; precision chosen to hold the exact sum).
void exact_sum(mpfr_t rop, const double* t, int n, std::vector<Mp>& tmp) {
  int emax = INT32_MIN, lsb = INT32_MAX, nz = 0;
  for (int i = 0; i < n; ++i) {
    if (t[i] == 0) continue;
    int e;
    std::frexp(t[i], &e);  // |t| < 2^e, lsb >= 2^(e-53) (also for subnormals)
    emax = std::max(emax, e);
    lsb = std::min(lsb, e - 53);
    ++nz;
  }
  if (nz == 0) {
    mpfr_set_prec(rop, 2);
    mpfr_set_zero(rop, 1);
    return;
  }
  int carry = 1;
  while ((1 << carry) < n) ++carry;
  mpfr_set_prec(rop, emax + carry + 1 - lsb);
  if (int(tmp.size()) < n) tmp.resize(n);
  std::vector<mpfr_ptr> ptrs(n);
  for (int i = 0; i < n; ++i) {
    mpfr_set_prec(tmp[i], 53);
    mpfr_set_d(tmp[i], t[i], MPFR_RNDN);  // exact
    ptrs[i] = tmp[i];
  }
  if (mpfr_sum(rop, ptrs.data(), n, MPFR_RNDN) != 0) inexact("exact_sum");
}

// rop = a + b or a - b exactly (rop distinct from a, b).
void exact_addsub(mpfr_t rop, mpfr_srcptr a, mpfr_srcptr b, bool sub) {
  if (mpfr_zero_p(b)) {
    mpfr_set_prec(rop, mpfr_get_prec(a));
    mpfr_set(rop, a, MPFR_RNDN);
    return;
  }
  if (mpfr_zero_p(a)) {
    mpfr_set_prec(rop, mpfr_get_prec(b));
    sub ? mpfr_neg(rop, b, MPFR_RNDN) : mpfr_set(rop, b, MPFR_RNDN);
    return;
  }
  mpfr_exp_t ea = mpfr_get_exp(a), eb = mpfr_get_exp(b);
  mpfr_exp_t la = ea - mpfr_exp_t(mpfr_min_prec(a)), lb = eb - mpfr_exp_t(mpfr_min_prec(b));
  mpfr_set_prec(rop, mpfr_prec_t(std::max(ea, eb) + 2 - std::min(la, lb)));
  int t = sub ? mpfr_sub(rop, a, b, MPFR_RNDN) : mpfr_add(rop, a, b, MPFR_RNDN);
  if (t != 0) inexact("exact_addsub");
}

// Round an exactly known x to format f, ties to even, overflow to inf; the result as a double.
double round_exact(mpfr_srcptr x, const Format& f) {
  if (mpfr_nan_p(x)) return NAN;
  if (mpfr_zero_p(x)) return mpfr_signbit(x) ? -0.0 : 0.0;
  if (mpfr_inf_p(x)) return mpfr_signbit(x) ? -INFINITY : INFINITY;
  mpfr_exp_t e = mpfr_get_exp(x);  // 2^(e-1) <= |x| < 2^e
  bool neg = mpfr_signbit(x);
  if (e > 1100) return neg ? -INFINITY : INFINITY;
  mpfr_exp_t qe = std::max<mpfr_exp_t>(e - f.P, f.qmin);
  if (e < qe - 1) return neg ? -0.0 : 0.0;  // |x| < quantum / 4: rounds to zero
  Mp t(std::max<mpfr_prec_t>(mpfr_get_prec(x), 64));
  mpfr_abs(t, x, MPFR_RNDN);
  mpfr_mul_2si(t, t, -qe, MPFR_RNDN);  // exact
  mpfr_roundeven(t, t);                // integer <= 2^P, exact in t
  double mag = std::ldexp(mpfr_get_d(t, MPFR_RNDN), int(qe));
  if (mag > f.maxval) mag = INFINITY;
  return neg ? -mag : mag;
}

// Is x exactly a midpoint between two consecutive values of f?
bool is_midpoint(mpfr_srcptr x, const Format& f) {
  if (!mpfr_number_p(x) || mpfr_zero_p(x)) return false;
  mpfr_exp_t e = mpfr_get_exp(x);
  mpfr_exp_t qe = std::max<mpfr_exp_t>(e - f.P, f.qmin);
  Mp t(mpfr_get_prec(x) + 2);
  mpfr_mul_2si(t, x, 1 - qe, MPFR_RNDN);  // exact: 2 x / quantum
  if (!mpfr_integer_p(t)) return false;
  mpfr_div_2ui(t, t, 1, MPFR_RNDN);
  return !mpfr_integer_p(t);
}

uint32_t to_bits(double r, const Format* f, DType out) {
  return f ? encode_bits(r, out) : 0;
}

// Same bits for both ends of [y - e, y + e]?
bool certify(mpfr_srcptr y, mpfr_srcptr e, const Format& f, double* r) {
  mpfr_prec_t pr = mpfr_get_prec(y) + 8;
  Mp lo(pr), hi(pr);
  mpfr_sub(lo, y, e, MPFR_RNDD);
  mpfr_add(hi, y, e, MPFR_RNDU);
  double a = round_exact(lo, f), b = round_exact(hi, f);
  if (a != b || std::signbit(a) != std::signbit(b)) return false;
  *r = a;
  return true;
}

// rop = RN(w v), what mpfr_mul_d gives, without its temporary 53-bit operand: v = m 2^e with
// an integer |m| < 2^53, and RN(w m) scaled by 2^e is RN(w m 2^e), the scaling exact within
// MPFR's exponent range (here |w v| is within 2^-1600000 .. 2^145: w <= 1, |v| < 2^145 as
// above). v is finite; a zero keeps mpfr_mul_d for the sign of the zero product.
void mul_exact_double(mpfr_t rop, mpfr_srcptr w, double v) {
  if (v == 0) {
    mpfr_mul_d(rop, w, v, MPFR_RNDN);
    return;
  }
  int e = 0;
  const double f = std::frexp(v, &e);  // v = f 2^e, 1/2 <= |f| < 1
  mpfr_mul_si(rop, w, static_cast<long>(std::ldexp(f, 53)), MPFR_RNDN);
  mpfr_mul_2si(rop, rop, static_cast<long>(e) - 53, MPFR_RNDN);
}

// Bound arithmetic, rounding upward (64 bits is ample for bounds).
struct Up {
  static void gamma(mpfr_t r, long n, mpfr_prec_t p) {  // n 2^-p / (1 - n 2^-p)
    Mp num, den;
    mpfr_set_si_2exp(num, n, -p, MPFR_RNDU);
    mpfr_ui_sub(den, 1, num, MPFR_RNDD);
    mpfr_div(r, num, den, MPFR_RNDU);
  }
};

}  // namespace

MpHead mp_head(const View& v, int s, int h, int t0, int t1, const std::vector<int>& dims,
               const Format* out_fmt, DType out, unsigned prec0) {
  const int hs = v.p.head_size, L = v.seq_len(s), g = v.kv_head(h), n = t1 - t0;
  MpHead res;
  res.elems.resize(dims.size());
  std::vector<double> q(hs), k(hs), prod(hs), row(hs);
  v.query(s, h, q.data());
  bool finite = std::all_of(q.begin(), q.end(), [](double a) { return std::isfinite(a); }) &&
                std::isfinite(v.slope(h));

  // Exact logits x_i = scale * dot + slope * (i - L + 1).
  std::vector<Mp> x;
  x.reserve(n);
  std::vector<Mp> tmp;
  Mp dot(64), t1m(64), t2m(64);
  const double scale = v.p.scale, slope = v.slope(h);
  for (int i = t0; i < t1 && finite; ++i) {
    v.key(s, g, i, k.data());
    for (int d = 0; d < hs; ++d) {
      prod[d] = q[d] * k[d];  // exact: at most 24 + 28 significant bits, no under/overflow
      finite = finite && std::isfinite(k[d]);
    }
    exact_sum(dot, prod.data(), hs, tmp);
    mpfr_set_prec(t1m, mpfr_get_prec(dot) + 24);
    if (mpfr_mul_d(t1m, dot, scale, MPFR_RNDN) != 0) inexact("scale*dot");
    mpfr_set_prec(t2m, 64);
    mpfr_set_si(t2m, long(i) - L + 1, MPFR_RNDN);
    if (mpfr_mul_d(t2m, t2m, slope, MPFR_RNDN) != 0) inexact("alibi");
    x.emplace_back(2);
    exact_addsub(x.back(), t1m, t2m, false);
  }
  // Values: the rows are needed repeatedly; keep the requested dims as doubles.
  const int nd = int(dims.size());
  std::vector<double> V(size_t(n) * nd);
  for (int i = t0; i < t1 && finite; ++i) {
    v.value(s, g, i, row.data());
    for (int d = 0; d < hs; ++d) finite = finite && std::isfinite(row[d]);
    for (int j = 0; j < nd; ++j) V[size_t(i - t0) * nd + j] = row[dims[j]];
  }
  if (!finite) {
    res.nan = true;
    res.m_nearest = res.s_nearest = NAN;
    for (auto& e : res.elems) e.bits = out_fmt ? nan_bits(out) : 0, e.nearest = NAN;
    return res;
  }
  int im = 0;
  for (int i = 1; i < n; ++i)
    if (mpfr_cmp(x[i], x[im]) > 0) im = i;
  res.m_nearest = round_exact(x[im], kDouble);
  std::vector<Mp> dlt;
  dlt.reserve(n);
  for (int i = 0; i < n; ++i) {
    dlt.emplace_back(2);
    exact_addsub(dlt.back(), x[i], x[im], true);
  }

  std::vector<uint8_t> need_out(nd, out_fmt != nullptr), need_dbl(nd, 1);
  bool need_s = true;
  Mp tiny;
  mpfr_set_si_2exp(tiny, 1, -1400000, MPFR_RNDU);
  for (mpfr_prec_t p = std::max(64u, prec0);; p *= 4) {
    if (p > 65536)
      throw std::runtime_error("pagedattn reference: no precision up to 65536 bits certifies");
    std::vector<Mp> w;
    w.reserve(n);
    long Z = 0;
    Mp S(p), gam, u, Sw, ES, a, b;
    mpfr_set_zero(S, 1);
    for (int i = 0; i < n; ++i) {
      w.emplace_back(p);
      if (mpfr_cmp_si(dlt[i], -(1L << 20)) < 0) {
        mpfr_set_zero(w.back(), 1);
        ++Z;
      } else {
        mpfr_exp(w.back(), dlt[i], MPFR_RNDN);
      }
      mpfr_add(S, S, w.back(), MPFR_RNDN);
    }
    Up::gamma(gam, n, p);
    mpfr_set_si_2exp(u, 1, -long(p), MPFR_RNDU);
    mpfr_ui_sub(a, 1, gam, MPFR_RNDD);
    mpfr_div(Sw, S, a, MPFR_RNDU);  // Sw >= sum w
    mpfr_add(a, gam, u, MPFR_RNDU);
    mpfr_mul(ES, a, Sw, MPFR_RNDU);
    mpfr_mul_si(b, tiny, Z, MPFR_RNDU);
    mpfr_add(ES, ES, b, MPFR_RNDU);  // E_S
    if (need_s) {
      double r;
      if (certify(S, ES, kDouble, &r)) res.s_nearest = r, need_s = false;
    }
    // coefficient of T_up in E_N: gamma (1+u) + 2u + u^2 <= gamma (1 + u) + 3u
    Mp cN;
    mpfr_add_ui(a, u, 1, MPFR_RNDU);
    mpfr_mul(cN, gam, a, MPFR_RNDU);
    mpfr_mul_ui(a, u, 3, MPFR_RNDU);
    mpfr_add(cN, cN, a, MPFR_RNDU);
    Mp tinyv;
    mpfr_mul_2si(tinyv, b, 145, MPFR_RNDU);
    for (int j = 0; j < nd; ++j) {
      if (!need_out[j] && !need_dbl[j]) continue;
      Mp N(p), T, pr(p), pt;
      mpfr_set_zero(N, 1);
      mpfr_set_zero(T, 1);
      for (int i = 0; i < n; ++i) {
        mul_exact_double(pr, w[i], V[size_t(i) * nd + j]);  // V finite here
        mpfr_add(N, N, pr, MPFR_RNDN);
        mpfr_abs(pr, pr, MPFR_RNDN);  // exact
        mpfr_add(T, T, pr, MPFR_RNDU);
      }
      mpfr_add_ui(pt, u, 1, MPFR_RNDU);
      mpfr_mul(T, T, pt, MPFR_RNDU);  // T_up = (1+u) RU(sum |RN(w v)|)
      Mp EN, y(p), e, Y, den;
      mpfr_mul(EN, cN, T, MPFR_RNDU);
      mpfr_add(EN, EN, tinyv, MPFR_RNDU);
      mpfr_div(y, N, S, MPFR_RNDN);
      mpfr_sub(den, S, ES, MPFR_RNDD);
      if (mpfr_sgn(den.v) <= 0) continue;  // not certifiable at this precision
      mpfr_abs(a, N, MPFR_RNDU);
      mpfr_add(a, a, EN, MPFR_RNDU);
      mpfr_div(Y, a, den, MPFR_RNDU);
      mpfr_mul(a, Y, ES, MPFR_RNDU);
      mpfr_add(a, a, EN, MPFR_RNDU);
      mpfr_div(e, a, S, MPFR_RNDU);
      mpfr_abs(a, y, MPFR_RNDU);
      mpfr_mul(a, a, u, MPFR_RNDU);
      mpfr_add(e, e, a, MPFR_RNDU);
      double r;
      if (need_out[j] && certify(y, e, *out_fmt, &r)) {
        res.elems[j].bits = to_bits(r, out_fmt, out);
        res.elems[j].mp_bits = unsigned(p);
        need_out[j] = 0;
      }
      if (need_dbl[j] && certify(y, e, kDouble, &r)) {
        res.elems[j].nearest = r;
        need_dbl[j] = 0;
      }
    }
    bool left = need_s;
    for (int j = 0; j < nd; ++j) left = left || need_out[j] || need_dbl[j];
    if (!left) break;

    // Rational case: all groups of equal logits must share the mean of v.
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int i1, int i2) { return mpfr_cmp(x[i1], x[i2]) < 0; });
    std::vector<std::pair<int, int>> groups;  // [begin, end) in order
    for (int i = 0; i < n;) {
      int jx = i + 1;
      while (jx < n && mpfr_equal_p(x[order[jx]], x[order[i]])) ++jx;
      groups.emplace_back(i, jx);
      i = jx;
    }
    for (int j = 0; j < nd; ++j) {
      if (!need_out[j] && !need_dbl[j]) continue;
      std::vector<double> vals;
      Mp s0(2), sg(2), l(2), rr(2);
      bool rational = true;
      long c0 = groups[0].second - groups[0].first;
      for (size_t gi = 0; gi < groups.size() && rational; ++gi) {
        vals.clear();
        for (int o = groups[gi].first; o < groups[gi].second; ++o)
          vals.push_back(V[size_t(order[o]) * nd + j]);
        exact_sum(gi == 0 ? s0 : sg, vals.data(), int(vals.size()), tmp);
        if (gi == 0) continue;
        long cg = groups[gi].second - groups[gi].first;
        mpfr_set_prec(l, mpfr_get_prec(sg) + 64);
        mpfr_set_prec(rr, mpfr_get_prec(s0) + 64);
        mpfr_mul_si(l, sg, c0, MPFR_RNDN);  // exact: 64 extra bits hold the integer
        mpfr_mul_si(rr, s0, cg, MPFR_RNDN);
        rational = mpfr_equal_p(l, rr);
      }
      if (!rational) continue;
      // y* = s0 / c0 exactly; round it exactly to each target.
      Mp lo(4096), hi(4096);
      int tern = mpfr_div_si(lo, s0, c0, MPFR_RNDD);
      mpfr_div_si(hi, s0, c0, MPFR_RNDU);
      auto exact_round = [&](const Format& f) {
        if (mpfr_zero_p(lo) && tern == 0) return 0.0;  // exact zero is +0
        if (tern == 0) return round_exact(lo, f);
        // y* strictly between lo and hi, adjacent 4096-bit numbers: a midpoint of f can only be
        // lo or hi, and y* rounds like the other end.
        return is_midpoint(hi, f) ? round_exact(lo, f) : round_exact(hi, f);
      };
      if (need_out[j]) {
        res.elems[j].bits = to_bits(exact_round(*out_fmt), out_fmt, out);
        need_out[j] = 0;
        res.elems[j].exact_rational = true;
      }
      if (need_dbl[j]) {
        res.elems[j].nearest = exact_round(kDouble);
        need_dbl[j] = 0;
        res.elems[j].exact_rational = true;
      }
    }
    left = need_s;
    for (int j = 0; j < nd; ++j) left = left || need_out[j] || need_dbl[j];
    if (!left) break;
  }
  return res;
}

}  // namespace pagedattn::ref::detail
