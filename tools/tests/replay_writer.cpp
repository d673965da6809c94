#include "replay_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>

#include "pagedattn/dtypes.h"

namespace tools_test {
namespace {

using pagedattn::DType;

// Rounds `f` to the storage type; returns the stored bits (as uint32) and the decoded value.
struct Stored {
  std::uint32_t bits;
  double value;
};

Stored store_scalar(const std::string& t, float f) {
  if (t == "f32") {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return {b, f};
  }
  if (t == "f16") {
    const std::uint16_t b = pagedattn::float_to_f16_bits(f);
    return {b, pagedattn::f16_bits_to_float(b)};
  }
  const std::uint16_t b = pagedattn::float_to_bf16_bits(f);
  return {b, pagedattn::bf16_bits_to_float(b)};
}

Stored store_cache(const ReplaySpec& s, float f) {
  if (s.cache == "auto") return store_scalar(s.scalar, f);
  const double scale = s.kv_scale;
  if (s.cache == "fp8_e4m3") {
    const std::uint8_t b = pagedattn::float_to_fp8_e4m3(static_cast<float>(f / scale));
    return {b, pagedattn::fp8_e4m3_to_float(b) * scale};
  }
  const std::uint8_t b = pagedattn::float_to_fp8_e5m2(static_cast<float>(f / scale));
  return {b, pagedattn::fp8_e5m2_to_float(b) * scale};
}

std::string scalar_descr(const std::string& t) {
  return t == "f32" ? "<f4" : t == "f16" ? "<f2" : "<u2";
}

void put(std::vector<unsigned char>& buf, std::size_t index, std::size_t itemsize,
         std::uint32_t bits) {
  std::memcpy(&buf[index * itemsize], &bits, itemsize);  // little-endian host
}

}  // namespace

npy::Array make_array(const std::string& descr, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes) {
  npy::Array a;
  a.descr = descr;
  a.shape = std::move(shape);
  a.data.resize(bytes);
  if (bytes) std::memcpy(a.data.data(), data, bytes);
  return a;
}

Replay make_replay(const ReplaySpec& spec) {
  Replay r;
  r.spec = spec;
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<float> uni(static_cast<float>(-spec.range),
                                            static_cast<float>(spec.range));
  const int S = static_cast<int>(spec.seq_lens.size()), H = spec.num_heads, KVH = spec.num_kv_heads,
            D = spec.head_size, B = spec.block_size;
  const std::size_t qsize = spec.scalar == "f32" ? 4 : 2;
  const std::size_t csize = spec.cache == "auto" ? qsize : 1;
  const int x = static_cast<int>(16 / csize);
  r.max_len =
      spec.seq_lens.empty() ? 0 : *std::max_element(spec.seq_lens.begin(), spec.seq_lens.end());

  // query
  std::vector<unsigned char> qbuf(static_cast<std::size_t>(S) * H * D * qsize);
  r.q.resize(static_cast<std::size_t>(S) * H * D);
  for (std::size_t i = 0; i < r.q.size(); ++i) {
    const Stored st = store_scalar(spec.scalar, uni(rng));
    put(qbuf, i, qsize, st.bits);
    r.q[i] = st.value;
  }
  r.files["query"] = make_array(scalar_descr(spec.scalar), {S, H, D}, qbuf.data(), qbuf.size());

  // Block tables: every sequence's blocks are a shuffled set of physical ids, with two
  // blocks nobody uses; entries past a sequence's last block hold garbage (never read).
  int max_blocks = 0, total_blocks = 0;
  for (int len : spec.seq_lens) {
    max_blocks = std::max(max_blocks, (len + B - 1) / B);
    total_blocks += (len + B - 1) / B;
  }
  max_blocks += 1;
  const int NB = total_blocks + 2;
  std::vector<std::int32_t> ids(NB);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<std::int32_t> table(static_cast<std::size_t>(S) * max_blocks, 99999);
  int next = 0;
  for (int s = 0; s < S; ++s) {
    for (int b = 0; b < (spec.seq_lens[s] + B - 1) / B; ++b)
      table[s * max_blocks + b] = ids[next++];
  }
  r.files["block_tables"] = make_array("<i4", {S, max_blocks}, table.data(), table.size() * 4);
  std::vector<std::int32_t> lens(spec.seq_lens.begin(), spec.seq_lens.end());
  r.files["seq_lens"] = make_array("<i4", {S}, lens.data(), lens.size() * 4);

  // Caches. Slots no token uses hold NaN (0x7f is NaN in both fp8 formats): a kernel
  // that lets them reach arithmetic fails (vLLM bug #641).
  const std::size_t cache_elems = static_cast<std::size_t>(NB) * KVH * D * B;
  std::vector<unsigned char> kbuf(cache_elems * csize), vbuf(cache_elems * csize);
  const std::uint32_t nan_bits = csize == 4   ? 0x7fc00000u
                                 : csize == 2 ? (spec.scalar == "f16" ? 0x7e00u : 0x7fc0u)
                                              : 0x7fu;
  for (std::size_t i = 0; i < cache_elems; ++i) {
    put(kbuf, i, csize, nan_bits);
    put(vbuf, i, csize, nan_bits);
  }
  r.k.assign(static_cast<std::size_t>(S) * r.max_len * KVH * D, 0);
  r.v.assign(r.k.size(), 0);
  for (int s = 0; s < S; ++s) {
    for (int t = 0; t < spec.seq_lens[s]; ++t) {
      const std::int64_t block = table[s * max_blocks + t / B], off = t % B;
      for (int h = 0; h < KVH; ++h) {
        for (int d = 0; d < D; ++d) {
          const std::size_t logical =
              ((static_cast<std::size_t>(s) * r.max_len + t) * KVH + h) * D + d;
          // key_cache [NB, KVH, D/x, B, x]; value_cache [NB, KVH, D, B]
          const std::size_t ki = (((block * KVH + h) * (D / x) + d / x) * B + off) * x + d % x;
          const std::size_t vi = ((block * KVH + h) * D + d) * B + off;
          const Stored ks = store_cache(spec, uni(rng)), vs = store_cache(spec, uni(rng));
          put(kbuf, ki, csize, ks.bits);
          put(vbuf, vi, csize, vs.bits);
          r.k[logical] = ks.value;
          r.v[logical] = vs.value;
        }
      }
    }
  }
  const std::string cdescr = spec.cache == "auto" ? scalar_descr(spec.scalar) : "|u1";
  r.files["key_cache"] = make_array(cdescr, {NB, KVH, D / x, B, x}, kbuf.data(), kbuf.size());
  r.files["value_cache"] = make_array(cdescr, {NB, KVH, D, B}, vbuf.data(), vbuf.size());

  if (spec.alibi) {
    std::vector<float> slopes(H);
    for (int h = 0; h < H; ++h) slopes[h] = std::ldexp(1.0f, -(h + 1));  // ALiBi's 2^-k
    r.alibi.assign(slopes.begin(), slopes.end());
    r.files["alibi_slopes"] = make_array("<f4", {H}, slopes.data(), slopes.size() * 4);
  }
  return r;
}

std::string write_replay(const Replay& r, const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& [name, a] : r.files) npy::save_atomic(dir + "/" + name + ".npy", a);
  return dir;
}

