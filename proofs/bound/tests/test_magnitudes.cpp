// exact_magnitudes against the same quantities computed in MPFR at 320 bits from the same
// exact inputs, on random and adversarial rows: every field is an upper bound of the exact
// value (within MPFR's own error, far below a double's) and within 1e-9 of its natural
// scale above it; and long sums (2^24 terms), one where the former evaluation (double sums
// inflated by a relative 1e-9, "within 1e-9 up to 2^31 terms") falls below the exact value,
// one built to defeat this file's blocked sums, both staying below this bound.
// Wrong variants caught (each run once, then reverted): the summation's gamma_h dropped
// (LongSumsNeedTheSummationHeight: A below the exact value); delta_x without the dot
// product's gamma term (AdversarialRowsAreUpperBounds, `cancelling_logits`: p_x and dev_x
// below MPFR's); delta_y without its k_hi / k_lo term (the same test: abs_exact below).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mp.h"
#include "pagedattn_bound/bound.h"

namespace pb = pagedattn::bound;
using pb::test::Mp;

namespace {

using pb::test::abs;

struct RowInput {
  std::int64_t n = 0;
  int D = 1;
  std::vector<double> q, k, v;  // q[D], k and v [n][D]
  double scale = 1, slope = 0;
  std::int64_t pos0 = 0;
};

// The exact magnitudes in MPFR (each operation within 2^-319 of its exact value).
struct Exact {
  Mp spread, max_abs_logit, max_qk, max_abs_v, sum_abs_q, p_gap, p_qk, p_x;
  std::vector<Mp> y, a, dev, dev_gap, dev_qk, dev_x;
};
Exact exact(const RowInput& in) {
  const std::int64_t n = in.n;
  const int D = in.D;
  Exact e;
  std::vector<Mp> x(n), qk(n), w(n);
  for (int d = 0; d < D; ++d) e.sum_abs_q = e.sum_abs_q + abs(Mp(in.q[d]));
  Mp xmax(-std::numeric_limits<double>::infinity()), xmin(std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < n; ++i) {
    Mp dot, mag;
    for (int d = 0; d < D; ++d) {
      const Mp p = Mp(in.q[d]) * Mp(in.k[i * D + d]);
      dot = dot + p;
      mag = mag + abs(p);
    }
    x[i] = Mp(in.scale) * dot + Mp(in.slope) * Mp(static_cast<double>(in.pos0 + i));
    qk[i] = abs(Mp(in.scale)) * mag;
    xmax = pb::test::max(xmax, x[i]);
    xmin = pb::test::min(xmin, x[i]);
    e.max_abs_logit = pb::test::max(e.max_abs_logit, abs(x[i]));
    e.max_qk = pb::test::max(e.max_qk, qk[i]);
  }
  e.spread = xmax - xmin;
  Mp s;
  for (std::int64_t i = 0; i < n; ++i) s = s + (w[i] = pb::test::exp(x[i] - xmax));
  for (std::int64_t i = 0; i < n; ++i) {
    const Mp p = w[i] / s;
    e.p_gap = e.p_gap + p * (xmax - x[i]);
    e.p_qk = e.p_qk + p * qk[i];
    e.p_x = e.p_x + p * abs(x[i]);
  }
  e.y.assign(D, Mp());
  e.a = e.dev = e.dev_gap = e.dev_qk = e.dev_x = e.y;
  for (std::int64_t i = 0; i < n; ++i) {
    const Mp p = w[i] / s;
    for (int d = 0; d < D; ++d) {
      const Mp v(in.v[i * D + d]);
      e.y[d] = e.y[d] + p * v;
      e.a[d] = e.a[d] + p * abs(v);
      e.max_abs_v = pb::test::max(e.max_abs_v, abs(v));
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const Mp p = w[i] / s;
    for (int d = 0; d < D; ++d) {
      const Mp t = p * abs(Mp(in.v[i * D + d]) - e.y[d]);
      e.dev[d] = e.dev[d] + t;
      e.dev_gap[d] = e.dev_gap[d] + t * (xmax - x[i]);
      e.dev_qk[d] = e.dev_qk[d] + t * qk[i];
      e.dev_x[d] = e.dev_x[d] + t * abs(x[i]);
    }
  }
  return e;
}

pb::KvSource source(const RowInput& in) {
  pb::KvSource kv;
  kv.n = in.n;
  kv.head_size = in.D;
  kv.scale = in.scale;
  kv.alibi_position0 = in.pos0;
  kv.keys = [&in](std::int64_t i0, std::int64_t i1, double* out) {
    std::copy(in.k.begin() + i0 * in.D, in.k.begin() + i1 * in.D, out);
  };
  kv.values = [&in](std::int64_t i0, std::int64_t i1, double* out) {
    std::copy(in.v.begin() + i0 * in.D, in.v.begin() + i1 * in.D, out);
  };
  return kv;
}

struct Result {
  pb::RowMagnitudes row;
  std::vector<pb::ElementMagnitudes> el;
  bool finite = false;
};
Result magnitudes(const RowInput& in) {
  Result r;
  r.el.resize(in.D);
  pb::QueryRow q{in.q.data(), in.slope};
  bool finite = false;
  pb::exact_magnitudes(source(in), &q, 1, &r.row, r.el.data(), &finite);
  r.finite = finite;
  return r;
}

// got is an upper bound of want (beyond MPFR's error: 2^-250 of the field's scale) and
// within 1e-9 of that scale above it.
void expect_upper(const char* what, double got, const Mp& want, double scale) {
  const Mp tol = Mp(0x1p-250) * (abs(want) + Mp(scale));
  EXPECT_FALSE(Mp(got) < want - tol) << what << ": " << got << " below " << want.to_double();
  EXPECT_FALSE(want + Mp(1e-9) * (abs(want) + Mp(scale)) < Mp(got))
      << what << ": " << got << " far above " << want.to_double();
}

void check_row(const std::string& name, const RowInput& in) {
  SCOPED_TRACE(name);
  const Result r = magnitudes(in);
  ASSERT_TRUE(r.finite);
  const Exact e = exact(in);
  const double xs = e.max_abs_logit.to_double() + e.max_qk.to_double() + 1;  // logit scale
  const double vs = e.max_abs_v.to_double() + 1e-300;
  EXPECT_EQ(r.row.n, in.n);
  expect_upper("spread", r.row.spread, e.spread, xs);
  expect_upper("max_abs_logit", r.row.max_abs_logit, e.max_abs_logit, xs);
  expect_upper("max_qk", r.row.max_qk, e.max_qk, xs);
  expect_upper("max_abs_v", r.row.max_abs_v, e.max_abs_v, vs);
  expect_upper("sum_abs_q", r.row.sum_abs_q, e.sum_abs_q, e.sum_abs_q.to_double());
  expect_upper("p_gap", r.row.p_gap, e.p_gap, xs);
  expect_upper("p_qk", r.row.p_qk, e.p_qk, xs);
  expect_upper("p_x", r.row.p_x, e.p_x, xs);
  for (int d = 0; d < in.D; ++d) {
    const pb::ElementMagnitudes& m = r.el[d];
    expect_upper("a", m.a, e.a[d], vs);
    expect_upper("abs_exact", m.abs_exact, abs(e.y[d]), vs);
    expect_upper("dev", m.dev, e.dev[d], vs);
    expect_upper("dev_gap", m.dev_gap, e.dev_gap[d], vs * xs);
    expect_upper("dev_qk", m.dev_qk, e.dev_qk[d], vs * xs);
    expect_upper("dev_x", m.dev_x, e.dev_x[d], vs * xs);
  }
}

RowInput random_row(std::mt19937_64& g, std::int64_t n, int D, double qk_sd, double v_scale) {
  std::normal_distribution<double> nd(0, 1);
  RowInput in;
  in.n = n;
  in.D = D;
  in.q.resize(D);
  in.k.resize(n * D);
  in.v.resize(n * D);
  for (double& x : in.q) x = static_cast<float>(nd(g) * qk_sd);
  for (double& x : in.k) x = static_cast<float>(nd(g) * qk_sd);
  for (double& x : in.v) x = static_cast<float>(nd(g)) * v_scale;
  return in;
}

}  // namespace

TEST(Magnitudes, AdversarialRowsAreUpperBounds) {
  std::mt19937_64 g(20261130);
  check_row("normal", random_row(g, 3000, 16, 2, 1));
  {
    // Logits over +-600 (exps of gaps past 700 underflow) with products of 1e4.
    RowInput in = random_row(g, 2000, 8, 30, 1);
    in.scale = 0.09;
    check_row("large_logits", in);
  }
  {
    RowInput in = random_row(g, 1000, 8, 1, 1);
    std::fill(in.q.begin(), in.q.end(), 0.0);  // every logit 0: p = 1/n
    check_row("ties", in);
  }
  {
    // Near ties: keys one base key moved by an ulp of f16 in one element; logits differ
    // in their last bits and cancel against each other.
    RowInput in = random_row(g, 1500, 16, 1, 1);
    for (std::int64_t i = 0; i < in.n; ++i)
      for (int d = 0; d < in.D; ++d)
        in.k[i * in.D + d] = in.k[d] + (d == static_cast<int>(i % in.D) ? 0x1p-10 : 0.0);
    check_row("near_ties", in);
  }
  check_row("f32_max_values", random_row(g, 1000, 8, 1, 1.5e38));
  check_row("subnormal_values", random_row(g, 1000, 8, 1, 0x1p-149));
  {
    RowInput in = random_row(g, 2000, 4, 0.1, 1);
    for (std::int64_t i = 0; i < in.n; ++i)
      for (int d = 0; d < in.D; ++d) in.v[i * in.D + d] = (i % 2) ? 1.0 : -1.0;
    check_row("cancelling", in);
  }
  {
    RowInput in = random_row(g, 1000, 8, 1, 1);
    in.slope = -0.0078125;
    in.pos0 = -1000000;  // ALiBi positions far from 0: slope terms of 7812
    check_row("alibi", in);
  }
  {
    RowInput in = random_row(g, 1000, 8, 1, 1);
    for (int d = 0; d < in.D; ++d) in.k[500 * in.D + d] = in.q[d] * 40;  // one dominant token
    check_row("dominant", in);
  }
  {
    // Subnormal values with underflowing weights: products below the double range.
    RowInput in = random_row(g, 500, 4, 30, 0x1p-149);
    in.scale = 0.2;
    check_row("underflowing_products", in);
  }
  {
    // Logits that cancel: large products, each key's last element chosen so that q.k is
    // near 0; the double dot product's error (gamma * Q) is far above u |x|.
    RowInput in = random_row(g, 1000, 16, 100, 1);
    for (std::int64_t i = 0; i < in.n; ++i) {
      double dot = 0;
      for (int d = 0; d + 1 < in.D; ++d) dot += in.q[d] * in.k[i * in.D + d];
      in.k[i * in.D + in.D - 1] = static_cast<float>(-dot / in.q[in.D - 1]);
    }
    check_row("cancelling_logits", in);
  }
  check_row("long", random_row(g, 100000, 2, 1, 1));
  check_row("one_token", random_row(g, 1, 8, 1, 1));
}

// A group of rows reading the same keys and values gets what each row gets alone.
TEST(Magnitudes, GroupEqualsRowsAlone) {
  std::mt19937_64 g(3);
  RowInput in = random_row(g, 700, 16, 1, 1);
  std::vector<double> qs(4 * 16);
  std::normal_distribution<double> nd(0, 1);
  for (double& x : qs) x = nd(g);
  std::vector<pb::QueryRow> rows;
  for (int r = 0; r < 4; ++r) rows.push_back({qs.data() + r * 16, r * 0.25});
  std::vector<pb::RowMagnitudes> out(4);
  std::vector<pb::ElementMagnitudes> el(4 * 16);
  in.pos0 = 1 - in.n;
  pb::exact_magnitudes(source(in), rows.data(), 4, out.data(), el.data());
  for (int r = 0; r < 4; ++r) {
    RowInput one = in;
    one.q.assign(qs.begin() + r * 16, qs.begin() + (r + 1) * 16);
    one.slope = r * 0.25;
    const Result alone = magnitudes(one);
    EXPECT_EQ(out[r].spread, alone.row.spread);
    EXPECT_EQ(out[r].p_gap, alone.row.p_gap);
    for (int d = 0; d < 16; ++d) {
      EXPECT_EQ(el[r * 16 + d].dev_gap, alone.el[d].dev_gap);
      EXPECT_EQ(el[r * 16 + d].abs_exact, alone.el[d].abs_exact);
    }
  }
}

// A non-finite input read marks the rows that read it, and only those.
TEST(Magnitudes, NonFiniteInputsMarkTheirRows) {
  std::mt19937_64 g(4);
  RowInput in = random_row(g, 100, 8, 1, 1);
  std::vector<double> q2 = in.q;
  q2[3] = std::numeric_limits<double>::infinity();
  pb::QueryRow rows[2] = {{in.q.data(), 0}, {q2.data(), 0}};
  pb::RowMagnitudes out[2];
  std::vector<pb::ElementMagnitudes> el(16);
  bool finite[2];
  pb::exact_magnitudes(source(in), rows, 2, out, el.data(), finite);
  EXPECT_TRUE(finite[0]);
  EXPECT_FALSE(finite[1]);
  EXPECT_FALSE(std::isnan(out[0].spread));
  EXPECT_TRUE(std::isnan(out[1].spread));
  in.v[57] = std::nan("");
  pb::exact_magnitudes(source(in), rows, 1, out, el.data(), finite);
  EXPECT_FALSE(finite[0]);
  // No token: nothing is read, everything is 0.
  in.n = 0;
  pb::exact_magnitudes(source(in), rows, 2, out, el.data(), finite);
  EXPECT_TRUE(finite[0] && finite[1]);
  EXPECT_EQ(out[1].n, 0);
  EXPECT_EQ(el[9].a, 0);
}

// 2^24 tokens, one element, all logits 0 (p_i = 2^-24 exactly), v_0 = 1 and the other
// values small. Exact: A = y = sum_i v_i / n, here (1 + m w) / n for m values w.
struct LongSum {
  pb::RowMagnitudes row;
  pb::ElementMagnitudes el;
  Mp exact;
};
LongSum long_sum(std::int64_t n, const std::function<double(std::int64_t)>& value, std::int64_t m,
                 double w) {
  const double q = 0;
  pb::KvSource kv;
  kv.n = n;
  kv.head_size = 1;
  kv.keys = [](std::int64_t i0, std::int64_t i1, double* out) {
    std::fill(out, out + (i1 - i0), 1.0);
  };
  kv.values = [&](std::int64_t i0, std::int64_t i1, double* out) {
    for (std::int64_t i = i0; i < i1; ++i) out[i - i0] = value(i);
  };
  pb::QueryRow row{&q, 0};
  LongSum r;
  pb::exact_magnitudes(kv, &row, 1, &r.row, &r.el);
  r.exact = (Mp(1) + Mp(static_cast<double>(m)) * Mp(w)) / Mp(static_cast<double>(n));
  return r;
}

// Every other v_i = w just below 2^-53: each p_i v_i is below half an ulp of the running sum
// and round to nearest drops it, so a plain double sum in order loses a relative 2^-29 =
// 1.9e-9, more than the former 1e-9 inflation covered (its claim: enough up to 2^31 terms).
TEST(Magnitudes, LongSumsBeatTheFormerInflation) {
  const std::int64_t n = std::int64_t{1} << 24;
  const double w = 0x1p-53 * (1 - 0x1p-20);
  const LongSum r = long_sum(
      n, [&](std::int64_t i) { return i == 0 ? 1.0 : w; }, n - 1, w);
  EXPECT_FALSE(Mp(r.el.a) < r.exact);
  EXPECT_FALSE(Mp(r.el.abs_exact) < r.exact);
  // The former evaluation: p_i = e_i / s in double, sum_i p_i |v_i| in order, times 1 + 1e-9.
  double old_a = 0;
  const double p = 1.0 / static_cast<double>(n);
  for (std::int64_t i = 0; i < n; ++i) old_a += p * (i == 0 ? 1.0 : w);
  EXPECT_TRUE(Mp(old_a * (1 + 1e-9)) < r.exact) << "the former claim held here";
}

// The same against this file's blocked sums: v_0 = 1 alone in its tile, and every later
// tile's 64 values sum to just below half an ulp of the running total, so each tile's sum
// is dropped (a relative 2^-35 in all): the summation height's gamma_h covers it, the
// weights' own slack (about 2^-46) would not.
TEST(Magnitudes, LongSumsNeedTheSummationHeight) {
  const std::int64_t n = std::int64_t{1} << 24;
  const double w = 0x1p-59 * (1 - 0x1p-20);
  const LongSum r = long_sum(
      n, [&](std::int64_t i) { return i == 0   ? 1.0
                                      : i < 64 ? 0.0
                                               : w; }, n - 64, w);
  EXPECT_FALSE(Mp(r.el.a) < r.exact);
  EXPECT_FALSE(Mp(r.el.abs_exact) < r.exact);
}
