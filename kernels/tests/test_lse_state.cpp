// The merge algebra: identity, empty with empty, agreement with a direct softmax, the NaN
// rule (a NaN exp-sum is poisoned, not empty), and WeightedSum (the reduce's fold) against
// the online merge.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include "pagedattn/lse_state.h"

namespace pagedattn {
namespace {

TEST(LseState, EmptyMergedWithEmptyIsEmptyNotNaN) {
  const auto e = LseState<float>::empty();
  const auto m = e.merged(e);
  EXPECT_TRUE(m.is_empty());
  EXPECT_EQ(m.m, -INFINITY);
  EXPECT_EQ(m.s, 0.f);
  float w1 = 1, w2 = 1;
  e.merge_weights(e, &w1, &w2);
  EXPECT_EQ(w1, 0.f);
  EXPECT_EQ(w2, 0.f);

  PartitionState<float, 3> a, b;
  a.merge(b);
  EXPECT_TRUE(a.ms.is_empty());
  for (float o : a.o) EXPECT_EQ(o, 0.f);
}

TEST(LseState, EmptyIsTheIdentityExactly) {
  PartitionState<double, 2> x;
  x.ms = {1.5, 2.25};
  x.o[0] = -0.5;
  x.o[1] = 0.125;
  for (bool left : {true, false}) {
    PartitionState<double, 2> e, r;
    if (left) {
      r = e;
      r.merge(x);
    } else {
      r = x;
      r.merge(e);
    }
    EXPECT_EQ(r.ms.m, x.ms.m);
    EXPECT_EQ(r.ms.s, x.ms.s);
    EXPECT_EQ(r.o[0], x.o[0]);
    EXPECT_EQ(r.o[1], x.o[1]);
  }
}

// Split a row of logits into partitions, merge their states in two different orders and
// compare with the direct softmax-weighted sum (double: agreement to ~1e-15 relative).
TEST(LseState, MergedPartitionsEqualDirectSoftmax) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-20, 20);
  const int n = 100;
  std::vector<double> x(n), v(n);
  for (int i = 0; i < n; ++i) {
    x[i] = u(rng);
    v[i] = u(rng) / 20;
  }
  double mx = -INFINITY;
  for (double xi : x) mx = std::max(mx, xi);
  double s = 0, o = 0;
  for (int i = 0; i < n; ++i) {
    s += std::exp(x[i] - mx);
    o += std::exp(x[i] - mx) * v[i];
  }
  o /= s;
  std::vector<PartitionState<double, 1>> parts;
  for (int start = 0; start < n; start += 17) {
    PartitionState<double, 1> p;
    double m = -INFINITY;
    for (int i = start; i < std::min(n, start + 17); ++i) m = std::max(m, x[i]);
    double ps = 0, po = 0;
    for (int i = start; i < std::min(n, start + 17); ++i) {
      ps += std::exp(x[i] - m);
      po += std::exp(x[i] - m) * v[i];
    }
    p.ms = {m, ps};
    p.o[0] = po / ps;
    parts.push_back(p);
  }
  parts.push_back(PartitionState<double, 1>::empty());  // an empty partition changes nothing
  PartitionState<double, 1> fwd, bwd;
  for (const auto& p : parts) fwd.merge(p);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) bwd.merge(*it);
  EXPECT_NEAR(fwd.o[0], o, 1e-14);
  EXPECT_NEAR(bwd.o[0], o, 1e-14);
  EXPECT_DOUBLE_EQ(fwd.ms.m, mx);
  EXPECT_NEAR(fwd.ms.lse(), mx + std::log(s), 1e-13);
}

// The first round's bug: `is_empty()` was `!(s > 0)`, true for a NaN exp-sum, so a
// poisoned partition was dropped. Now only s == 0 is empty and NaN is carried on.
TEST(LseState, NaNExpSumIsPoisonedNotEmpty) {
  const LseState<float> nan_s{2.f, NAN}, all_nan{-INFINITY, NAN}, nan_m{NAN, 3.f};
  EXPECT_FALSE(nan_s.is_empty());
  EXPECT_FALSE(all_nan.is_empty());
  EXPECT_TRUE(std::isnan(nan_s.weight_at(5.f)));
  EXPECT_TRUE(std::isnan(all_nan.weight_at(5.f)));  // every logit NaN: m stayed -inf
  EXPECT_TRUE(std::isnan(all_nan.weight_at(-INFINITY)));
  EXPECT_TRUE(std::isnan(nan_m.weight_at(5.f)));
  EXPECT_EQ((LseState<float>{-INFINITY, 2.f}.weight_at(1.f)), 0.f);  // every logit -inf
  const LseState<float> good{1.f, 4.f};
  EXPECT_TRUE(std::isnan(good.merged(nan_s).s));
  EXPECT_TRUE(std::isnan(nan_s.merged(good).s));
  EXPECT_TRUE(std::isnan(good.merged(all_nan).s));
  EXPECT_TRUE(std::isnan(nan_s.normalized(1.f)));
  PartitionState<float, 2> a, b;
  a.ms = good;
  a.o[0] = 0.5f;
  b.ms = nan_s;
  a.merge(b);
  EXPECT_TRUE(std::isnan(a.o[0]) && std::isnan(a.o[1]) && std::isnan(a.ms.s));
  WeightedSum<float, 1> w(5.f);
  EXPECT_TRUE(w.add_weight(w.weight(good)));
  EXPECT_TRUE(w.add_weight(w.weight(all_nan)));
  EXPECT_TRUE(std::isnan(w.result(0)));
}

// WeightedSum (two passes: exact max first) equals the online merge in double, an empty
// state adds nothing, and a row of only empty states folds to 0.
TEST(LseState, WeightedSumEqualsTheOnlineMerge) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> um(-10, 10), us(1, 50), uo(-1, 1);
  std::vector<PartitionState<double, 2>> parts(9);
  double M = -INFINITY;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (p == 4) continue;  // empty
    parts[p].ms = {um(rng), us(rng)};
    parts[p].o[0] = uo(rng);
    parts[p].o[1] = uo(rng);
    M = std::max(M, parts[p].ms.m);
  }
  PartitionState<double, 2> online;
  WeightedSum<double, 2> fold(M);
  for (const auto& p : parts) {
    online.merge(p);
    const double w = fold.weight(p.ms);
    if (!fold.add_weight(w)) continue;
    for (int k = 0; k < 2; ++k) fold.add_output(k, w, p.o[k]);
  }
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(fold.result(k), online.o[k], 1e-14);
  EXPECT_NEAR(fold.total, online.ms.s, 1e-12 * online.ms.s);
  WeightedSum<double, 1> none(-INFINITY);
  EXPECT_FALSE(none.add_weight(none.weight(LseState<double>::empty())));
  EXPECT_EQ(none.result(0), 0.0);
}

}  // namespace
}  // namespace pagedattn
