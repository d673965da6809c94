// The scans behind the non-finite findings: every live element once, first hit wins.
#include "pagedattn_audit/findings.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <tuple>

namespace pagedattn::audit {
namespace {

std::string text(float v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

}  // namespace

std::string first_nonfinite_input(const testing::Case& in) {
  using testing::Dim;
  using testing::KvHead;
  std::ostringstream o;
  if (!std::isfinite(in.scale)) {
    o << "scale = " << text(static_cast<float>(in.scale));
    return o.str();
  }
  const int H = in.num_heads, D = in.head_size, KVH = in.num_kv_heads, group = H / KVH;
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
