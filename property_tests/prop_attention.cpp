// Properties of V1, V2 and the reduce on the emulator against the exact reference
// (pagedattn::ref), each named after the theorem it samples (proofs/ ids). Accuracy is
// judged per element against kernel_error_bound (element_bounds, harness.h); exact facts
// are asserted bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include "checks.h"
#include "generators.h"
#include "pagedattn/lse_state.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

constexpr int kMaxD = 256;
using State = PartitionState<float, kMaxD>;

// Merges states in a random order along a random binary tree.
State fold_tree(std::vector<State> xs, std::mt19937& rng) {
  std::shuffle(xs.begin(), xs.end(), rng);
  while (xs.size() > 1) {
    std::uniform_int_distribution<std::size_t> pick(0, xs.size() - 2);
    const std::size_t i = pick(rng);
    State a = xs[i];
    a.merge(xs[i + 1]);
    xs[i] = a;
    xs.erase(xs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  return xs.empty() ? State::empty() : xs[0];
}

std::string show(const Spec& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

// v2_eq_v1: V1, V2 at the case's partition size and V2 at a second one all equal the
// exact result within the bound. Catches any wrong partition split or reduce. One case in
// four runs vLLM's numerics (Numerics::vllm_compatible: epsilon, rounded probabilities,
// partials in the output dtype) against the bound for those choices.
PAGEDATTN_PROPERTY(prop_v2_eq_v1, 200) {
  const Spec s = *gen_spec();
  const int P2 = *gen_partition_size(s.block_size, 1024);
  const bool vllm = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  Problem p = build(s);
  if (vllm) p.c.numerics = Numerics::vllm_compatible;
  RC_TAG(vllm ? "vllm_compatible" : "exact_fp32");
  const ref::Output ex = exact(p);
  assert_within(err_over_bound(p, run(p, Kernel::v1, s.profile).out, ex,
                               element_bounds(p, Kernel::v1, ex, s.profile)),
                "V1");
  assert_within(err_over_bound(p, run(p, Kernel::v2, s.profile).out, ex,
                               element_bounds(p, Kernel::v2, ex, s.profile)),
                "V2");
  Problem q = p;
  q.c.partition_size = P2;
  assert_within(err_over_bound(q, run(q, Kernel::v2, s.profile).out, ex,
                               element_bounds(q, Kernel::v2, ex, s.profile)),
                "V2 at partition size " + std::to_string(P2));
}

// fold_partitions_softmax: each V2 partition state (m, s, o) equals reference_partitions
// within the partition's bound, and folding the kernel's states in any order along any
// tree (lse_state.h's merge) gives the exact output within the bound.
PAGEDATTN_PROPERTY(prop_fold_partitions_softmax, 150) {
  const Spec s = *gen_spec();
  const std::uint32_t tree_seed = *rc::gen::arbitrary<std::uint32_t>();
  const Problem p = build(s);
  const test::Outputs o = run(p, Kernel::v2, s.profile);
  const ref::PartitionStates rp = ref::reference_partitions(to_ref(p), s.partition_size);
  const ref::Output ex = exact(p);
  const std::vector<double> rb = element_bounds(p, Kernel::v2, ex, s.profile);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;
  const int NP = static_cast<int>(o.exp_sums.size()) / (S * H);  // kernel: max_seq_len's
  const double u = std::ldexp(1.0, -24);
  std::mt19937 rng(tree_seed);
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) {
      const RowLogits rl = row_logits(p, q, h);
      std::vector<State> states;
      for (int j = 0; j < NP; ++j) {
        const std::size_t i = (static_cast<std::size_t>(q) * H + h) * NP + j;
        const float m = o.max_logits[i], es = o.exp_sums[i];
        State st;
        st.ms = {m, es};
        for (int d = 0; d < D; ++d) st.o[d] = tmp_at(o, i * D + d);
        states.push_back(st);
        const int t0 = j * s.partition_size, t1 = std::min(p.seq_lens[q], t0 + s.partition_size);
        if (t0 >= p.seq_lens[q]) {  // empty: exactly (-inf, 0, 0)
          RC_ASSERT(m == -INFINITY);
          RC_ASSERT(es == 0.f);
          continue;
        }
        const std::size_t ri = rp.index(q, h, j);
        // The partition's bound, kernels/tests/reference.cpp's terms for its n tokens:
        // logits err by dx = (D + 1) u A + 3 u |x|max, so m by dx; each e_i by
        // (4 + 3.35 R) u + 2 dx relative (__expf within 2 + 1.173|y| ulps of 2u each, and the
        // rounding of y = x - m: R u), s by that plus gamma_n; o by twice that (numerator
        // and denominator) plus (2n + 2) u, relative to max|v|. 1.25: second-order terms.
        const int n = t1 - t0;
        double lo = INFINITY, hi = -INFINITY;
        for (int t = t0; t < t1; ++t) {
          lo = std::min(lo, rl.x[t]);
          hi = std::max(hi, rl.x[t]);
        }
        const double R = hi - lo;
        const double dx = (D + 1) * u * rl.A + 3 * u * rl.max_abs_x;
        const double e_rel = (4 + 3.35 * R) * u + 2 * dx;
        if (!(std::fabs(m - rp.m[ri]) <= 1.25 * dx + std::fabs(rp.m[ri]) * 0x1p-53)) {
          RC_FAIL("partition " + std::to_string(j) + " m " + std::to_string(m) + " exact " +
                  std::to_string(rp.m[ri]));
        }
        const double s_bound = 1.25 * (e_rel + dx + n * u) * rp.s[ri];
        if (!(std::fabs(es - rp.s[ri]) <= s_bound)) {
          RC_FAIL("partition " + std::to_string(j) + " s " + std::to_string(es) + " exact " +
                  std::to_string(rp.s[ri]) + " bound " + std::to_string(s_bound));
        }
        // Plus underflow: n + 4 products that may be subnormal, an absolute 2^-150 each.
        const double o_bound =
            1.25 * (2 * e_rel + (2.0 * n + 2) * u) * rl.max_abs_v + (n + 4) * std::ldexp(1.0, -150);
        for (int d = 0; d < D; ++d) {
          const double want = rp.o[ri * D + d], got = st.o[d];
          const double r = std::fabs(got - want) == 0 ? 0 : std::fabs(got - want) / o_bound;
          observe(r, "partition state o");
          if (!(r <= 1)) {
            RC_FAIL("partition " + std::to_string(j) + " o[" + std::to_string(d) + "] " +
                    std::to_string(got) + " exact " + std::to_string(want));
          }
        }
      }
      // Any tree: V2's element bound covers the states; the tree replaces the reduce. Per
      // level a weight errs by expf (2u), the rounding of m - M, the product, the sum and
      // w / s (5u; the m - M along a path telescope to <= R): e_w <= 5 (P-1) u + R u, the
      // output moves by 2 e_w max|v|, and each level's a1 o1 + a2 o2 adds 3u max|v|.
      const int P = std::max(1, (p.seq_lens[q] + s.partition_size - 1) / s.partition_size);
      double R = 0;
      if (!rl.x.empty()) {
        R = *std::max_element(rl.x.begin(), rl.x.end()) -
            *std::min_element(rl.x.begin(), rl.x.end());
      }
      // Underflow: 2 products per level, eta each.
      const double tree =
          1.25 * (13.0 * (P - 1) + 2 * R) * u * rl.max_abs_v + 2.0 * NP * std::ldexp(1.0, -150);
      const State f = fold_tree(states, rng);
      for (int d = 0; d < D; ++d) {
        const std::size_t i = (static_cast<std::size_t>(q) * H + h) * D + d;
        const double want = ex.value[i];
        const double bound = rb[i] + tree;
        const double err = std::fabs(f.o[d] - want);
        const double r = err == 0 ? 0 : err / bound;
        observe(r, "tree fold");
        if (!(r <= 1)) {
          RC_FAIL("tree fold row " + std::to_string(q * H + h) + " d " + std::to_string(d) + ": " +
                  std::to_string(f.o[d]) + " exact " + std::to_string(want));
        }
      }
    }
  }
}

// denominator_ge_one: with the exact max of its own logits every non-empty partition's
// exp-sum is >= 1 (the max term is exp(0) = 1), exactly, on V2's states.
PAGEDATTN_PROPERTY(prop_denominator_ge_one, 200) {
  const Spec s = *gen_spec();
  const Problem p = build(s);
  const test::Outputs o = run(p, Kernel::v2, s.profile);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads();
  const int NP = static_cast<int>(o.exp_sums.size()) / (S * H);
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) {
      for (int j = 0; j < NP; ++j) {
        const float es = o.exp_sums[(q * H + h) * NP + j];
        if (j * s.partition_size < p.seq_lens[q]) {
          RC_ASSERT(es >= 1.f);
        } else {
          RC_ASSERT(es == 0.f);
        }
      }
    }
  }
}

