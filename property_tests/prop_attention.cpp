// Properties of V1, V2 and the reduce on the emulator against the exact reference
// (pagedattn::ref), each named after the theorem it samples (proofs/ ids). Accuracy is
// judged per element against kernel_error_bound (element_bounds, harness.h); exact facts
// are asserted bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include "checks.h"
#include "exact_fold.h"
#include "generators.h"
#include "pagedattn/lse_state.h"
#include "pagedattn_bound/interval.h"
#include "pagedattn_bound/state_bounds.h"
#include "registry.h"

namespace pagedattn::prop {
namespace {

constexpr int kMaxD = 256;
using State = PartitionState<float, kMaxD>;

std::string hex(double x) {
  std::ostringstream os;
  os << std::hexfloat << x;
  return os.str();
}

std::string show(const Spec& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// V2's states of one row, as wrong_reductions.h reads them.
test::wrong::States row_states(const Outputs& o, std::size_t row, int D) {
  const int NP = o.num_partitions;
  std::vector<float> tmp(static_cast<std::size_t>(NP) * D);
  for (std::size_t i = 0; i < tmp.size(); ++i) tmp[i] = static_cast<float>(o.tmp(row * NP * D + i));
  return test::wrong::row_states(&o.max_logits[row * NP], &o.exp_sums[row * NP], tmp.data(), NP, D);
}

// The overflow properties' shape: f32 (f16 cannot overflow q.k), no ALiBi, one physical
// slot per token (each key is its own), no empty partitions, no fp8.
Spec overflow_spec() {
  Limits lim;
  lim.fp8 = false;
  lim.allow_empty = false;
  Spec s = *gen_spec(lim);
  s.scalar = DType::f32;
  s.alibi = false;
  s.layout = BlockLayout::distinct;
  return s;
}

// Row 0 (sequence 0, head 0) of every kernel under test is token `top`'s value row, bit for bit.
void assert_row0_is_token(const Case& p, const Spec& s, int top, const Options& options) {
  const auto [blk, slot] = p.where(0, top);
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Outputs o = run(p, k.kernel, k.options(options), s.profile);
    for (int d = 0; d < s.head_size; ++d) {
      const double want = p.value(blk, KvHead{0}, slot, Dim{d});
      if (!(o.out[d] == want))
        RC_FAIL(std::string(k.name) + " row 0, d " + std::to_string(d) + ": got " + hex(o.out[d]) +
                ", the top token's value " + hex(want));
    }
  }
}
void assert_row0_is_token(const Case& p, const Spec& s, int top) {
  assert_row0_is_token(p, s, top, s.options());
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
  RC_TAG(vllm ? "vllm_compatible" : "exact_fp32");
  const testing::Judge judge(build(s));
  const Case& p = judge.input();
  const Options opt = s.options(vllm ? Numerics::vllm_compatible : Numerics::exact_fp32);
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Options o = k.options(opt);
    assert_within(judge.verdict(run(p, k.kernel, o, s.profile).out, k.kernel, o, s.profile),
                  k.name);
  }
  Options o2 = opt;
  o2.partition_size = P2;
  assert_within(judge.verdict(run(p, Kernel::v2, o2, s.profile).out, Kernel::v2, o2, s.profile),
                "V2 at partition size " + std::to_string(P2));
}

// fold_partitions_softmax: each V2 partition state's output equals reference_partitions'
// within the proven bound of the partition's own tokens (V2's attention kernel runs V1's
// body on them: kernel_error_bound for V1 over exactly those tokens bounds the fp32 value
// it stores, before any rounding to the output dtype, so f16/bf16 cases are judged at fp32
// precision), its max and exp-sum within their own per-partition bound
// (bound::partition_state_bound), empty partitions are exactly (-inf, 0), and folding the kernel's
// states in any order along any tree of lse_state.h's merges, in real arithmetic (exact_fold.h),
// gives the exact output within V2's proven bound.
PAGEDATTN_PROPERTY(prop_fold_partitions_softmax, 150) {
  const Spec s = *gen_spec();
  const std::uint32_t tree_seed = *rc::gen::arbitrary<std::uint32_t>();
  const testing::Judge judge(build(s));
  const Case& p = judge.input();
  const Options opt = s.options();
  const Outputs o = run(p, Kernel::v2, opt, s.profile);
  const ref::PartitionStates rp = ref::reference_partitions(p.exact_problem(), s.partition_size);
  const std::vector<double> rb = judge.bounds(testing::bound_setup(Kernel::v2, opt, s.profile));
  testing::BoundSetup v1_setup;  // partition_size 0: V1's bound over the partition's tokens
  v1_setup.warp_size = testing::profile_warp_size(s.profile);
  const bound::KernelConfig v1_config = testing::kernel_config(p, v1_setup);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;
  const int NP = o.num_partitions;  // the kernel's: max_seq_len's
  std::vector<bound::ElementMagnitudes> el(D);
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) {
      const std::size_t row = static_cast<std::size_t>(q) * H + h;
      for (int j = 0; j < NP; ++j) {
        const std::size_t i = row * NP + j;
        const std::int64_t t0 = std::int64_t{j} * s.partition_size;
        const std::int64_t t1 = std::min<std::int64_t>(p.seq_lens[q], t0 + s.partition_size);
        if (t0 >= p.seq_lens[q]) {  // empty: exactly (-inf, 0, 0)
          RC_ASSERT(o.max_logits[i] == -INFINITY);
          RC_ASSERT(o.exp_sums[i] == 0.f);
          continue;
        }
        bound::RowMagnitudes mag;
        if (!testing::row_magnitudes(p, q, h, t0, t1, &mag, el.data())) continue;
        const std::size_t ri = rp.index(q, h, j);
        // The state's max and exp-sum against the exact partition state, within the
        // per-partition part of the proven bound (state_bounds.h; rp.m and rp.s are the
        // nearest doubles: half an ulp more).
        const bound::PartitionStateBound sb = bound::partition_state_bound(v1_config, mag);
        const double m_ex = rp.m[ri], s_ex = rp.s[ri];
        // Their half ulps count against the bound, not in it (ratio_over_bound): the true
        // error is at most the distance to the nearest double plus that half ulp. The
        // exp-sum's relative term is of the exact s, at most s_ex (1 + 2^-52).
        const double m_r = testing::ratio_over_bound(o.max_logits[i], m_ex,
                                                     0x1p-53 * std::fabs(m_ex), sb.max_logit);
        const double s_bound = bound::add_up(
            bound::mul_up(bound::mul_up(sb.exp_sum_rel, s_ex), 1 + 0x1p-52), sb.exp_sum_abs);
        const double s_r = testing::ratio_over_bound(o.exp_sums[i], s_ex, 0x1p-53 * s_ex, s_bound);
        observe(m_r, "partition state m");
        observe(s_r, "partition state s");
        if (!(m_r <= 1) || !(s_r <= 1)) {
          RC_FAIL("partition " + std::to_string(j) + " state (m, s) = (" +
                  std::to_string(o.max_logits[i]) + ", " + std::to_string(o.exp_sums[i]) +
                  ") exact (" + std::to_string(m_ex) + ", " + std::to_string(s_ex) +
                  "): err/bound " + std::to_string(m_r) + ", " + std::to_string(s_r));
        }
        // The row's coefficients once (kernel_error_bound(c, r, e) is by definition
        // element_bound(row_bound(c, r), e), bound.h).
        const bound::RowBound v1_row = bound::row_bound(v1_config, mag);
        for (int d = 0; d < D; ++d) {
          const double want = rp.o[ri * D + d], got = o.tmp(i * D + d);
          bound::ElementMagnitudes m = el[d];
          m.abs_exact = std::fabs(want) * (1 + 0x1p-52);  // rp.o is the nearest double
          const double b = bound::element_bound(v1_row, m).fp32;
          // rp.o is the nearest double: within half an ulp, 2^-53 |want|, of the exact o.
          const double r = testing::ratio_over_bound(got, want, 0x1p-53 * std::fabs(want), b);
          observe(r, "partition state o");
          if (!(r <= 1)) {
            RC_FAIL("partition " + std::to_string(j) + " o[" + std::to_string(d) + "] " +
                    std::to_string(got) + " exact " + std::to_string(want) + " bound " +
                    std::to_string(b));
          }
        }
      }
      // Any tree, in real arithmetic, is the reduce's fold in real arithmetic: within V2's
      // proven bound (plus the oracle's own error, tree_fold_slack).
      const test::wrong::States st = row_states(o, row, D);
      const std::vector<double> f = tree_fold_exact(st, tree_seed);
      for (int d = 0; d < D; ++d) {
        const std::size_t i = row * D + d;
        const double want = judge.exact_output().value[i];
        if (std::isnan(want)) continue;  // a non-finite input: prop_nan_propagation_live's
        const double bound = bound::add_up(rb[i], tree_fold_slack(st, f[d]));
        const double r =
            testing::ratio_over_bound(f[d], want, judge.exact_output().value_err[i], bound);
        observe(r, "tree fold");
        if (!(r <= 1)) {
          RC_FAIL("tree fold row " + std::to_string(row) + " d " + std::to_string(d) + ": " +
                  std::to_string(f[d]) + " exact " + std::to_string(want));
        }
      }
    }
  }
}

