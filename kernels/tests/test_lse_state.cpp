// The merge algebra: identity, empty with empty, and agreement with a direct softmax.
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

}  // namespace
}  // namespace pagedattn