// shift_invariance: adding c to every logit of every row changes the exact result not at
// all (the reference agrees bit for bit) and the kernels' results only within the bound
// of the shifted problem. The shift rides on a second dot-product lane: q[1] = 1, k[1] = c.
PAGEDATTN_PROPERTY(prop_shift_invariance, 150) {
  Limits lim;
  Spec s = *gen_spec(lim);
  if (s.logits == LogitShape::uniform) s.logits = LogitShape::spread;
  s.q_lanes = ValueClass::uniform;
  const double c = *rc::gen::element(-1000.0, -50.5, 37.25, 100.0, 1024.0);
  Problem p = build(s);
  const ref::Output ex = exact(p);
  Problem sh = p;
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads();
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) set_q(sh, q, h, 1, 1.0);
  }
  for (int blk = 0; blk < p.num_blocks; ++blk) {
    for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
      for (int slot = 0; slot < s.block_size; ++slot) set_k(sh, blk, kvh, slot, 1, c);
    }
  }
  // Zero the lane-1 query in the unshifted problem too, so only the shift differs.
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) set_q(p, q, h, 1, 0.0);
  }
  const ref::Output ex0 = exact(p), ex1 = exact(sh);
  RC_ASSERT(ex0.bits == ex1.bits);
  (void)ex;
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    assert_within(
        err_over_bound(sh, run(sh, k, s.profile).out, ex0, element_bounds(sh, k, ex0, s.profile)),
        k == Kernel::v1 ? "shifted V1" : "shifted V2");
  }
}

