// The scans behind the non-finite findings: every live element once, first hit wins.
#include "pagedattn_audit/findings.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <tuple>

namespace pagedattn::audit {
namespace {

using testing::Dim;
using testing::KvHead;
using testing::Slot;

std::string text(float v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

// True when some element of [first, first + count) of raw `Bits` elements has every bit of
// `mask` set (testing::nonfinite_mask: the element is inf or NaN).
template <class Bits>
bool any_all_ones(const std::uint8_t* bytes, std::int64_t first, std::int64_t count, Bits mask) {
  bool hit = false;
  for (std::int64_t i = 0; i < count; ++i) {
    Bits b;
    std::memcpy(&b, bytes + (first + i) * static_cast<std::int64_t>(sizeof(Bits)), sizeof(Bits));
    hit |= (b & mask) == mask;
  }
  return hit;
}

// Whether any live key or value element is non-finite: the same elements as the ordered
// scan below (every slot below seq_len of each sequence's blocks, the key's padding chunk
// elements excluded), read as raw bits in runs along the layout instead of decoded one by
// one. The headline case holds 2 x 10^8 of them; the ordered scan, which names the first
// hit, runs only when this finds one.
template <class Bits>
bool any_nonfinite_kv(const testing::Case& in, Bits mask) {
  const testing::KvLayout layout = in.layout();
  const int KVH = in.num_kv_heads, D = in.head_size, B = in.block_size, x = layout.x;
  const std::uint8_t *kc = in.key_cache.data(), *vc = in.value_cache.data();
  for (int s = 0; s < in.num_seqs; ++s) {
    const std::int64_t len = in.seq_lens[s];
    for (std::int64_t first = 0; first < len; first += B) {
      const testing::Physical at = in.where(s, first);
      const int live = static_cast<int>(std::min<std::int64_t>(B, len - first));
      bool hit = false;
      for (int kvh = 0; kvh < KVH; ++kvh) {
        for (int d0 = 0; d0 < D; d0 += x) {
          for (int slot = 0; slot < live; ++slot) {
            hit |= any_all_ones(kc, layout.key(at.block, KvHead{kvh}, Slot{slot}, Dim{d0}),
                                std::min(x, D - d0), mask);
          }
        }
        for (int d = 0; d < D; ++d)
          hit |= any_all_ones(vc, layout.value(at.block, KvHead{kvh}, Slot{0}, Dim{d}), live, mask);
      }
      if (hit) return true;
    }
  }
  return false;
}

bool any_nonfinite_kv(const testing::Case& in) {
  const testing::FormatTraits& f = testing::traits(in.cache_element());
  const std::uint32_t mask = testing::nonfinite_mask(f);
  switch (f.size) {
    case 4:
      return any_nonfinite_kv<std::uint32_t>(in, mask);
    case 2:
      return any_nonfinite_kv<std::uint16_t>(in, static_cast<std::uint16_t>(mask));
    default:  // the fp8 formats
      return any_nonfinite_kv<std::uint8_t>(in, static_cast<std::uint8_t>(mask));
  }
}

}  // namespace

std::string first_nonfinite_input(const testing::Case& in) {
  std::ostringstream o;
  if (!std::isfinite(in.scale)) {
    o << "scale = " << text(static_cast<float>(in.scale));
    return o.str();
  }
  const int H = in.num_heads, D = in.head_size, KVH = in.num_kv_heads, group = H / KVH;
  const bool kv_hit = any_nonfinite_kv(in);
  // Raw elements (not dequantized): a finite scale keeps finite elements finite, and the
  // finding names what the file holds.
  const testing::KvLayout layout = in.layout();
  const DType ce = in.cache_element();
  for (int s = 0; s < in.num_seqs; ++s) {
    const std::int64_t len = in.seq_lens[s];
    if (len <= 0) continue;
    for (int h = 0; h < H; ++h) {
      if (in.has_alibi() && !std::isfinite(in.alibi_slopes[h])) {
        o << "alibi_slopes[" << h << "] = " << text(in.alibi_slopes[h]) << " (seq " << s << ")";
        return o.str();
      }
      for (int d = 0; d < D; ++d) {
        const float v = static_cast<float>(in.q(s, h, d));
        if (!std::isfinite(v)) {
          o << "query[" << s << "][" << h << "][" << d << "] = " << text(v);
          return o.str();
        }
      }
    }
    if (!kv_hit) continue;  // the ordered scan below only names the first hit
    for (std::int64_t t = 0; t < len; ++t) {
      const testing::Physical at = in.where(s, t);
      for (int kvh = 0; kvh < KVH; ++kvh) {
        for (int d = 0; d < D; ++d) {
          const std::int64_t k = layout.key(at.block, KvHead{kvh}, at.slot, Dim{d});
          const std::int64_t v = layout.value(at.block, KvHead{kvh}, at.slot, Dim{d});
          for (auto [name, data, index] : {std::tuple{"key_cache", in.key_cache.data(), k},
                                           std::tuple{"value_cache", in.value_cache.data(), v}}) {
            const double e = testing::decode(ce, data, static_cast<std::size_t>(index));
            if (!std::isfinite(e)) {
              o << name << "[block " << at.block.v << "][kv head " << kvh << "][dim " << d
                << "][slot " << at.slot.v << "] = " << text(static_cast<float>(e)) << " (seq " << s
                << ", token " << t << ", read by heads " << kvh * group << ".."
                << (kvh + 1) * group - 1 << ")";
              return o.str();
            }
          }
        }
      }
    }
  }
  return "";
}

std::string first_nonfinite_output(const std::string& name, DType dtype, const void* out,
                                   std::int64_t num_seqs, std::int64_t num_heads,
                                   std::int64_t head_size) {
  const std::int64_t n = num_seqs * num_heads * head_size;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(testing::decode(dtype, out, static_cast<std::size_t>(i)));
    if (std::isfinite(v)) continue;
    std::ostringstream o;
    o << name << "[" << i / (num_heads * head_size) << "][" << (i / head_size) % num_heads << "]["
      << i % head_size << "] = " << text(v);
    return o.str();
  }
  return "";
}

}  // namespace pagedattn::audit
