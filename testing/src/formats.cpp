#include "pagedattn_testing/formats.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedattn::testing {
namespace detail {

const FormatTraits kFormats[5] = {
    {DType::f32, "float32", "f32", 4, 24, -126, 127, FLT_MAX, 0x1p-149, 0x1p-24, true, 0x7fc00000u,
     ref::DType::f32, bound::Format::f32},
    {DType::f16, "float16", "f16", 2, 11, -14, 15, 65504.0, 0x1p-24, 0x1p-11, true, 0x7e00u,
     ref::DType::f16, bound::Format::f16},
    {DType::bf16, "bfloat16", "bf16", 2, 8, -126, 127, 0x1.fep127, 0x1p-133, 0x1p-8, true, 0x7fc0u,
     ref::DType::bf16, bound::Format::bf16},
    {DType::fp8_e4m3, "float8_e4m3fn", "fp8_e4m3", 1, 4, -6, 8, 448.0, 0x1p-9, 0x1p-4, false, 0x7fu,
     ref::DType::fp8_e4m3, bound::Format::fp8_e4m3},
    {DType::fp8_e5m2, "float8_e5m2", "fp8_e5m2", 1, 3, -14, 15, 57344.0, 0x1p-16, 0x1p-3, true,
     0x7fu, ref::DType::fp8_e5m2, bound::Format::fp8_e5m2},
};

void throw_no_format(DType t) {
  throw std::invalid_argument(std::string("pagedattn::testing: dtype ") + dtype_name(t) +
                              " holds no element format (f32, f16, bf16, fp8_e4m3, "
                              "fp8_e5m2; an fp8 cache's uint8 bytes are read as one of the "
                              "fp8 formats)");
}

const float* decode_table(DType t) {
  auto make = [](float (*dec)(std::uint16_t), int count) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (int b = 0; b < count; ++b)
      v[static_cast<std::size_t>(b)] = dec(static_cast<std::uint16_t>(b));
    return v;
  };
  static const std::vector<float>
      f16 = make(f16_bits_to_float, 65536),
      bf16 = make(bf16_bits_to_float, 65536),
      e4m3 = make([](std::uint16_t b) { return fp8_e4m3_to_float(static_cast<std::uint8_t>(b)); },
                  256),
      e5m2 = make([](std::uint16_t b) { return fp8_e5m2_to_float(static_cast<std::uint8_t>(b)); },
                  256);
  switch (t) {
    case DType::f16:
      return f16.data();
    case DType::bf16:
      return bf16.data();
    case DType::fp8_e4m3:
      return e4m3.data();
    case DType::fp8_e5m2:
      return e5m2.data();
    default:
      return nullptr;
  }
}

}  // namespace detail

bool parse_short_name(const std::string& name, DType* out) {
  for (const FormatTraits& f : detail::kFormats) {
    if (name == f.short_name) {
      *out = f.dtype;
      return true;
    }
  }
  return false;
}

double decode(DType t, const void* base, std::size_t i) {
  const auto* bytes = static_cast<const std::uint8_t*>(base);
  switch (traits(t).dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, bytes + 4 * i, 4);
      return f;
    }
    case DType::f16:
    case DType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      return detail::decode_table(t)[h];
    }
    default:  // fp8_e4m3, fp8_e5m2 (traits() refused the rest)
      return detail::decode_table(t)[bytes[i]];
  }
}

std::uint16_t fast_f16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (a >= 0x38800000u) {  // >= 2^-14: normal; rebias the exponent, round 13 bits away
    std::uint32_t m = a - 0x38000000u;
    m += 0xfffu + ((m >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (m >> 13));
  }
  float mag;
  std::memcpy(&mag, &a, 4);  // subnormal: count quanta of 2^-24 (exact scaling), round even
  return static_cast<std::uint16_t>(sign |
                                    static_cast<std::uint32_t>(std::nearbyint(mag * 0x1p24f)));
}

namespace {
// encode()'s body; encode_run inlines it with a constant format and its traits looked up
// once per run.
inline std::uint32_t encode_inline(const FormatTraits& f, DType t, float v) {
  if (std::isnan(v) || (std::isinf(v) && !f.has_infinity)) return f.nan_bits;
  switch (t) {
    case DType::f32: {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      return bits;
    }
    case DType::f16:
      return fast_f16_bits(v);
    case DType::bf16:
      return float_to_bf16_bits(v);
    case DType::fp8_e4m3:
      return float_to_fp8_e4m3(v);
    default:  // fp8_e5m2; its encoder saturates infinities, which the format has
      return std::isinf(v) ? (v > 0 ? 0x7cu : 0xfcu) : float_to_fp8_e5m2(v);
  }
}
}  // namespace

std::uint32_t encode(DType t, double want) {
  return encode_inline(traits(t), t, static_cast<float>(want));
}

namespace {
template <class Bits>
void encode_each(DType t, const float* values, std::size_t count, void* out) {
  auto* o = static_cast<std::uint8_t*>(out);
  const FormatTraits& f = traits(t);
  for (std::size_t i = 0; i < count; ++i) {
    const Bits b = static_cast<Bits>(encode_inline(f, t, values[i]));
    std::memcpy(o + i * sizeof(Bits), &b, sizeof(Bits));  // little-endian host
  }
}
}  // namespace

void encode_run(DType t, const float* values, std::size_t count, void* out) {
  // A constant dtype in each branch, so encode's switch folds to that format's path.
  switch (traits(t).dtype) {
    case DType::f32:
      return encode_each<std::uint32_t>(DType::f32, values, count, out);
    case DType::f16:
      return encode_each<std::uint16_t>(DType::f16, values, count, out);
    case DType::bf16:
      return encode_each<std::uint16_t>(DType::bf16, values, count, out);
    case DType::fp8_e4m3:
      return encode_each<std::uint8_t>(DType::fp8_e4m3, values, count, out);
    default:  // fp8_e5m2 (traits() refused the rest)
      return encode_each<std::uint8_t>(DType::fp8_e5m2, values, count, out);
  }
}

double store(DType t, void* base, std::size_t i, double want) {
  const std::uint32_t bits = encode(t, want);
  std::memcpy(static_cast<std::uint8_t*>(base) + traits(t).size * i, &bits,
              traits(t).size);  // little-endian host
  return decode(t, base, i);
}

double float_value(double v) {
  return static_cast<float>(v);
}

double ulp_of(DType t, double r) {
  const FormatTraits& f = traits(t);
  const double a = std::fabs(r);
  int e = f.min_exponent;
  if (!std::isfinite(a)) {
    e = f.max_exponent;
  } else if (a >= std::ldexp(1.0, f.min_exponent)) {
    e = std::ilogb(a);
  }
  return std::ldexp(1.0, e - f.precision + 1);
}

}  // namespace pagedattn::testing
