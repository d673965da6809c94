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

float element_value(DType dtype, const void* data, std::int64_t index) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  switch (dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, bytes + 4 * index, 4);
      return f;
    }
    case DType::f16:
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, bytes + 2 * index, 2);
      return dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(bytes[index]);
    case DType::fp8_e5m2:
      return fp8_e5m2_to_float(bytes[index]);
    default:
      return 0;  // u8 / i32 hold no floating-point values
  }
}

std::string first_nonfinite_input(const LiveInputs& in) {
  std::ostringstream o;
  if (!std::isfinite(in.scale)) {
    o << "scale = " << text(static_cast<float>(in.scale));
    return o.str();
  }
  const std::int64_t S = in.num_seqs, H = in.num_heads, D = in.head_size, B = in.block_size;
  const std::int64_t KVH = in.num_kv_heads, group = H / KVH;
  const std::int64_t x = 16 / static_cast<std::int64_t>(dtype_size(in.cache));
  for (std::int64_t s = 0; s < S; ++s) {
    const std::int64_t len = in.seq_lens[s];
    if (len <= 0) continue;
    for (std::int64_t h = 0; h < H; ++h) {
      if (in.alibi_slopes && !std::isfinite(in.alibi_slopes[h])) {
        o << "alibi_slopes[" << h << "] = " << text(in.alibi_slopes[h]) << " (seq " << s << ")";
        return o.str();
      }
      for (std::int64_t d = 0; d < D; ++d) {
        const float v = element_value(in.scalar, in.query, (s * H + h) * D + d);
        if (!std::isfinite(v)) {
          o << "query[" << s << "][" << h << "][" << d << "] = " << text(v);
          return o.str();
        }
      }
    }
    for (std::int64_t t = 0; t < len; ++t) {
      const std::int64_t block = in.block_tables[s * in.max_blocks_per_seq + t / B];
      const std::int64_t slot = t % B;
      for (std::int64_t kvh = 0; kvh < KVH; ++kvh) {
        for (std::int64_t d = 0; d < D; ++d) {
          const std::int64_t k = (((block * KVH + kvh) * (D / x) + d / x) * B + slot) * x + d % x;
          const std::int64_t v = ((block * KVH + kvh) * D + d) * B + slot;
          for (auto [name, data, index] : {std::tuple{"key_cache", in.key_cache, k},
                                           std::tuple{"value_cache", in.value_cache, v}}) {
            const float e = element_value(in.cache, data, index);
            if (!std::isfinite(e)) {
              o << name << "[block " << block << "][kv head " << kvh << "][dim " << d << "][slot "
                << slot << "] = " << text(e) << " (seq " << s << ", token " << t
                << ", read by heads " << kvh * group << ".." << (kvh + 1) * group - 1 << ")";
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
    const float v = element_value(dtype, out, i);
    if (std::isfinite(v)) continue;
    std::ostringstream o;
    o << name << "[" << i / (num_heads * head_size) << "][" << (i / head_size) % num_heads << "]["
      << i % head_size << "] = " << text(v);
    return o.str();
  }
  return "";
}

}  // namespace pagedattn::audit
