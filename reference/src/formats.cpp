// Decoding from the format formulas and single, direct rounding to a target format.
#include "pagedattn_ref/formats.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace pagedattn::ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// (-1)^sign * 2^(e - bias) * (1 + m / 2^mbits), or the subnormal 2^(1 - bias) * m / 2^mbits.
double ieee_like(unsigned sign, unsigned e, unsigned m, int mbits, int bias) {
  double mag = e == 0 ? std::ldexp(double(m), 1 - bias - mbits)
                      : std::ldexp(double(m + (1u << mbits)), int(e) - bias - mbits);
  return sign ? -mag : mag;
}

}  // namespace

const char* to_string(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::fp8_e4m3:
      return "fp8_e4m3";
    case DType::fp8_e5m2:
      return "fp8_e5m2";
  }
  return "?";
}

double decode_f16(uint16_t b) {
  unsigned s = b >> 15, e = (b >> 10) & 31, m = b & 1023;
  if (e == 31) return m ? kNaN : (s ? -kInf : kInf);
  return ieee_like(s, e, m, 10, 15);
}

double decode_bf16(uint16_t b) {
  return decode_f32(uint32_t(b) << 16);
}

double decode_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

double decode_e4m3(uint8_t b) {
  unsigned s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return kNaN;
  return ieee_like(s, e, m, 3, 7);
}

double decode_e5m2(uint8_t b) {
  unsigned s = b >> 7, e = (b >> 2) & 31, m = b & 3;
  if (e == 31) return m ? kNaN : (s ? -kInf : kInf);
  return ieee_like(s, e, m, 2, 15);
}

const Format kDouble{53, -1074, std::numeric_limits<double>::max()};

Format format_of(DType out) {
  switch (out) {
    case DType::f32:
      return {24, -149, double(std::numeric_limits<float>::max())};
    case DType::f16:
      return {11, -24, 65504.0};
    case DType::bf16:
      return {8, -133, std::ldexp(255.0, 120)};  // (2 - 2^-7) * 2^127
    default:
      throw std::invalid_argument(std::string("out_dtype: ") + to_string(out) +
                                  " is not an output type (allowed: f32, f16, bf16)");
  }
}

// Scale x so the format's quantum at |x| becomes 1, round the integer part ties-to-even by hand
// (no dependence on the FP environment's rounding mode), scale back. Every step is exact in double
// for P <= 53, so this is one rounding of x, straight to the format.
double round_to_format(double x, const Format& f) {
  if (!std::isfinite(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);  // 2^(e-1) <= |x| < 2^e
  int qe = e - f.P > f.qmin ? e - f.P : f.qmin;
  double t = std::ldexp(std::fabs(x), -qe);  // < 2^P, exact
  double fl = std::floor(t), frac = t - fl;  // exact
  double r = fl;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0)) r = fl + 1;
  double mag = std::ldexp(r, qe);
  if (mag > f.maxval) mag = kInf;
  return x < 0 ? -mag : mag;
}

uint32_t nan_bits(DType out) {
  switch (out) {
    case DType::f32:
      return 0x7FC00000u;
    case DType::f16:
      return 0x7E00u;
    case DType::bf16:
      return 0x7FC0u;
    default:
      throw std::invalid_argument("out_dtype: allowed f32, f16, bf16");
  }
}

uint32_t encode_bits(double v, DType out) {
  if (std::isnan(v)) return nan_bits(out);
  if (out == DType::f32 || out == DType::bf16) {
    float f = float(v);  // exact: v is representable
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return out == DType::f32 ? b : b >> 16;
  }
  if (out != DType::f16) throw std::invalid_argument("out_dtype: allowed f32, f16, bf16");
  uint32_t sign = std::signbit(v) ? 0x8000u : 0;
  double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00u;
  if (a < std::ldexp(1.0, -14)) return sign | uint32_t(std::ldexp(a, 24));  // subnormal or zero
  int e;
  double fr = std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
  uint32_t mant = uint32_t(std::ldexp(fr, 11)) - 1024u;
  return sign | (uint32_t(e - 1 + 15) << 10) | mant;
}

std::vector<uint16_t> Output::bits16() const {
  std::vector<uint16_t> r(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) r[i] = uint16_t(bits[i]);
  return r;
}

}  // namespace pagedattn::ref