// denominator_ge_one: with the exact max of its own logits every non-empty partition's
// exp-sum is >= 1 (the max term is exp(0) = 1), exactly, on V2's states.
PAGEDATTN_PROPERTY(prop_denominator_ge_one, 200) {
  const Spec s = *gen_spec();
  const Case p = build(s);
  const Outputs o = run(p, Kernel::v2, s.options(), s.profile);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads();
  const int NP = o.num_partitions;
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
  Case p = build(s);
  Case sh = p;
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads();
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) sh.set_q(q, h, 1, 1.0);
  }
  for (std::int64_t blk = 0; blk < p.num_blocks; ++blk) {
    for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
      for (int slot = 0; slot < s.block_size; ++slot) {
        sh.set_key(Block{blk}, KvHead{kvh}, Slot{slot}, Dim{1}, c);
      }
    }
  }
  // Zero the lane-1 query in the unshifted problem too, so only the shift differs.
  for (int q = 0; q < S; ++q) {
    for (int h = 0; h < H; ++h) p.set_q(q, h, 1, 0.0);
  }
  const ref::Output ex0 = exact(p), ex1 = exact(sh);
  RC_ASSERT(ex0.bits == ex1.bits);
  assert_kernels_within(sh, ex0, s.options(), s.profile, "shifted");
}

