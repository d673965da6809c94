#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "pagedattn_testing/mt19937_64.h"
#include "pagedattn_testing/uniform_case.h"

namespace pagedattn::prop {

int Spec::max_seq_len() const {
  return *std::max_element(seq_lens.begin(), seq_lens.end()) + extra_len;
}

Options Spec::options(Numerics numerics) const {
  Options o;
  o.partition_size = partition_size;
  o.numerics = numerics;
  return o;
}

std::ostream& operator<<(std::ostream& os, const Spec& s) {
  static const char* shapes[] = {"uniform", "spread", "ties", "dominant", "steps"};
  static const char* classes[] = {"uniform", "subnormal", "nearmax"};
  os << "{" << dtype_name(s.scalar) << " cache=" << cache_format_name(s.cache);
  if (s.cache != CacheFormat::same) os << " k_scale=" << s.k_scale << " v_scale=" << s.v_scale;
  os << " D=" << s.head_size << " B=" << s.block_size << " kv_heads=" << s.num_kv_heads
     << " gqa=" << s.gqa << (s.alibi ? " alibi" : "") << " P=" << s.partition_size << " seq_lens=[";
  for (std::size_t i = 0; i < s.seq_lens.size(); ++i) os << (i ? "," : "") << s.seq_lens[i];
  os << "] extra_len=" << s.extra_len
     << (s.layout == BlockLayout::repeated ? " blocks=repeated" : " blocks=distinct")
     << (s.tight_table ? " table=tight" : "") << " logits=" << shapes[static_cast<int>(s.logits)];
  if (s.logits != LogitShape::uniform) os << "(span=" << s.span << " offset=" << s.offset << ")";
  os << " q_lanes=" << classes[static_cast<int>(s.q_lanes)]
     << " v=" << classes[static_cast<int>(s.v_class)] << " seed=" << s.seed
     << " profile=" << s.profile << "}";
  return os;
}

namespace {

double class_value(testing::Mt19937_64& rng, ValueClass c, DType scalar, CacheFormat cache,
                   double scale) {
  auto u = [&rng] { return testing::uniform_real(rng, -1, 1); };
  const testing::FormatTraits& f = traits(testing::cache_element(scalar, cache));
  switch (c) {
    case ValueClass::subnormal: {
      const double tiny = f.min_subnormal * scale;
      switch (rng() % 4) {
        case 0:
          return 0.0;
        case 1:
          return -0.0;
        default:  // a few quanta up to well into the subnormal range
          return tiny * static_cast<double>(1 + rng() % 64) * (rng() % 2 ? 1 : -1);
      }
    }
    case ValueClass::nearmax: {
      // Within the output format too (fp8 * v_scale can pass f16's 65504): a finite exact
      // output must be representable for "finite in, finite out" to be a claim.
      // fp8 rounds the value to 2 (e5m2) or 3 mantissa bits, up by at most 2^-3: 0.75 keeps
      // the stored value below the output format's maximum.
      double mx = std::min(f.max_finite * scale,
                           (cache == CacheFormat::same ? 1.0 : 0.75) * traits(scalar).max_finite);
      // f32 and bf16 up to FLT_MAX: the kernels' fp32 sums of e_i v_i overflowed there
      // although the exact output is finite (README.md, "found by properties"); the
      // kernels now rescale on overflow.
      return mx * (0.5 + 0.5 * std::fabs(u())) * (rng() % 2 ? 1 : -1);
    }
    default:
      return u();
  }
}

}  // namespace

Case build(const Spec& s) {
  testing::UniformSpec c;
  c.scalar = s.scalar;
  c.cache = s.cache;
  c.k_scale = s.k_scale;
  c.v_scale = s.v_scale;
  c.head_size = s.head_size;
  c.block_size = s.block_size;
  c.num_heads = s.num_heads();
  c.num_kv_heads = s.num_kv_heads;
  c.seq_lens = s.seq_lens;
  c.max_seq_len = s.max_seq_len();
  c.alibi = s.alibi;
  c.seed = s.seed;
  c.spare_blocks = 2;
  c.tight_table = s.tight_table;
  if (s.logits != LogitShape::uniform) c.scale = 1.0;
  Case p = testing::uniform_case(c);
  // std::mt19937_64's stream (mt19937_64.h), faster
  testing::Mt19937_64 rng(s.seed ^ 0x9e3779b97f4a7c15ULL);
  const int S = static_cast<int>(s.seq_lens.size()), H = s.num_heads(), D = s.head_size;

  if (s.layout == BlockLayout::repeated) {
    // Logical blocks share a small pool of physical blocks (vLLM's prefix sharing; here
    // also within one sequence). Unused table entries keep uniform_case's out-of-range id.
    const int pool = std::max<int>(1, static_cast<int>(p.num_blocks / 2));
    for (int q = 0; q < S; ++q) {
      const int nb = (s.seq_lens[q] + s.block_size - 1) / s.block_size;
      for (int b = 0; b < nb; ++b) p.table(q, b) = static_cast<int>(rng() % pool);
    }
  }

  if (s.logits != LogitShape::uniform) {
    // q = (1, lanes...), k = (x_t, 0, ...): the dot is x_t exactly plus lane * 0 terms
    // (signed zeros and subnormals in q meet zeros in k).
    for (int q = 0; q < S; ++q) {
      for (int h = 0; h < H; ++h) {
        p.set_q(q, h, 0, 1.0);
        for (int d = 1; d < D; ++d) {
          p.set_q(q, h, d, class_value(rng, s.q_lanes, s.scalar, CacheFormat::same, 1.0));
        }
      }
    }
    auto u = [&rng] { return testing::uniform_real(rng, 0, 1); };
    std::vector<double> key_row(static_cast<std::size_t>(D), 0.0);  // (x_t, 0, ..., 0)
    for (int q = 0; q < S; ++q) {
      const int L = s.seq_lens[q];
      const int dominant = L > 0 ? static_cast<int>(rng() % L) : 0;
      std::vector<double> step(L / s.partition_size + 1);
      for (double& st : step) st = 10.0 * static_cast<double>(rng() % 8);
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        for (int t = 0; t < L; ++t) {
          double x = s.offset;
          switch (s.logits) {
            case LogitShape::spread:
              x -= s.span * u();
              break;
            case LogitShape::dominant:
              x += t == dominant ? s.span : 0.0;
              break;
            case LogitShape::steps:
              x += step[t / s.partition_size] + u();
              break;
            default:  // ties
              break;
          }
          const auto [blk, slot] = p.where(q, t);
          key_row[0] = x;
          p.set_key_token(blk, KvHead{kvh}, slot, key_row.data());
        }
      }
    }
  }
  if (s.v_class != ValueClass::uniform) {
    const double vs = s.cache == CacheFormat::same ? 1.0 : p.v_scale;
    std::vector<double> block(static_cast<std::size_t>(s.block_size) * D);
    for (std::int64_t blk = 0; blk < p.num_blocks; ++blk) {
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        for (double& v : block) v = class_value(rng, s.v_class, s.scalar, s.cache, vs);
        p.set_value_block(Block{blk}, KvHead{kvh}, block.data());  // slot-major, as drawn
      }
    }
  }
  return p;
}

