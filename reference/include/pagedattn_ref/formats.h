// Element formats: exact decoding of every bit pattern to double, and correct rounding (ties to
// even) of a double straight to a target format, without passing through another format.
#pragma once

#include <cstdint>

#include "pagedattn_ref/reference.h"

namespace pagedattn::ref {

// Exact values from the format formulas (every one of these is a double exactly).
double decode_f16(uint16_t bits);   // IEEE binary16: 1-5-10, bias 15, inf/NaN at exponent 31
double decode_bf16(uint16_t bits);  // bfloat16: the high half of a binary32
double decode_f32(uint32_t bits);
double decode_e4m3(uint8_t bits);  // OCP E4M3 ("fn"): bias 7, no inf, NaN = S.1111.111, max 448
double decode_e5m2(uint8_t bits);  // OCP E5M2: bias 15, inf/NaN at exponent 31, max 57344

// A rounding target: P significand bits (hidden bit included), quantum 2^qmin for subnormals,
// largest finite value maxval.
struct Format {
  int P;
  int qmin;
  double maxval;
};
Format format_of(DType out);  // f32, f16, bf16
extern const Format kDouble;  // binary64, for "nearest double"

// Round x (any double) to f, ties to even, overflow to infinity. Returns the rounded value (a
// double exactly) and its bit pattern in `bits` (for out_dtype; f32 / f16 / bf16).
double round_to_format(double x, const Format& f);
uint32_t encode_bits(double exactly_representable, DType out);
uint32_t nan_bits(DType out);

}  // namespace pagedattn::ref
