#include "pagedattn_testing/judge.h"

#include <emu/profile.h>

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "pagedattn/resources.h"

namespace pagedattn::testing {

ref::Output exact(const Case& c) {
  ref::Options o;
  o.out_dtype = traits(c.scalar).ref;
  return ref::reference_attention(c.exact_problem(), o);
}

bool row_magnitudes(const Case& c, int seq, int head, std::int64_t first, std::int64_t end,
                    bound::RowMagnitudes* row, bound::ElementMagnitudes* el) {
  const int D = c.head_size;
  const std::int64_t L = c.seq_lens[seq], n = end - first;
  const KvLayout l = c.layout();
  const DType ce = c.cache_element();
  const double ks = c.key_scale(), vs = c.value_scale();
  const KvHead kvh{c.kv_head_of(head)};
  std::vector<double> q(D), logits(static_cast<std::size_t>(n)), qk(static_cast<std::size_t>(n));
  double sum_abs_q = 0;
  bool finite = true;
  for (int d = 0; d < D; ++d) {
    q[d] = c.q(seq, head, d);
    sum_abs_q += std::fabs(q[d]);
    finite = finite && (n == 0 || std::isfinite(q[d]));  // read only if a token is
  }
  const double slope = c.has_alibi() ? c.alibi_slopes[head] : 0.0;
  finite = finite && (n == 0 || std::isfinite(slope));
  double max_qk = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = first + i;
    const Physical p = c.where(seq, t);
    double dot = 0, mag = 0;
    for (int d = 0; d < D; ++d) {
      // Each product is exact in double (at most 24 + 24 significant bits).
      const double k = decode(ce, c.key_cache.data(),
                              static_cast<std::size_t>(l.key(p.block, kvh, p.slot, Dim{d}))) *
                       ks;
      dot += q[d] * k;
      mag += std::fabs(q[d] * k);
    }
    logits[i] = c.scale * dot + slope * static_cast<double>(t - L + 1);
    qk[i] = std::fabs(c.scale) * mag;
    max_qk = std::max(max_qk, qk[i]);
    finite = finite && std::isfinite(logits[i]) && std::isfinite(qk[i]);
  }
  bound::exact_magnitudes(
      n, D, logits.data(), qk.data(),
      [&](std::int64_t i, double* v) {
        const Physical p = c.where(seq, first + i);
        for (int d = 0; d < D; ++d) {
          v[d] = decode(ce, c.value_cache.data(),
                        static_cast<std::size_t>(l.value(p.block, kvh, p.slot, Dim{d}))) *
                 vs;
          finite = finite && std::isfinite(v[d]);
        }
      },
      sum_abs_q, row, el);
  if (!finite) {
    row->spread = std::numeric_limits<double>::quiet_NaN();
    return false;
  }
  // The double dot products err by at most D 2^-53 Q_i absolutely (recursive summation of
  // exact products), and ALiBi's product and sum by 2^-52 |x_i|, which bound.h's relative
  // 1e-12 of x_i need not cover when the logits cancel: widen the gaps and |x| by that
  // much explicitly. dev_gap and dev_x weigh the gaps by p_i |v_i - y|, which sum to dev
  // (<= 2 A): the widening is weighed by max(dev, A).
  const double e = 2 * D * 0x1p-53 * max_qk + 0x1p-51 * row->max_abs_logit;
  row->spread += 2 * e;
  row->p_gap += 2 * e;
  row->p_x += e;
  row->max_abs_logit += e;
  for (int d = 0; d < D; ++d) {
    const double w = std::max(el[d].dev, el[d].a);
    el[d].dev_gap += 2 * e * w;
    el[d].dev_x += e * w;
  }
  return true;
}

Magnitudes magnitudes(const Case& c) {
  Magnitudes m;
  m.head_size = c.head_size;
  const std::size_t rows = static_cast<std::size_t>(c.num_seqs) * c.num_heads;
  m.rows.resize(rows);
  m.elements.resize(rows * c.head_size);
  for (int s = 0; s < c.num_seqs; ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      const std::size_t r = static_cast<std::size_t>(s) * c.num_heads + h;
      row_magnitudes(c, s, h, 0, c.seq_lens[s], &m.rows[r], &m.elements[r * c.head_size]);
    }
  }
  return m;
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

std::vector<double> element_bounds(const Case& c, const Magnitudes& m, const BoundSetup& setup,
                                   const std::vector<double>& exact,
                                   const std::vector<double>& exact_err) {
  const bound::KernelConfig k = kernel_config(c, setup);
  const std::size_t D = static_cast<std::size_t>(c.head_size);
  std::vector<double> out(m.elements.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    if (std::isnan(m.rows[r].spread)) continue;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t j = r * D + d;
      bound::ElementMagnitudes el = m.elements[j];
      if (std::isfinite(exact[j])) el.abs_exact = std::fabs(exact[j]) + exact_err[j];
      out[j] = bound::kernel_error_bound(k, m.rows[r], el).total;
    }
  }
  return out;
}

std::vector<double> element_bounds(const Case& c, const BoundSetup& setup,
                                   const ref::Output& exact) {
  return element_bounds(c, magnitudes(c), setup, exact.value, exact.value_err);
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
      const double diff = std::fabs(got[i] - x);
      r[i] = diff == 0 ? 0 : (b > 0 ? diff / b : INFINITY);
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
