#include "generators.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>
#include "pagedattn/validate.h"

namespace pagedattn::prop {

namespace {
// PAGEDATTN_PROP_ONLY_F32_H200=1: only f32 queries on h200 (warp 32), the one kernel
// instantiation the mutation build recompiles (mutate.py).
bool only_f32_h200() {
  static const bool v = [] {
    const char* e = std::getenv("PAGEDATTN_PROP_ONLY_F32_H200");
    return e && *e == '1';
  }();
  return v;
}
}  // namespace

rc::Gen<DType> gen_scalar() {
  if (only_f32_h200()) return rc::gen::just(DType::f32);
  return rc::gen::element(DType::f32, DType::f16, DType::bf16);
}

rc::Gen<std::string> gen_profile() {
  if (only_f32_h200()) return rc::gen::just(std::string("h200"));
  return rc::gen::element(std::string("h200"), std::string("bi-v100"));
}

rc::Gen<int> gen_head_size() {
  // supported.h's list; the first element is what failures shrink to.
  return rc::gen::elementOf(std::vector<int>(kHeadSizes.begin(), kHeadSizes.end()));
}

rc::Gen<int> gen_block_size() {
  return rc::gen::elementOf(std::vector<int>(kBlockSizes.begin(), kBlockSizes.end()));
}

rc::Gen<int> gen_partition_size(int block_size, int max) {
  std::vector<int> sizes;
  for (int p = 64; p <= std::max(64, max); p += block_size) {
    if (p % block_size == 0) sizes.push_back(p);
  }
  // Powers of two first (vLLM uses 512), then any multiple of the block size.
  return rc::gen::weightedOneOf<int>(
      {{3, rc::gen::element(64, 128, 256)}, {1, rc::gen::elementOf(sizes)}});
}

rc::Gen<int> gen_seq_len(int B, int P, int max_tokens, bool allow_zero) {
  std::vector<int> edges;
  for (int e : {B - 1, B, B + 1, 2 * B - 1, 2 * B + 1, P - 1, P, P + 1, 2 * P - 1, 2 * P, 2 * P + 1,
                3 * P + 1}) {
    if (e >= 1 && e <= max_tokens) edges.push_back(e);
  }
  auto gen = rc::gen::weightedOneOf<int>({
      {4, rc::gen::just(1)},
      {2, rc::gen::inRange(1, B + 2)},
      {4, rc::gen::elementOf(edges)},
      {3, rc::gen::inRange(1, max_tokens + 1)},
  });
  if (!allow_zero) return gen;
  return rc::gen::weightedOneOf<int>({{12, gen}, {1, rc::gen::just(0)}});
}

rc::Gen<double> gen_special(DType scalar, CacheFormat cache, bool non_finite) {
  const testing::FormatTraits& f = traits(testing::cache_element(scalar, cache));
  const double tiny = f.min_subnormal, mx = f.max_finite;
  if (non_finite) {
    // fp8 e4m3 has no infinity: its only poison is NaN (harness.cpp stores inf as NaN).
    return rc::gen::weightedOneOf<double>(
        {{3, rc::gen::just(static_cast<double>(NAN))},
         {1, rc::gen::element(static_cast<double>(INFINITY), -static_cast<double>(INFINITY))}});
  }
  return rc::gen::weightedOneOf<double>({
      {2, rc::gen::element(0.0, -0.0)},
      {2, rc::gen::map(rc::gen::inRange(1, 64), [=](int k) { return k * tiny; })},
      {2, rc::gen::map(rc::gen::inRange(1, 64), [=](int k) { return -k * tiny; })},
      {2, rc::gen::element(mx, -mx, mx * 0.75, -mx * 0.75)},
  });
}

rc::Gen<Spec> gen_spec(const Limits& lim) {
  return rc::gen::exec([lim] {
    Spec s;
    s.scalar = *gen_scalar();
    if (lim.fp8) {
      s.cache = *rc::gen::weightedElement<CacheFormat>(
          {{4, CacheFormat::same}, {1, CacheFormat::fp8_e4m3}, {1, CacheFormat::fp8_e5m2}});
      if (s.cache != CacheFormat::same) {
        s.k_scale = *rc::gen::element(1.0, 0.5, 2.0, 0.0625, 3.0);
        s.v_scale = *rc::gen::element(1.0, 0.25, 4.0, 0.1);
      }
    }
    s.head_size = *gen_head_size();
    // fp8 key caches hold head_size / 16 chunks of 16 bytes (validate.cpp refuses 120).
    if (s.cache != CacheFormat::same && s.head_size % 16 != 0) s.head_size = 128;
    s.block_size = *gen_block_size();
    s.num_kv_heads = *rc::gen::inRange(1, lim.max_kv_heads + 1);
    s.gqa = *rc::gen::element(1, 2, 4);
    s.gqa = std::min(s.gqa, lim.max_gqa);
    s.alibi = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
    s.partition_size = *gen_partition_size(s.block_size, lim.max_partition_size);
    const int max_tokens = s.partition_size * lim.max_partitions;
    const int n = *rc::gen::inRange(1, lim.max_seqs + 1);
    s.seq_lens = *rc::gen::container<std::vector<int>>(
        n, gen_seq_len(s.block_size, s.partition_size, max_tokens, lim.allow_empty));
    if (*std::max_element(s.seq_lens.begin(), s.seq_lens.end()) == 0) s.seq_lens[0] = 1;
    if (lim.allow_empty) {
      s.extra_len = *rc::gen::weightedElement<int>(
          {{4, 0}, {1, 1}, {1, s.partition_size}, {1, 2 * s.partition_size + 3}});
    }
    s.layout = *rc::gen::weightedElement<BlockLayout>(
        {{3, BlockLayout::distinct}, {1, BlockLayout::repeated}});
    if (lim.shaped_logits) {
      s.logits = *rc::gen::weightedElement<LogitShape>({{3, LogitShape::uniform},
                                                        {2, LogitShape::spread},
                                                        {1, LogitShape::ties},
                                                        {1, LogitShape::dominant},
                                                        {1, LogitShape::steps}});
      if (s.logits != LogitShape::uniform) {
        // Spreads past fp32 exp's underflow edge (exp(-103.97) is the last subnormal) and
        // levels far from 0, where exp of an unshifted logit would overflow (> 88.7).
        s.span = *rc::gen::element(1.0, 10.0, 30.0, 80.0, 88.0, 89.0, 104.0, 110.0, 200.0);
        s.offset = *rc::gen::element(0.0, 100.0, -100.0, 1000.0, -3000.0);
        s.q_lanes =
            *rc::gen::element(ValueClass::uniform, ValueClass::subnormal, ValueClass::nearmax);
      }
    }
    s.v_class = lim.nearmax_v ? *rc::gen::element(ValueClass::uniform, ValueClass::subnormal,
                                                  ValueClass::nearmax)
                              : *rc::gen::element(ValueClass::uniform, ValueClass::subnormal);
    s.seed = *rc::gen::inRange<std::uint64_t>(1, 1u << 30);
    s.profile = *gen_profile();
    // Drawn last, so the draws above stay those of earlier seeds. With the longest sequence
    // last, its row ends the block_tables allocation: a kernel reading one entry past a
    // sequence's last block reads past the tensor there (memcheck: a finding).
    s.tight_table = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
    if (s.tight_table) {
      std::iter_swap(std::max_element(s.seq_lens.begin(), s.seq_lens.end()), s.seq_lens.end() - 1);
    }
    return s;
  });
}

}  // namespace pagedattn::prop