// empty_partitions_neutral: a max_seq_len that adds trailing empty partitions changes no
// output bit of V2, and empty states folded in anywhere change no bit of a fold.
PAGEDATTN_PROPERTY(prop_empty_partitions_neutral, 150) {
  Spec s = *gen_spec();
  s.extra_len = 0;
  const int extra = *rc::gen::element(1, 64, 300, 1000);
  const Problem p = build(s);
  Problem wide = p;
  wide.max_seq_len = p.max_seq_len + extra;
  wide.c.max_seq_len = wide.max_seq_len;
  const test::Outputs a = run(p, Kernel::v2, s.profile), b = run(wide, Kernel::v2, s.profile);
  RC_ASSERT(same_bits(a.out_bytes, b.out_bytes));
  const test::Outputs c = run(p, Kernel::v1, s.profile), d = run(wide, Kernel::v1, s.profile);
  RC_ASSERT(same_bits(c.out_bytes, d.out_bytes));
  // Host fold: the same states with empty ones interleaved.
  const int D = s.head_size;
  const int NP =
      static_cast<int>(a.exp_sums.size()) / (static_cast<int>(s.seq_lens.size()) * s.num_heads());
  std::vector<State> xs;
  for (int j = 0; j < NP; ++j) {
    State st;
    st.ms = {a.max_logits[j], a.exp_sums[j]};
    for (int e = 0; e < D; ++e) st.o[e] = tmp_at(a, static_cast<std::size_t>(j) * D + e);
    xs.push_back(st);
  }
  State f1 = State::empty(), f2 = State::empty();
  for (const State& x : xs) {
    f1.merge(x);
    f2.merge(State::empty());
    f2.merge(x);
    f2.merge(State::empty());
  }
  RC_ASSERT(std::memcmp(&f1, &f2, sizeof f1) == 0);
}

// Bitwise invariance under a permutation of the physical blocks: moving every block's
// keys and values to another physical id and rewriting the block tables to match changes
// no output bit of V1 or V2 (the kernels' arithmetic depends on logical positions only).
PAGEDATTN_PROPERTY(prop_block_permutation_bitwise, 125) {
  const Spec s = *gen_spec();
  const std::uint32_t perm_seed = *rc::gen::arbitrary<std::uint32_t>();
  const Problem p = build(s);
  std::vector<int> pi(p.num_blocks);
  std::iota(pi.begin(), pi.end(), 0);
  std::mt19937 rng(perm_seed);
  std::shuffle(pi.begin(), pi.end(), rng);
  Problem q = p;
  const std::size_t kb = p.key_cache.size() / p.num_blocks,
                    vb = p.value_cache.size() / p.num_blocks;
  for (int b = 0; b < p.num_blocks; ++b) {
    std::memcpy(&q.key_cache[pi[b] * kb], &p.key_cache[b * kb], kb);
    std::memcpy(&q.value_cache[pi[b] * vb], &p.value_cache[b * vb], vb);
  }
  for (auto& id : q.block_tables) {
    if (id >= 0 && id < p.num_blocks) id = pi[id];
  }
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    RC_ASSERT(same_bits(run(p, k, s.profile).out_bytes, run(q, k, s.profile).out_bytes));
  }
}

