// V1 and V2 under an adversarial exp (issue 19, item 3c): the emulator's exp model moved
// max_ulp ulps up for the tokens whose value lies above the exact output and down for the
// others (emu::math::ExpModel::Mode::adversarial), which pushes every weight's error the
// same way in the weighted sum: the worst case the bound's softmax term charges for the exp,
// where --exp-mode up moves every weight by one common factor that cancels.
#include <rapidcheck.h>

#include <cmath>
#include "checks.h"
#include "emu/device_math.h"
#include "generators.h"
#include "pagedattn_testing/adversarial_exp.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

struct ExpModelScope {
  explicit ExpModelScope(const emu::math::ExpModel& m) { emu::math::set_exp_model(m); }
  ~ExpModelScope() { emu::math::set_exp_model({}); }
};

}  // namespace

// One sequence, one head (testing::AdversarialExp, shared with `pagedattn audit --exp-mode
// adversarial`), any other dimension; V1 and V2 with
// the exp 1, 2, 4 or 64 ulps off toward the output-moving direction on the element of
// largest sum_i p_i |v_i - y|, judged with the bound for exactly that exp model
// (ExpAccuracy::emulator(k): the tightest the model allows). 64 ulps makes the exp's error
// the largest part of an f32 output's: a bound without its exp term (ExpAccuracy{0.5, 0})
// passes 500 cases of 1-4 ulps (the final rounding and the logits' term absorb them) and
// fails with 64 (tried once each).
PAGEDATTN_PROPERTY(prop_adversarial_exp, 100) {
  Limits lim;
  lim.max_seqs = 1;
  lim.max_kv_heads = 1;
  lim.max_gqa = 1;
  Spec s = *gen_spec(lim);
  if (s.seq_lens[0] == 0) s.seq_lens[0] = 1;
  const int k = *rc::gen::element(1, 2, 4, 64);
  const testing::Judge judge(build(s));
  const Case& c = judge.input();
  const Options opt = s.options();
  for (const KernelUnderTest& kt : kernels_under_test()) {
    const Options ko = kt.options(opt);
    const testing::AdversarialExp a(c, judge.magnitudes(), judge.exact_output().value,
                                    kt.partitioned() ? ko.partition_size : 0);
    RC_PRE(std::isfinite(judge.exact_output().value[a.element(0, 0)]));
    const emu::math::ExpModel m = a.model(k);
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
