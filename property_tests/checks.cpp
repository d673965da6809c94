#include "checks.h"

#include <cmath>
#include <cstring>

namespace pagedattn::prop {

test::Outputs run(const Problem& p, Kernel k, const std::string& profile) {
  return test::run_kernel(p, k, profile);
}

test::Outputs run_v2(const Problem& p, int partition_size, const std::string& profile) {
  Problem q = p;
  q.c.partition_size = partition_size;
  return test::run_kernel(q, Kernel::v2, profile);
}

RowLogits row_logits(const Problem& p, int seq, int head) {
  RowLogits r;
  const int D = p.c.head_size, L = p.seq_lens[seq];
  const int kvh = head / (p.c.num_heads / p.c.num_kv_heads);
  const double* q = &p.q[(static_cast<std::size_t>(seq) * p.c.num_heads + head) * D];
  for (int t = 0; t < L; ++t) {
    const auto [blk, slot] = where(p, seq, t);
    double dot = 0, dot_abs = 0;
    for (int d = 0; d < D; ++d) {
      const double k = get_k(p, blk, kvh, slot, d);
      dot += q[d] * k;
      dot_abs += std::fabs(q[d] * k);
      r.max_abs_v = std::max(r.max_abs_v, std::fabs(get_v(p, blk, kvh, slot, d)));
    }
    double x = p.c.scale * dot;
    if (p.c.alibi) x += p.alibi[head] * static_cast<double>(t - L + 1);
    r.x.push_back(x);
    r.A = std::max(r.A, p.c.scale * dot_abs);
    r.max_abs_x = std::max(r.max_abs_x, std::fabs(x));
  }
  return r;
}

void assert_within(const Err& e, const std::string& what) {
  observe(e.worst, what + ": " + e.where);
  if (!(e.worst <= 1.0))
    RC_FAIL(what + ": error/bound " + std::to_string(e.worst) + " at " + e.where);
}

float tmp_at(const test::Outputs& o, std::size_t i) {
  float f;
  std::memcpy(&f, o.tmp_out.data() + 4 * i, 4);
  return f;
}

}  // namespace pagedattn::prop