// GQA equals explicitly repeated KV heads: the same problem with every KV head copied for
// each query head it serves (num_kv_heads = num_heads) gives the same bits.
PAGEDATTN_PROPERTY(prop_gqa_repeat_kv, 125) {
  Spec s = *gen_spec();
  if (s.gqa == 1) s.gqa = 2;
  const Problem p = build(s);
  Spec r = s;
  r.num_kv_heads = s.num_heads();
  r.gqa = 1;
  Problem q = build(r);  // same shapes; values replaced below
  q.query = p.query;
  q.q = p.q;
  q.block_tables = p.block_tables;
  q.used_slot = p.used_slot;
  for (int blk = 0; blk < p.num_blocks; ++blk) {
    for (int h = 0; h < r.num_kv_heads; ++h) {
      for (int slot = 0; slot < s.block_size; ++slot) {
        for (int d = 0; d < s.head_size; ++d) {
          set_k(q, blk, h, slot, d, get_k(p, blk, h / s.gqa, slot, d));
          set_v(q, blk, h, slot, d, get_v(p, blk, h / s.gqa, slot, d));
        }
      }
    }
  }
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    RC_ASSERT(same_bits(run(p, k, s.profile).out_bytes, run(q, k, s.profile).out_bytes));
  }
}

// One token: softmax of one logit is 1, so V1 and V2 return the token's value row exactly
// (compared as values: -0 may come back as +0, which are the same real number).
PAGEDATTN_PROPERTY(prop_one_token_exact, 200) {
  Limits lim;
  lim.fp8 = false;  // fp8 rows are decode * v_scale rounded in fp32: not exact
  Spec s = *gen_spec(lim);
  for (int& L : s.seq_lens) L = 1;
  const Problem p = build(s);
  const int H = s.num_heads(), D = s.head_size;
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const test::Outputs o = run(p, k, s.profile);
    for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
      const auto [blk, slot] = where(p, q, 0);
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          const double got = o.out[(static_cast<std::size_t>(q) * H + h) * D + d];
          RC_ASSERT(got == get_v(p, blk, h / s.gqa, slot, d));
        }
      }
    }
  }
}

// one_token_exact under vLLM's epsilon (Numerics::vllm_compatible, f32: probabilities and
// partials are already f32, so only the +1e-6 in the denominators acts): one token has
// e = exp(0) = 1 = s, so V1 and V2 (one partition: its partial is the output, as in vLLM's
// reduce) return fmaf(inv, v, +0) = fl(v * inv) (a -0 becomes +0) with inv = fl(1 / fl(1 + 1e-6f)), bit for bit. The error bound
// admits the epsilon's bias, so only this pins it (in the attention kernel; the reduce's
// own epsilon needs two live partitions, whose weights no closed form gives).
PAGEDATTN_PROPERTY(prop_one_token_epsilon_exact, 100) {
  Limits lim;
  lim.fp8 = false;
  Spec s = *gen_spec(lim);
  s.scalar = DType::f32;
  for (int& L : s.seq_lens) L = 1;
  Problem p = build(s);
  p.c.numerics = Numerics::vllm_compatible;
  const int H = s.num_heads(), D = s.head_size;
  const float one = 1.f, eps = 1e-6f;
  volatile float den = one + eps;  // f32 rounding, as the kernels form it
  const float inv = one / den;
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const test::Outputs o = run(p, k, s.profile);
    for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
      const auto [blk, slot] = where(p, q, 0);
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          const float v = static_cast<float>(get_v(p, blk, h / s.gqa, slot, d));
          // acc = fmaf(p, v, 0): one rounding of inv * v, and -0 + 0 = +0 as the kernel adds
          const float part = std::fma(inv, v, 0.f);
          const float want = part;
          const float got = static_cast<float>(o.out[(static_cast<std::size_t>(q) * H + h) * D + d]);
          if (std::memcmp(&got, &want, sizeof got) != 0)
            RC_FAIL(std::string(k == Kernel::v1 ? "V1" : "V2") + ": got " + std::to_string(got) +
                    " want " + std::to_string(want) + " (v " + std::to_string(v) + ", fl(v*inv) " +
                    std::to_string(part) + ")");
        }
      }
    }
  }
}

