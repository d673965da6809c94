// Element formats, one table: for each of f32, f16, bf16, fp8_e4m3 and fp8_e5m2 its size,
// name, precision and range, and the same format as the exact reference
// (pagedattn::ref::DType) and the proven bound (pagedattn::bound::Format) name it. Every
// test, the audit, the tools and the fuzz targets read formats here instead of writing
// their own switch. Decoding and storing go through the kernels' exact conversions
// (pagedattn/dtypes.h) with one rule for what has no element format.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "pagedattn/dtypes.h"
#include "pagedattn_bound/bound.h"
#include "pagedattn_ref/reference.h"

namespace pagedattn::testing {

struct FormatTraits {
  DType dtype;
  const char* name;        // dtype_name(): "float32", "float16", ..., "float8_e5m2"
  const char* short_name;  // the flags' and reports' name: "f32", "f16", "bf16", "fp8_e4m3", ...
  std::size_t size;        // bytes per element
  int precision;           // significand bits, the hidden one included
  int min_exponent;        // exponent of the smallest normal
  int max_exponent;        // exponent of the largest binade
  double max_finite;       // largest finite value
  double min_subnormal;    // smallest positive value
  double unit_roundoff;    // 2^-precision (round to nearest)
  bool has_infinity;       // E4M3 has none: its only non-finite value is NaN
  std::uint32_t nan_bits;  // the canonical quiet NaN this project stores
  ref::DType ref;          // the exact reference's name of the format
  bound::Format bound;     // the proven bound's name of the format
};

namespace detail {
// Indexed by DType's first five values (f32, f16, bf16, fp8_e4m3, fp8_e5m2).
extern const FormatTraits kFormats[5];
[[noreturn]] void throw_no_format(DType t);
// Every element of a 16- or 8-bit format as float, decoded once by the kernels' exact
// decoder (pagedattn/dtypes.h); null for f32. Cases are built and read element by element,
// millions per property case: a lookup instead of the decoder's branches and scalbn.
const float* decode_table(DType t);
}  // namespace detail

// The row of an element format. Throws std::invalid_argument naming the dtype for u8 and
// i32: raw bytes and indices hold no element format (an fp8 cache's u8 bytes are read as
// fp8_e4m3 or fp8_e5m2, which cache_element() names). Inline: it is on every element's path.
inline const FormatTraits& traits(DType t) {
  const auto i = static_cast<std::size_t>(t);
  if (i >= sizeof detail::kFormats / sizeof detail::kFormats[0]) detail::throw_no_format(t);
  return detail::kFormats[i];
}

// The bits that are all ones exactly in a non-finite element (sign bit aside): the exponent
// field where the format has infinities, every non-sign bit for fp8_e4m3, whose only
// non-finite value is S.1111.111 (NaN). (bits & mask) == mask tests an encoding.
constexpr std::uint32_t nonfinite_mask(const FormatTraits& f) {
  const int bits = static_cast<int>(f.size) * 8;
  const std::uint32_t magnitude = (std::uint32_t{1} << (bits - 1)) - 1;
  const std::uint32_t mantissa = (std::uint32_t{1} << (f.precision - 1)) - 1;
  return f.has_infinity ? magnitude & ~mantissa : magnitude;
}

// The format whose short_name is `name`; false when none is.
bool parse_short_name(const std::string& name, DType* out);

// The format the cache's elements hold (the scalar type, or the fp8 format), and the
// dtype its tensors are viewed with (the scalar type, or u8 as vLLM stores fp8 caches).
constexpr DType cache_element(DType scalar, CacheFormat cache) {
  return cache == CacheFormat::fp8_e4m3   ? DType::fp8_e4m3
         : cache == CacheFormat::fp8_e5m2 ? DType::fp8_e5m2
                                          : scalar;
}
constexpr DType cache_storage(DType scalar, CacheFormat cache) {
  return cache == CacheFormat::same ? scalar : DType::u8;
}
// vLLM's kv_cache_dtype string of a cache format: "auto", "fp8_e4m3", "fp8_e5m2".
inline const char* kv_cache_dtype(CacheFormat cache) {
  return cache_format_name(cache);
}

// Element `index` of a buffer of format `t`, exactly (every element of these formats is a
// double). Throws as traits() does for u8 and i32.
double decode(DType t, const void* base, std::size_t index);

// The bits of `want` in format `t` (in the low bits): `want` rounded to float, then to `t`
// (round to nearest even; fp8 saturates a finite overflow to its largest finite value, as
// CUDA's __NV_SATFINITE). NaN gives the format's nan_bits; an infinity gives infinity, or
// NaN in E4M3, which has none.
std::uint32_t encode(DType t, double want);
// Stores encode(t, want) as element `index` of a buffer of format `t` and returns the
// value stored.
double store(DType t, void* base, std::size_t index, double want);
// encode(t, values[i]) for i < count, stored as consecutive elements of format `t` at
// `out`: one dispatch on `t` per run instead of per element (the audit's generator
// encodes 2 x 10^8 cache elements).
void encode_run(DType t, const float* values, std::size_t count, void* out);
// float -> binary16 bits, round to nearest even, in integer arithmetic: equal to the
// kernels' float_to_f16_bits for every float (test_formats.cpp), and fast enough for the
// audit's 2 x 10^8 elements (the library's goes through frexp and ldexp).
std::uint16_t fast_f16_bits(float f);

// `v` rounded to float, as a double: the value a float parameter (the reference's scales)
// reads. An out-of-line call on purpose: g++ 12.2 at -O2 drops adjacent double -> float ->
// double round trips when its SLP vectorizer pairs them (two `c.k = (float)s.k;
// c.v = (float)s.v;` store s.k and s.v unrounded; -fno-tree-slp-vectorize keeps them).
double float_value(double v);

// The output format's ulp at a value of that format: the spacing of its binade (0 and
// subnormals: the subnormal quantum; an overflowed rounding: the largest binade's).
double ulp_of(DType t, double value);

}  // namespace pagedattn::testing
