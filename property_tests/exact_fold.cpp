#include "exact_fold.h"

#include <boost/multiprecision/mpfr.hpp>
#include <algorithm>
#include <cmath>
#include <random>

#include "pagedattn/lse_state.h"

namespace pagedattn::prop {
namespace {

using Mp = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<512>>;
constexpr int kMaxD = 256;
using State = PartitionState<Mp, kMaxD>;

struct MpExp {
  Mp operator()(const Mp& x) const { return exp(x); }
};

}  // namespace

std::vector<double> tree_fold_exact(const test::wrong::States& st, std::uint32_t tree_seed) {
  const int D = st.head_size;
  std::vector<State> xs(static_cast<std::size_t>(st.parts()));
  for (int p = 0; p < st.parts(); ++p) {
    xs[p].ms = LseState<Mp>{Mp(st.m[p]), Mp(st.s[p])};
    // An empty state's o is garbage (NaN) in the kernel's buffers; the merge never reads it.
    for (int d = 0; d < D; ++d) xs[p].o[d] = st.s[p] == 0 ? Mp(0) : Mp(st.o_at(p, d));
  }
  std::mt19937 rng(tree_seed);
  std::shuffle(xs.begin(), xs.end(), rng);
  while (xs.size() > 1) {
    std::uniform_int_distribution<std::size_t> pick(0, xs.size() - 2);
    const std::size_t i = pick(rng);
    xs[i].merge(xs[i + 1], MpExp());
    xs.erase(xs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  std::vector<double> out(D, 0.0);
  if (!xs.empty()) {
    for (int d = 0; d < D; ++d) out[d] = xs[0].o[d].convert_to<double>();
  }
  return out;
}

double tree_fold_slack(const test::wrong::States& st, double result) {
  double mo = 0;
  for (int p = 0; p < st.parts(); ++p) {
    if (st.s[p] == 0) continue;
    for (int d = 0; d < st.head_size; ++d) mo = std::max(mo, std::fabs(st.o_at(p, d)));
  }
  return 0x1p-52 * std::fabs(result) + 0x1p-400 * mo;
}

}  // namespace pagedattn::prop