std::vector<double> element_bounds(const Case& c, Kernel kernel, const Options& options,
                                   const ref::Output& ex, const std::string& profile) {
  return testing::element_bounds(c, testing::bound_setup(kernel, options, profile), ex);
}

bool same_bits(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

Observation& observation() {
  static thread_local Observation o;
  return o;
}
void observe(double r, const std::string& what, const std::string& tag) {
  Observation& o = observation();
  if (r > o.worst) {
    o.worst = r;
    o.what = what;
  }
  if (!tag.empty()) o.by_tag[tag].add(r);
}
std::string& output_tag() {
  static thread_local std::string t;
  return t;
}

void RatioHistogram::add(double r) {
  if (!(r <= worst)) worst = r;
  if (r == 0) {
    ++zero;
  } else if (!(r <= 1)) {
    ++over;
  } else {
    const int b = static_cast<int>(std::floor((std::log10(r) - kLowDecade) * kPerDecade));
    if (b < 0) {
      ++below;
    } else {
      ++bins[static_cast<std::size_t>(std::min(b, kBins - 1))];
    }
  }
}
void RatioHistogram::add(const RatioHistogram& h) {
  zero += h.zero;
  below += h.below;
  over += h.over;
  for (int i = 0; i < kBins; ++i) bins[i] += h.bins[i];
  if (!(h.worst <= worst)) worst = h.worst;
}

}  // namespace pagedattn::prop