// empty_partitions_neutral: a max_seq_len that adds trailing empty partitions changes no
// output bit of V2, and empty states folded in anywhere change no bit of a fold.
PAGEDATTN_PROPERTY(prop_empty_partitions_neutral, 150) {
  Spec s = *gen_spec();
  s.extra_len = 0;
  const int extra = *rc::gen::element(1, 64, 300, 1000);
  const Case p = build(s);
  Case wide = p;
  wide.max_seq_len = p.max_seq_len + extra;
  const Options opt = s.options();
  const Outputs a = run(p, Kernel::v2, opt, s.profile), b = run(wide, Kernel::v2, opt, s.profile);
  RC_ASSERT(same_bits(a.out_bytes, b.out_bytes));
  const Outputs c = run(p, Kernel::v1, opt, s.profile), d = run(wide, Kernel::v1, opt, s.profile);
  RC_ASSERT(same_bits(c.out_bytes, d.out_bytes));
  // Host fold: the same states with empty ones interleaved.
  const int D = s.head_size;
  const int NP = a.num_partitions;
  std::vector<State> xs;
  for (int j = 0; j < NP; ++j) {
    State st;
    st.ms = {a.max_logits[j], a.exp_sums[j]};
    for (int e = 0; e < D; ++e) {
      st.o[e] = static_cast<float>(a.tmp(static_cast<std::size_t>(j) * D + e));
    }
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
  const Case p = build(s);
  std::vector<int> pi(static_cast<std::size_t>(p.num_blocks));
  std::iota(pi.begin(), pi.end(), 0);
  std::mt19937 rng(perm_seed);
  std::shuffle(pi.begin(), pi.end(), rng);
  Case q = p;
  const std::size_t kb = p.key_cache.size() / p.num_blocks,
                    vb = p.value_cache.size() / p.num_blocks;
  for (std::int64_t b = 0; b < p.num_blocks; ++b) {
    std::memcpy(&q.key_cache[pi[b] * kb], &p.key_cache[b * kb], kb);
    std::memcpy(&q.value_cache[pi[b] * vb], &p.value_cache[b * vb], vb);
  }
  for (auto& id : q.block_tables) {
    if (id >= 0 && id < p.num_blocks) id = pi[id];
  }
  const Options opt = s.options();
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Options o = k.options(opt);
    RC_ASSERT(same_bits(run(p, k.kernel, o, s.profile).out_bytes,
                        run(q, k.kernel, o, s.profile).out_bytes));
  }
}