std::vector<double> reference_output(const Replay& r, double scale) {
  const ReplaySpec& sp = r.spec;
  const int S = static_cast<int>(sp.seq_lens.size()), H = sp.num_heads, KVH = sp.num_kv_heads,
            D = sp.head_size;
  std::vector<double> out(static_cast<std::size_t>(S) * H * D, 0.0);
  for (int s = 0; s < S; ++s) {
    const int L = sp.seq_lens[s];
    if (L == 0) continue;
    for (int h = 0; h < H; ++h) {
      const int kvh = h / (H / KVH);
      std::vector<double> logit(L);
      double m = -INFINITY;
      for (int t = 0; t < L; ++t) {
        double dot = 0;
        for (int d = 0; d < D; ++d) {
          dot += r.q[(static_cast<std::size_t>(s) * H + h) * D + d] *
                 r.k[((static_cast<std::size_t>(s) * r.max_len + t) * KVH + kvh) * D + d];
        }
        logit[t] = scale * dot + (sp.alibi ? r.alibi[h] * (t - L + 1) : 0.0);
        m = std::max(m, logit[t]);
      }
      double sum = 0;
      for (int t = 0; t < L; ++t) sum += (logit[t] = std::exp(logit[t] - m));
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int t = 0; t < L; ++t) {
          acc +=
              logit[t] * r.v[((static_cast<std::size_t>(s) * r.max_len + t) * KVH + kvh) * D + d];
        }
        out[(static_cast<std::size_t>(s) * H + h) * D + d] = acc / sum;
      }
    }
  }
  return out;
}

std::vector<double> decode(const npy::Array& a) {
  std::vector<double> v(static_cast<std::size_t>(a.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (a.descr == "<f4") {
      v[i] = a.as<float>()[i];
    } else if (a.descr == "<f2") {
      v[i] = pagedattn::f16_bits_to_float(a.as<std::uint16_t>()[i]);
    } else if (a.descr == "<u2") {
      v[i] = pagedattn::bf16_bits_to_float(a.as<std::uint16_t>()[i]);
    } else {
      throw std::runtime_error("decode: unexpected dtype " + a.descr);
    }
  }
  return v;
}

}  // namespace tools_test
