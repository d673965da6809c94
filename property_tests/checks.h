// Shared steps of the attention properties: running a kernel, the per-row facts the
// bounds need, and asserting an error-over-bound with the case printed on failure.
#pragma once
#include <rapidcheck.h>

#include <string>
#include <vector>
#include "harness.h"

namespace pagedattn::prop {

test::Outputs run(const Problem& p, Kernel k, const std::string& profile);
// Same problem, another V2 partition size.
test::Outputs run_v2(const Problem& p, int partition_size, const std::string& profile);

// Logits of row (seq, head) in double (exact products, double sums) and the facts of
// kernels/tests/reference.cpp's bound: A = max_t scale * sum_d |q_d k_td|.
struct RowLogits {
  std::vector<double> x;
  double A = 0;
  double max_abs_x = 0;
  double max_abs_v = 0;
};
RowLogits row_logits(const Problem& p, int seq, int head);

// RC_FAIL unless e.worst <= 1; records it for campaigns.
void assert_within(const Err& e, const std::string& what);

// Decodes a V2 tmp_out (f32 in exact numerics) element.
float tmp_at(const test::Outputs& o, std::size_t i);

}  // namespace pagedattn::prop
