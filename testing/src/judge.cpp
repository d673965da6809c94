#include "pagedattn_testing/judge.h"

#include <emu/profile.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "pagedattn/resources.h"
#include "pagedattn_bound/interval.h"

namespace pagedattn::testing {

ref::Output exact(const Case& c) {
  ref::Options o;
  o.out_dtype = traits(c.scalar).ref;
  return ref::reference_attention(c.exact_problem(), o);
}

int profile_warp_size(const std::string& profile) {
  static std::mutex mu;
  static std::map<std::string, int> warp;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = warp.find(profile);
  if (it == warp.end()) it = warp.emplace(profile, emu::load_profile(profile).warp_size).first;
  return it->second;
}

BoundSetup bound_setup(Kernel kernel, const Options& options, const std::string& profile) {
  BoundSetup b;
  b.warp_size = profile_warp_size(profile);
  b.partition_size = kernel == Kernel::v2 ? options.partition_size : 0;
  b.choices = effective_choices(options);
  return b;
}

bound::KernelConfig kernel_config(const Case& c, const BoundSetup& s) {
  bound::KernelConfig k;
  k.scalar = traits(c.scalar).bound;
  k.cache = traits(c.cache_element()).bound;
  k.head_size = c.head_size;
  k.block_size = c.block_size;
  k.warp_size = s.warp_size;
  k.threads_per_block = kThreadsPerBlock;
  k.partition_size = s.partition_size;
  k.choices.partials_in_output_dtype = s.choices.partials_in_output_dtype;
  k.choices.epsilon_denominator = s.choices.epsilon_denominator;
  k.choices.round_probabilities = s.choices.round_probabilities;
  k.exp = s.exp;
  k.scale = c.scale;
  k.k_scale = c.k_scale;
  k.v_scale = c.v_scale;
  return k;
}

namespace {
// Element j's magnitudes with |y| <= |exact| + exact_err (rounded up), or the magnitudes'
// own bound if smaller.
bound::ElementMagnitudes with_exact(const Magnitudes& m, const std::vector<double>& exact,
                                    const std::vector<double>& exact_err, std::size_t j) {
  bound::ElementMagnitudes el = m.elements[j];
  if (std::isfinite(exact[j]))
    el.abs_exact = std::min(el.abs_exact, bound::add_up(std::fabs(exact[j]), exact_err[j]));
  return el;
}
}  // namespace

std::vector<double> element_bounds(const Case& c, const Magnitudes& m, const BoundSetup& setup,
                                   const std::vector<double>& exact,
                                   const std::vector<double>& exact_err) {
  const bound::KernelConfig k = kernel_config(c, setup);
  const std::size_t D = static_cast<std::size_t>(c.head_size);
  std::vector<double> out(m.elements.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    if (std::isnan(m.rows[r].spread)) continue;
    const bound::RowBound rb = bound::row_bound(k, m.rows[r]);  // the row's coefficients once
    for (std::size_t d = 0; d < D; ++d) {
      out[r * D + d] = bound::element_bound(rb, with_exact(m, exact, exact_err, r * D + d)).total;
    }
  }
  return out;
}

bound::Bound element_bound_parts(const Case& c, const Magnitudes& m, const BoundSetup& setup,
                                 const std::vector<double>& exact,
                                 const std::vector<double>& exact_err, std::size_t j) {
  const std::size_t r = j / static_cast<std::size_t>(c.head_size);
  if (std::isnan(m.rows[r].spread)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan, nan, nan, nan, nan};
  }
  return bound::element_bound(bound::row_bound(kernel_config(c, setup), m.rows[r]),
                              with_exact(m, exact, exact_err, j));
}

std::vector<double> element_bounds(const Case& c, const BoundSetup& setup,
                                   const ref::Output& exact) {
  return element_bounds(c, magnitudes(c), setup, exact.value, exact.value_err);
}

double ratio_over_bound(double got, double value, double value_err, double bound) {
  if (std::isnan(value_err)) return std::numeric_limits<double>::infinity();  // no known error
  const double diff = got >= value ? bound::add_up(got, -value) : bound::add_up(value, -got);
  if (diff == 0 && value_err <= bound) return 0;
  const double e = bound::add_up(diff, value_err);  // >= |got - exact|
  if (e == 0) return 0;
  return bound > 0 ? bound::div_up(e, bound) : std::numeric_limits<double>::infinity();
}

std::vector<double> errors_over_bound(const std::vector<double>& got, const ref::Output& want,
                                      const std::vector<double>& bounds) {
  std::vector<double> r(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double b = bounds[i], x = want.value[i];
    if (std::isnan(x)) {
      r[i] = std::isnan(got[i]) ? 0 : INFINITY;
    } else if (!std::isfinite(got[i]) || std::isnan(b)) {
      // A NaN bound on a finite exact value cannot happen (both follow nan_propagation's
      // rule on the same inputs): if it does, it fails loudly.
      r[i] = INFINITY;
    } else {
      r[i] = ratio_over_bound(got[i], x, want.value_err.empty() ? 0 : want.value_err[i], b);
    }
  }
  return r;
}

Verdict err_over_bound(const Case& c, const std::vector<double>& got, const ref::Output& want,
                       const std::vector<double>& bounds) {
  const std::vector<double> r = errors_over_bound(got, want, bounds);
  Verdict v;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r[i] > r[worst]) worst = i;
  }
  if (r.empty()) return v;
  v.worst = r[worst];
  const std::size_t D = static_cast<std::size_t>(c.head_size), H = c.num_heads;
  std::ostringstream os;
  os.precision(17);
  os << "seq " << worst / D / H << " head " << (worst / D) % H << " d " << worst % D << ": got "
     << got[worst] << " exact " << want.value[worst] << " bound " << bounds[worst];
  v.where = os.str();
  return v;
}

Judge::Judge(Case c) : c_(std::move(c)), exact_(exact(c_)), m_(testing::magnitudes(c_)) {}

std::vector<double> Judge::bounds(const BoundSetup& setup) const {
  return element_bounds(c_, m_, setup, exact_.value, exact_.value_err);
}
Verdict Judge::verdict(const std::vector<double>& got, const BoundSetup& setup) const {
  return err_over_bound(c_, got, exact_, bounds(setup));
}
Verdict Judge::verdict(const std::vector<double>& got, Kernel kernel, const Options& options,
                       const std::string& profile) const {
  return verdict(got, bound_setup(kernel, options, profile));
}

Judgement judge(const Case& c, Kernel kernel, int partition_size, int warp_size,
                const std::vector<double>& got) {
  const ref::Output ex = exact(c);
  const Magnitudes m = magnitudes(c);
  BoundSetup s;
  s.warp_size = warp_size;
  s.partition_size = kernel == Kernel::v2 ? partition_size : 0;
  Judgement j;
  j.ours = errors_over_bound(got, ex, element_bounds(c, m, s, ex.value, ex.value_err));
  s.choices = NumericsChoices::all();
  j.vllm = errors_over_bound(got, ex, element_bounds(c, m, s, ex.value, ex.value_err));
  for (double r : j.ours) j.worst_ours = std::max(j.worst_ours, r);
  for (double r : j.vllm) j.worst_vllm = std::max(j.worst_vllm, r);
  return j;
}

}  // namespace pagedattn::testing