// All-equal logits: the output is the mean of the value rows within the bound (the
// reference certifies the mean exactly: its exact-rational path).
PAGEDATTN_PROPERTY(prop_equal_logits_mean, 150) {
  Spec s = *gen_spec();
  s.logits = LogitShape::ties;
  s.alibi = false;
  const Problem p = build(s);
  const ref::Output ex = exact(p);
  const int H = s.num_heads(), D = s.head_size;
  for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
    const int L = p.seq_lens[q];
    if (L == 0 || s.layout == BlockLayout::repeated) continue;  // shared blocks: ties broken
    for (int h = 0; h < H; ++h) {
      for (int d = 0; d < D; ++d) {
        long double mean = 0, mean_abs = 0;
        for (int t = 0; t < L; ++t) {
          const auto [blk, slot] = where(p, q, t);
          mean += get_v(p, blk, h / s.gqa, slot, d);
          mean_abs += std::fabs(get_v(p, blk, h / s.gqa, slot, d));
        }
        const std::size_t i = (static_cast<std::size_t>(q) * H + h) * D + d;
        // The reference's value is the mean: a long double sum of L <= 1024 doubles errs
        // by < 2^-50 of sum |v| (and the reference's own value_err).
        RC_ASSERT(std::fabs(double(mean / L) - ex.value[i]) <=
                  0x1p-50 * double(mean_abs / L) + ex.value_err[i]);
      }
    }
  }
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    assert_within(
        err_over_bound(p, run(p, k, s.profile).out, ex, element_bounds(p, k, ex, s.profile)),
        k == Kernel::v1 ? "ties V1" : "ties V2");
  }
}

// nan_propagation, finite half: no finite input yields a NaN or inf output, on V1 and V2.
PAGEDATTN_PROPERTY(prop_finite_in_finite_out, 200) {
  const Spec s = *gen_spec();
  const Problem p = build(s);
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const test::Outputs o = run(p, k, s.profile);
    for (std::size_t i = 0; i < o.out.size(); ++i) {
      if (!std::isfinite(o.out[i])) {
        RC_FAIL(std::string(k == Kernel::v1 ? "V1" : "V2") + " output " + std::to_string(i) +
                " is " + std::to_string(o.out[i]) + " for " + show(s));
      }
    }
  }
}

// Logits past fp32 (q.k overflows for finite inputs): the kernels recompute q.k on scaled
// elements and saturate the logit to +-FLT_MAX with the SIGN of the true product, so the
// softmax goes to the one token whose q.k overflowed upwards; the others (overflowed
// downwards) get weight exactly 0, as in exact arithmetic. Head 0 of one sequence: q = +-c,
// the chosen token's key = +c * sign(q), every other key = -c * sign(q), c = 2^64 (each
// product 2^128, past FLT_MAX alone). f32 (f16 cannot overflow q.k), no ALiBi.
PAGEDATTN_PROPERTY(prop_overflowing_logits_keep_sign, 60) {
  Limits lim;
  lim.fp8 = false;
  lim.allow_empty = false;
  Spec s = *gen_spec(lim);
  s.scalar = DType::f32;
  s.alibi = false;
  s.layout = BlockLayout::distinct;  // one physical slot per token: each key is its own
  const int L = *rc::gen::inRange(2, 3 * s.block_size + 2);
  s.seq_lens = {L};
  Problem p = build(s);
  const int D = s.head_size, top = *rc::gen::inRange(0, L);
  const std::vector<bool> neg = *rc::gen::container<std::vector<bool>>(D, rc::gen::arbitrary<bool>());
  const double c = std::ldexp(1.0, 64);
  for (int d = 0; d < D; ++d) {
    const double sq = neg[d] ? -1.0 : 1.0;
    test::set_element(p, test::Element::query, 0, 0, 0, d, sq * c);
    for (int t = 0; t < L; ++t) test::set_element(p, test::Element::key, 0, t, 0, d, (t == top ? sq : -sq) * c);
  }
  const auto [blk, slot] = where(p, 0, top);
  for (Kernel k : {Kernel::v1, Kernel::v2}) {
    const test::Outputs o = run(p, k, s.profile);
    for (int d = 0; d < D; ++d) {
      const double want = get_v(p, blk, 0, slot, d);
      if (!(o.out[d] == want))
        RC_FAIL(std::string(k == Kernel::v1 ? "V1" : "V2") + " row 0, d " + std::to_string(d) +
                ": got " + std::to_string(o.out[d]) + ", the top token's value " +
                std::to_string(want));
    }
  }
}

}  // namespace pagedattn::prop