// GQA equals explicitly repeated KV heads: the same problem with every KV head copied for
// each query head it serves (num_kv_heads = num_heads) gives the same bits.
PAGEDATTN_PROPERTY(prop_gqa_repeat_kv, 125) {
  Spec s = *gen_spec();
  if (s.gqa == 1) s.gqa = 2;
  const Case p = build(s);
  // The repeated problem: p with num_kv_heads = num_heads, KV head h's block chunks (each
  // contiguous in both caches, kv_layout.h) copied byte for byte from p's head h / gqa.
  // Everything else (query, tables, lengths, slopes, scales) is p's.
  Case q = p;
  q.num_kv_heads = s.num_heads();
  const testing::KvLayout from = p.layout(), to = q.layout();
  const std::size_t es = traits(p.cache_element()).size;
  const std::size_t kn = static_cast<std::size_t>(from.key_block_elements() / p.num_kv_heads) * es,
                    vn =
                        static_cast<std::size_t>(from.value_block_elements() / p.num_kv_heads) * es;
  q.key_cache.assign(static_cast<std::size_t>(p.num_blocks * to.key_block_elements()) * es, 0);
  q.value_cache.assign(static_cast<std::size_t>(p.num_blocks * to.value_block_elements()) * es, 0);
  for (std::int64_t blk = 0; blk < p.num_blocks; ++blk) {
    for (int h = 0; h < q.num_kv_heads; ++h) {
      const Block b{blk};
      const KvHead src{h / s.gqa}, dst{h};
      std::memcpy(&q.key_cache[to.key(b, dst, Slot{0}, Dim{0}) * es],
                  &p.key_cache[from.key(b, src, Slot{0}, Dim{0}) * es], kn);
      std::memcpy(&q.value_cache[to.value(b, dst, Slot{0}, Dim{0}) * es],
                  &p.value_cache[from.value(b, src, Slot{0}, Dim{0}) * es], vn);
    }
  }
  const Options opt = s.options();
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Options o = k.options(opt);
    RC_ASSERT(same_bits(run(p, k.kernel, o, s.profile).out_bytes,
                        run(q, k.kernel, o, s.profile).out_bytes));
  }
}

// One token: softmax of one logit is 1, so V1 and V2 return the token's value row exactly
// (compared as values: -0 may come back as +0, which are the same real number).
PAGEDATTN_PROPERTY(prop_one_token_exact, 200) {
  Limits lim;
  lim.fp8 = false;  // fp8 rows are decode * v_scale rounded in fp32: not exact
  Spec s = *gen_spec(lim);
  for (int& L : s.seq_lens) L = 1;
  const Case p = build(s);
  const int H = s.num_heads(), D = s.head_size;
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Outputs o = run(p, k.kernel, k.options(s.options()), s.profile);
    for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
      const auto [blk, slot] = p.where(q, 0);
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          const double got = o.out[(static_cast<std::size_t>(q) * H + h) * D + d];
          RC_ASSERT(got == p.value(blk, KvHead{h / s.gqa}, slot, Dim{d}));
        }
      }
    }
  }
}

