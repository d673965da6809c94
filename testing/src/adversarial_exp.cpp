// The adversarial exp model for a whole case (adversarial_exp.h).
#include "pagedattn_testing/adversarial_exp.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "emu/builtins.h"

namespace pagedattn::testing {

AdversarialExp::AdversarialExp(const Case& c, const Magnitudes& m, const std::vector<double>& exact,
                               int partition_size)
    : num_seqs_(c.num_seqs), num_heads_(c.num_heads) {
  const int D = c.head_size;
  if (partition_size > 0) {
    num_partitions_ = static_cast<int>(
        std::max<std::int64_t>(1, (c.max_seq_len + partition_size - 1) / partition_size));
  }
  const std::size_t rows = static_cast<std::size_t>(num_seqs_) * num_heads_;
  target_.assign(rows, 0);
  tables_.assign(rows * (num_partitions_ + 1), {});
  for (int s = 0; s < c.num_seqs; ++s) {
    const std::int64_t L = c.seq_lens[s];
    for (int h = 0; h < c.num_heads; ++h) {
      const std::size_t row = static_cast<std::size_t>(s) * num_heads_ + h;
      const bound::ElementMagnitudes* el = &m.elements[row * D];
      int d_star = 0;
      for (int d = 1; d < D; ++d) {
        if (el[d].dev > el[d_star].dev) d_star = d;
      }
      target_[row] = d_star;
      const double y = exact[row * D + d_star];
      if (L == 0 || !std::isfinite(y)) continue;  // nothing to push (empty or NaN row)
      // The exact logits and target values of the row, as the judge forms them.
      const KvHead kvh{c.kv_head_of(h)};
      const double slope = c.has_alibi() ? c.alibi_slopes[h] : 0.0;
      std::vector<double> x(static_cast<std::size_t>(L)), v(static_cast<std::size_t>(L));
      for (std::int64_t t = 0; t < L; ++t) {
        const auto [blk, slot] = c.where(s, t);
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += c.q(s, h, d) * c.key(blk, kvh, slot, Dim{d});
        x[t] = c.scale * dot + slope * static_cast<double>(t - L + 1);
        v[t] = c.value(blk, kvh, slot, Dim{d_star});
      }
      const std::int64_t part = partition_size > 0 ? partition_size : L;
      const double M = *std::max_element(x.begin(), x.end());
      Table& reduce = tables_[row * (num_partitions_ + 1) + num_partitions_];
      for (std::int64_t t0 = 0, p = 0; t0 < L; t0 += part, ++p) {
        const std::int64_t t1 = std::min(L, t0 + part);
        const double mp = *std::max_element(x.begin() + t0, x.begin() + t1);
        Table& tab = tables_[row * (num_partitions_ + 1) + p];
        double sum = 0, acc = 0;
        for (std::int64_t t = t0; t < t1; ++t) {
          tab.emplace_back(static_cast<float>(x[t] - mp), v[t] > y);
          sum += std::exp(x[t] - mp);
          acc += std::exp(x[t] - mp) * v[t];
        }
        std::sort(tab.begin(), tab.end());
        reduce.emplace_back(static_cast<float>(mp - M), acc / sum > y);
      }
      std::sort(reduce.begin(), reduce.end());
    }
  }
}

emu::math::ExpModel AdversarialExp::model(int max_ulp) const {
  emu::math::ExpModel em;
  em.mode = emu::math::ExpModel::Mode::adversarial;
  em.max_ulp = max_ulp;
  em.up = &AdversarialExp::up;
  em.ctx = this;
  return em;
}

const AdversarialExp::Table& AdversarialExp::table(int seq, int head, int partition) const {
  static const Table none;
  if (seq < 0 || seq >= num_seqs_ || head < 0 || head >= num_heads_ || partition < 0 ||
      partition > num_partitions_)
    return none;
  const std::size_t row = static_cast<std::size_t>(seq) * num_heads_ + head;
  return tables_[row * (num_partitions_ + 1) + partition];
}

bool AdversarialExp::direction(int seq, int head, int partition, float x) const {
  const Table& t = table(seq, head, partition);
  if (t.empty()) return false;
  auto it = std::lower_bound(t.begin(), t.end(), std::make_pair(x, false));
  if (it == t.end()) return t.back().second;
  if (it != t.begin() && std::fabs(std::prev(it)->first - x) < std::fabs(it->first - x)) --it;
  return it->second;
}

// Called from the kernel's fibers (every host thread of the launch at once): reads only.
bool AdversarialExp::up(float x, const void* self) {
  const auto* a = static_cast<const AdversarialExp*>(self);
  const bool one_row = a->num_seqs_ * a->num_heads_ == 1;
  const int head = one_row ? 0 : static_cast<int>(blockIdx.x);
  const int seq = one_row ? 0 : static_cast<int>(blockIdx.y);
  const bool is_reduce = a->num_partitions_ > 1 && gridDim.z == 1;
  const int part = is_reduce ? a->num_partitions_ : static_cast<int>(blockIdx.z);
  return a->direction(seq, head, part, x);
}

}  // namespace pagedattn::testing
