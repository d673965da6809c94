// V1 and V2 under an adversarial exp (issue 19, item 3c): the emulator's exp model moved
// max_ulp ulps up for the tokens whose value lies above the exact output and down for the
// others (emu::math::ExpModel::Mode::adversarial), which pushes every weight's error the
// same way in the weighted sum: the worst case the bound's softmax term charges for the exp,
// where --exp-mode up moves every weight by one common factor that cancels.
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>
#include "checks.h"
#include "emu/device_math.h"
#include "generators.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

// Exp arguments the kernel will compute (exact values, the kernel's within its logit error)
// with the direction wanted there; the model picks the nearest entry's direction.
struct Adversary {
  std::vector<std::pair<float, bool>> table;  // sorted by argument
  static bool up(float x, const void* ctx) {
    const auto& t = static_cast<const Adversary*>(ctx)->table;
    if (t.empty()) return false;
    auto it = std::lower_bound(t.begin(), t.end(), std::make_pair(x, false));
    if (it == t.end()) return t.back().second;
    if (it != t.begin() && std::fabs(std::prev(it)->first - x) < std::fabs(it->first - x)) --it;
    return it->second;
  }
};

struct ExpModelScope {
  explicit ExpModelScope(const emu::math::ExpModel& m) { emu::math::set_exp_model(m); }
  ~ExpModelScope() { emu::math::set_exp_model({}); }
};

// The exact logits of the case's one row (sequence 0, head 0), as the judge forms them.
std::vector<double> row_logits(const Case& c) {
  const std::int64_t L = c.seq_lens[0];
  std::vector<double> x(static_cast<std::size_t>(L));
  const double slope = c.has_alibi() ? c.alibi_slopes[0] : 0.0;
  for (std::int64_t t = 0; t < L; ++t) {
    const auto [blk, slot] = c.where(0, t);
    double dot = 0;
    for (int d = 0; d < c.head_size; ++d) dot += c.q(0, 0, d) * c.key(blk, KvHead{0}, slot, Dim{d});
    x[t] = c.scale * dot + slope * static_cast<double>(t - L + 1);
  }
  return x;
}

// The adversary for `kernel` at partition size P on element d: the sign of v_i - y per token
// at the argument x_i - m (V1: the row's max; V2: the partition's), and for V2's reduce the
// sign of o_p - y at m_p - M.
Adversary adversary(const Case& c, const std::vector<double>& x, int d, double y, bool v2, int P) {
  Adversary a;
  const std::int64_t L = static_cast<std::int64_t>(x.size());
  const std::int64_t part = v2 ? P : L;
  const double M = *std::max_element(x.begin(), x.end());
  for (std::int64_t t0 = 0; t0 < L; t0 += part) {
    const std::int64_t t1 = std::min(L, t0 + part);
    const double m = *std::max_element(x.begin() + t0, x.begin() + t1);
    double s = 0, o = 0;
    for (std::int64_t t = t0; t < t1; ++t) {
      const auto [blk, slot] = c.where(0, t);
      const double v = c.value(blk, KvHead{0}, slot, Dim{d});
      a.table.emplace_back(static_cast<float>(x[t] - m), v > y);
      s += std::exp(x[t] - m);
      o += std::exp(x[t] - m) * v;
    }
    if (v2 && L > P) a.table.emplace_back(static_cast<float>(m - M), o / s > y);
  }
  std::sort(a.table.begin(), a.table.end());
  return a;
}

}  // namespace

// One sequence, one head (the adversary is per row), any other dimension; V1 and V2 with
// the exp 1, 2 or 4 ulps off toward the output-moving direction on the element of largest
// sum_i p_i |v_i - y|, judged with the bound for exactly that exp model
// (ExpAccuracy::emulator(k): the tightest the model allows).
PAGEDATTN_PROPERTY(prop_adversarial_exp, 100) {
  Limits lim;
  lim.max_seqs = 1;
  lim.max_kv_heads = 1;
  lim.max_gqa = 1;
  Spec s = *gen_spec(lim);
  if (s.seq_lens[0] == 0) s.seq_lens[0] = 1;
  const int k = *rc::gen::element(1, 2, 4);
  const testing::Judge judge(build(s));
  const Case& c = judge.input();
  const std::vector<double> x = row_logits(c);
  int d_star = 0;
  const auto& el = judge.magnitudes().elements;
  for (int d = 1; d < s.head_size; ++d) {
    if (el[d].dev > el[d_star].dev) d_star = d;
  }
  const double y = judge.exact_output().value[d_star];
  RC_PRE(std::isfinite(y) && !x.empty());
  const Options opt = s.options();
  for (const KernelUnderTest& kt : kernels_under_test()) {
    const Options ko = kt.options(opt);
    const Adversary a = adversary(c, x, d_star, y, kt.partitioned(), ko.partition_size);
    emu::math::ExpModel m;
    m.mode = emu::math::ExpModel::Mode::adversarial;
    m.max_ulp = k;
    m.up = &Adversary::up;
    m.ctx = &a;
    Outputs o;
    {
      const ExpModelScope scope(m);
      o = run(c, kt.kernel, ko, s.profile);
    }
    testing::BoundSetup setup = testing::bound_setup(kt.kernel, ko, s.profile);
    setup.exp = bound::ExpAccuracy::emulator(k);
    assert_within(judge.verdict(o.out, setup), std::string(kt.name) + " with the exp " +
                                                   std::to_string(k) + " ulps adversarial");
  }
}

}  // namespace pagedattn::prop