// one_token_exact under vLLM's epsilon (Numerics::vllm_compatible, f32: probabilities and
// partials are already f32, so only the +1e-6 in the denominators acts): one token has
// e = exp(0) = 1 = s, so V1 and V2 (one partition: its partial is the output, as in vLLM's
// reduce) return fmaf(inv, v, +0) = fl(v * inv) (a -0 becomes +0) with inv = fl(1 / fl(1 + 1e-6f)),
// bit for bit. The error bound admits the epsilon's bias, so only this pins it (in the attention
// kernel; the reduce's own epsilon needs two live partitions, whose weights no closed form gives).
PAGEDATTN_PROPERTY(prop_one_token_epsilon_exact, 100) {
  Limits lim;
  lim.fp8 = false;
  Spec s = *gen_spec(lim);
  s.scalar = DType::f32;
  for (int& L : s.seq_lens) L = 1;
  const Case p = build(s);
  const Options opt = s.options(Numerics::vllm_compatible);
  const int H = s.num_heads(), D = s.head_size;
  const float one = 1.f, eps = 1e-6f;
  volatile float den = one + eps;  // f32 rounding, as the kernels form it
  const float inv = one / den;
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Outputs o = run(p, k.kernel, k.options(opt), s.profile);
    for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
      const auto [blk, slot] = p.where(q, 0);
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          const float v = static_cast<float>(p.value(blk, KvHead{h / s.gqa}, slot, Dim{d}));
          // acc = fmaf(p, v, 0): one rounding of inv * v, and -0 + 0 = +0 as the kernel adds
          const float part = std::fma(inv, v, 0.f);
          const float want = part;
          const float got =
              static_cast<float>(o.out[(static_cast<std::size_t>(q) * H + h) * D + d]);
          if (std::memcmp(&got, &want, sizeof got) != 0)
            RC_FAIL(std::string(k.name) + ": got " + std::to_string(got) + " want " +
                    std::to_string(want) + " (v " + std::to_string(v) + ", fl(v*inv) " +
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
  const Case p = build(s);
  const ref::Output ex = exact(p);
  const int H = s.num_heads(), D = s.head_size;
  for (int q = 0; q < static_cast<int>(s.seq_lens.size()); ++q) {
    const int L = p.seq_lens[q];
    if (L == 0 || s.layout == BlockLayout::repeated) continue;  // shared blocks: ties broken
    for (int h = 0; h < H; ++h) {
      for (int d = 0; d < D; ++d) {
        long double mean = 0, mean_abs = 0;
        for (int t = 0; t < L; ++t) {
          const auto [blk, slot] = p.where(q, t);
          const double v = p.value(blk, KvHead{h / s.gqa}, slot, Dim{d});
          mean += v;
          mean_abs += std::fabs(v);
        }
        const std::size_t i = (static_cast<std::size_t>(q) * H + h) * D + d;
        // The reference's value is the mean: a long double sum of L <= 1024 doubles errs
        // by < 2^-50 of sum |v| (and the reference's own value_err).
        RC_ASSERT(std::fabs(double(mean / L) - ex.value[i]) <=
                  0x1p-50 * double(mean_abs / L) + ex.value_err[i]);
      }
    }
  }
  assert_kernels_within(p, ex, s.options(), s.profile, "ties");
}

// nan_propagation, finite half: no finite input yields a NaN or inf output, on V1 and V2.
PAGEDATTN_PROPERTY(prop_finite_in_finite_out, 200) {
  const Spec s = *gen_spec();
  const Case p = build(s);
  for (const KernelUnderTest& k : kernels_one_each(p)) {
    const Outputs o = run(p, k.kernel, k.options(s.options()), s.profile);
    for (std::size_t i = 0; i < o.out.size(); ++i) {
      if (!std::isfinite(o.out[i])) {
        RC_FAIL(std::string(k.name) + " output " + std::to_string(i) + " is " +
                std::to_string(o.out[i]) + " for " + show(s));
      }
    }
  }
}

// Logits past fp32 (q.k overflows for finite inputs): the kernels recompute q.k on scaled
// elements and saturate the logit to +-FLT_MAX with the SIGN of the true product, so the
// softmax goes to the one token whose q.k overflowed upwards; the others (overflowed
// downwards) get weight exactly 0, as in exact arithmetic. Head 0 of one sequence: q = +-c,
// the chosen token's key = +c * sign(q), every other key = -c * sign(q), c = 2^64 (each
// product 2^128, past FLT_MAX alone) or, in a case of four, c = FLT_MAX itself: the largest
// finite input, which the slow path must take as finite (its scaled products, 2^116 each,
// sum without overflow) and the finiteness test must not call poisoned (mutant
// device_math.cuh:18:19, |x| < FLT_MAX for <=, gives the row NaN; no other generator draws
// an element of exactly FLT_MAX). f32 (f16 cannot overflow q.k), no ALiBi.
PAGEDATTN_PROPERTY(prop_overflowing_logits_keep_sign, 60) {
  Spec s = overflow_spec();
  const int L = *rc::gen::inRange(2, 3 * s.block_size + 2);
  s.seq_lens = {L};
  Case p = build(s);
  const int D = s.head_size, top = *rc::gen::inRange(0, L);
  const std::vector<bool> neg =
      *rc::gen::container<std::vector<bool>>(D, rc::gen::arbitrary<bool>());
  const bool at_max = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  RC_TAG(at_max ? "c = FLT_MAX" : "c = 2^64");
  const double c =
      at_max ? static_cast<double>(std::numeric_limits<float>::max()) : std::ldexp(1.0, 64);
  for (int d = 0; d < D; ++d) {
    const double sq = neg[d] ? -1.0 : 1.0;
    p.set_q(0, 0, d, sq * c);
    for (int t = 0; t < L; ++t) {
      const auto [blk, slot] = p.where(0, t);
      p.set_key(blk, KvHead{0}, slot, Dim{d}, (t == top ? sq : -sq) * c);
    }
  }
  assert_row0_is_token(p, s, top);
}

// The window between the two: q.k overflows fp32 on the fast path but q.k * scale does not,
// so the slow path's recomputed logit must come back finite and exact enough to order the
// tokens, among themselves and against fast-path tokens. q = (2^64, 0, ...), key t =
// (a_t 2^64, 0, ...): window tokens have a_t in [1, 0.99 / scale) (each product past
// FLT_MAX, each true logit below it), fast-path tokens a_t in [0.5, 0.99]. The top token is
// a window token with the largest a; every other logit lies at least 3e35 below its own, so
// their weights are exactly 0 and the output is the top token's value row, bit for bit. A
// slow path that scales back by one power of two too many (mutant
// attention_phases.cuh:458:47:const, up = 2^71), scales q up (463:25:aor) or divides by the
// scale (465:41:aor) saturates several logits to FLT_MAX, and the tie averages their
// values; one that scales down once too often (458:31:const, down = 2^-71) quarters the
// window logits, and a fast-path token overtakes the top.
PAGEDATTN_PROPERTY(prop_overflow_window_logits_exact, 60) {
  Spec s = overflow_spec();
  s.logits = LogitShape::uniform;  // scale = 2 / sqrt(head_size)
  const int L = *rc::gen::inRange(2, 3 * s.block_size + 2);
  s.seq_lens = {L};
  Case p = build(s);
  const int D = s.head_size, top = *rc::gen::inRange(0, L);
  const double a_max = 0.99 / p.scale;  // 1 / scale = sqrt(head_size) / 2 >= 2.8
  if (!(a_max > 2)) RC_FAIL("the window needs scale < 0.5, got " + hex(p.scale));
  const double a_top = 1 + (a_max - 1) * (*rc::gen::inRange(1, 1001) / 1000.0);
  const double c = std::ldexp(1.0, 64);
  p.set_q(0, 0, 0, c);
  for (int d = 1; d < D; ++d) p.set_q(0, 0, d, 0.0);
  for (int t = 0; t < L; ++t) {
    const auto [blk, slot] = p.where(0, t);
    const double r = *rc::gen::inRange(0, 1001) / 1000.0;
    const bool window = 0.95 * a_top > 1 && *rc::gen::arbitrary<bool>();
    const double a = t == top ? a_top : window ? 1 + (0.95 * a_top - 1) * r : 0.5 + 0.49 * r;
    p.set_key(blk, KvHead{0}, slot, Dim{0}, a * c);
    for (int d = 1; d < D; ++d) p.set_key(blk, KvHead{0}, slot, Dim{d}, 0.0);
  }
  assert_row0_is_token(p, s, top);
}

// The same window with fp8 keys: the slow path's two ways to apply k_scale. A key element
// is an fp8 code v times k_scale = 2^60 and q = (2^64, 0, ...), so q.k = v 2^124, past
// FLT_MAX for v >= 16 and finite below. With vLLM's rounding (round_probabilities: every
// dequantized key rounded to the scalar type, exactly v 2^60 in f32) the fast path forms
// q.k first and overflows on window tokens (16 <= v < 0.99 * 16 / scale), and slow_logit
// scales each dequantized element; with ours the kernels fold k_scale into the logit scale
// (runner.cuh), no fast-path product overflows, and the same tokens must win. The top token
// has the largest window code; the others are window tokens with smaller codes (at least
// one step of the format, 2^122 or more apart in logit) or fast-path tokens (8 <= v < 16),
// one of each where there are two others. Only round_probabilities is on, so the top's
// weight is exactly 1 and the output is its value row bit for bit. Catches the slow path
// dividing by k_scale (mutant attention_phases.cuh:481:55:aor) or dropping it (481:54:scale):
// window logits fall below the fast tokens'; and multiplying where it should scale down
// (481:48:aor): window logits saturate to FLT_MAX together and the tie averages values.
PAGEDATTN_PROPERTY(prop_overflow_window_fp8_keys_exact, 60) {
  Spec s = overflow_spec();
  s.logits = LogitShape::uniform;  // scale = 2 / sqrt(head_size)
  s.cache = *rc::gen::element(CacheFormat::fp8_e4m3, CacheFormat::fp8_e5m2);
  if (s.head_size % 16 != 0) s.head_size = 128;  // 120: 16 fp8 elements per 16 bytes do not tile
  s.k_scale = std::ldexp(1.0, 60);
  s.v_scale = 1;
  const int L = *rc::gen::inRange(2, 3 * s.block_size + 2);
  s.seq_lens = {L};
  Case p = build(s);
  const int D = s.head_size, top = *rc::gen::inRange(0, L);
  // The format's values in [8, 128): 2^e (1 + j / 2^mantissa bits).
  const int mbits = s.cache == CacheFormat::fp8_e4m3 ? 3 : 2;
  std::vector<double> fast, window;
  const double cap = 0.99 * 16 / p.scale;  // v 2^124 scale below FLT_MAX = 2^128 (1 - 2^-24)
  for (int e = 3; e < 7; ++e)
    for (int j = 0; j < (1 << mbits); ++j) {
      const double v = std::ldexp(1.0 + j * std::ldexp(1.0, -mbits), e);
      if (v < 16)
        fast.push_back(v);
      else if (v < cap)
        window.push_back(v);
    }
  if (window.size() < 2) RC_FAIL("the window needs two fp8 codes, scale " + hex(p.scale));
  const std::size_t top_at = *rc::gen::inRange<std::size_t>(1, window.size());
  const double c = std::ldexp(1.0, 64);
  p.set_q(0, 0, 0, c);
  for (int d = 1; d < D; ++d) p.set_q(0, 0, d, 0.0);
  for (int i = 0; i < L; ++i) {
    const int t = (top + i) % L;  // i = 1: a fast token, i = 2: a lower window token
    const bool in_window = i == 2 || (i > 2 && *rc::gen::arbitrary<bool>());
    const double v = i == 0      ? window[top_at]
                     : in_window ? window[*rc::gen::inRange<std::size_t>(0, top_at)]
                                 : fast[*rc::gen::inRange<std::size_t>(0, fast.size())];
    const auto [blk, slot] = p.where(0, t);
    if (p.set_key(blk, KvHead{0}, slot, Dim{0}, v * s.k_scale) != v * s.k_scale)
      RC_FAIL("fp8 key " + hex(v) + " is not a code of " + cache_format_name(s.cache));
    for (int d = 1; d < D; ++d) p.set_key(blk, KvHead{0}, slot, Dim{d}, 0.0);
  }
  Options vllm_rounding = s.options();
  vllm_rounding.vllm_choices.round_probabilities = true;
  assert_row0_is_token(p, s, top, vllm_rounding);
  assert_row0_is_token(p, s, top, s.options());
}

}  // namespace pagedattn::prop
