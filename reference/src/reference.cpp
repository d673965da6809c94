// Drivers: certified fast path with per-(seq, head) MPFR fallback; the all-MPFR oracle; the
// exact partition states.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "paths.h"

namespace pagedattn::ref {
namespace {

Output make_output(const Problem& p, DType out) {
  format_of(out);  // validates out_dtype
  Output o;
  o.out_dtype = out;
  o.num_seqs = p.num_seqs;
  o.num_heads = p.num_heads;
  o.head_size = p.head_size;
  size_t n = size_t(p.num_seqs) * p.num_heads * p.head_size;
  o.bits.assign(n, 0);
  o.value.assign(n, 0.0);
  o.value_err.assign(n, 0.0);
  o.value_nearest.assign(n, 1);  // seq_len 0: +0 is exact
  o.cert.assign(n, Cert{});
  return o;
}

void set_nan(Output& o, int s, int h) {
  for (int d = 0; d < o.head_size; ++d) {
    size_t i = o.index(s, h, d);
    o.bits[i] = nan_bits(o.out_dtype);
    o.value[i] = std::numeric_limits<double>::quiet_NaN();
    o.value_nearest[i] = 0;
  }
}

// Round both ends of [y - e, y + e] (widened by an ulp for the rounding of y -/+ e itself).
bool certify(double y, double e, const Format& f, DType out, uint32_t* bits) {
  if (!(e < std::numeric_limits<double>::infinity())) return false;
  double lo = std::nextafter(y - e, -INFINITY), hi = std::nextafter(y + e, INFINITY);
  uint32_t a = encode_bits(round_to_format(lo, f), out);
  uint32_t b = encode_bits(round_to_format(hi, f), out);
  if (a != b) return false;
  *bits = a;
  return true;
}

void fill_from_mp(Output& o, const detail::View& v, int s, int h, const std::vector<int>& dims,
                  bool want_bits, unsigned prec) {
  Format f = format_of(o.out_dtype);
  detail::MpHead r =
      detail::mp_head(v, s, h, 0, v.seq_len(s), dims, want_bits ? &f : nullptr, o.out_dtype, prec);
  if (r.nan) return set_nan(o, s, h);
  for (size_t j = 0; j < dims.size(); ++j) {
    size_t i = o.index(s, h, dims[j]);
    if (want_bits) {
      o.bits[i] = r.elems[j].bits;
      o.cert[i].fallback = true;
      o.cert[i].mp_bits = r.elems[j].mp_bits;
    }
    o.cert[i].exact_rational = o.cert[i].exact_rational || r.elems[j].exact_rational;
    o.value[i] = r.elems[j].nearest;
    o.value_nearest[i] = 1;
    o.value_err[i] = std::fabs(r.elems[j].nearest) * 0x1p-53;  // half an ulp
  }
}

}  // namespace

Output reference_attention(const Problem& p, const Options& opt) {
  detail::View v(p);
  Output o = make_output(p, opt.out_dtype);
  const Format f = format_of(opt.out_dtype);
  const int hs = p.head_size;
  for (int s = 0; s < p.num_seqs; ++s)
    for (int g = 0; g < p.num_kv_heads; ++g) {
      detail::FastGroup fg = detail::fast_group(v, s, g);
      for (int j = 0; j < v.group; ++j) {
        int h = g * v.group + j;
        if (fg.nan[j]) {
          set_nan(o, s, h);
          continue;
        }
        std::vector<int> fallback, all;
        for (int d = 0; d < hs; ++d) {
          size_t i = o.index(s, h, d), k = size_t(j) * hs + d;
          o.value[i] = fg.y[k];
          o.value_err[i] = fg.err[k];
          o.value_nearest[i] = v.seq_len(s) == 0;
          o.cert[i].fast_bound = fg.err[k];
          if (!certify(fg.y[k], fg.err[k], f, opt.out_dtype, &o.bits[i])) fallback.push_back(d);
          all.push_back(d);
        }
        if (v.seq_len(s) == 0) continue;
        if (!fallback.empty()) fill_from_mp(o, v, s, h, fallback, true, opt.mp_precision);
        if (opt.nearest_double) fill_from_mp(o, v, s, h, all, false, opt.mp_precision);
      }
    }
  return o;
}

Output reference_attention_mpfr(const Problem& p, DType out, unsigned precision_bits) {
  detail::View v(p);
  Output o = make_output(p, out);
  std::vector<int> all(p.head_size);
  for (int d = 0; d < p.head_size; ++d) all[d] = d;
  for (int s = 0; s < p.num_seqs; ++s)
    for (int h = 0; h < p.num_heads; ++h) {
      if (v.seq_len(s) == 0) continue;
      fill_from_mp(o, v, s, h, all, true, precision_bits);
      for (int d = 0; d < p.head_size; ++d) o.cert[o.index(s, h, d)].fast_bound = INFINITY;
    }
  return o;
}

PartitionStates reference_partitions(const Problem& p, int P, unsigned precision_bits) {
  detail::View v(p);
  if (P <= 0 || P % p.block_size != 0)
    throw std::invalid_argument("partition_size: must be a positive multiple of block_size (" +
                                std::to_string(p.block_size) + "), got " + std::to_string(P));
  int maxL = 0;
  for (int s = 0; s < p.num_seqs; ++s) maxL = std::max(maxL, v.seq_len(s));
  PartitionStates r;
  r.num_seqs = p.num_seqs;
  r.num_heads = p.num_heads;
  r.head_size = p.head_size;
  r.partition_size = P;
  r.num_partitions = std::max(1, (maxL + P - 1) / P);
  size_t n = size_t(p.num_seqs) * p.num_heads * r.num_partitions;
  r.m.assign(n, -INFINITY);
  r.s.assign(n, 0.0);
  r.o.assign(n * p.head_size, 0.0);
  std::vector<int> all(p.head_size);
  for (int d = 0; d < p.head_size; ++d) all[d] = d;
  for (int s = 0; s < p.num_seqs; ++s)
    for (int h = 0; h < p.num_heads; ++h)
      for (int j = 0; j * P < v.seq_len(s); ++j) {
        int t0 = j * P, t1 = std::min(v.seq_len(s), t0 + P);
        detail::MpHead mh =
            detail::mp_head(v, s, h, t0, t1, all, nullptr, p.scalar_dtype, precision_bits);
        size_t k = r.index(s, h, j);
        r.m[k] = mh.m_nearest;
        r.s[k] = mh.s_nearest;
        for (int d = 0; d < p.head_size; ++d)
          r.o[k * p.head_size + d] = mh.nan ? NAN : mh.elems[d].nearest;
      }
  return r;
}

}  // namespace pagedattn::ref
