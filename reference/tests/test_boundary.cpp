// Results placed on, or within 2^-70 .. 2^-450 of, a rounding boundary: the fast path must not
// certify, the MPFR fallback must, and the bits must be the exact rounding.
#include <gtest/gtest.h>

#include <cmath>

#include "builder.h"

namespace pagedattn::ref::testing {
namespace {

// Two tokens (one block), head 0 reads q = (qv, 0, ...), keys (k0, 0, ...) and (k1, 0, ...), so
// logits are scale*qv*k0 and scale*qv*k1; values a, b in every dimension.
Case two_tokens(DType dt, double qv, double k0, double k1, double a, double b, float scale,
                int len = 2) {
  Spec s;
  s.heads = 1;
  s.kv_heads = 1;
  s.scalar = s.cache = dt;
  s.lens = {len};
  s.scale = scale;
  s.qgen = [qv](std::mt19937_64&, int, int, int d) { return d == 0 ? qv : 0.0; };
  s.kgen = [k0, k1](std::mt19937_64&, int tok, int, int d) {
    return d == 0 ? (tok == 0 ? k0 : k1) : 0.0;
  };
  s.vgen = [a, b](std::mt19937_64&, int tok, int, int) { return tok == 0 ? a : b; };
  return build(s);
}

void expect_all(const Output& o, uint32_t bits, bool fallback, bool rational) {
  for (size_t i = 0; i < o.bits.size(); ++i) {
    EXPECT_EQ(o.bits[i], bits) << i;
    EXPECT_EQ(o.cert[i].fallback, fallback) << i;
    EXPECT_EQ(o.cert[i].exact_rational, rational) << i;
  }
}

TEST(Boundary, ExactMidpointTiesToEven) {
  // Equal logits, values adjacent in f16: the mean is exactly the midpoint; ties to even.
  double a = 1.0, b = 1.0 + 0x1p-10;  // 0x3C00 (even), 0x3C01
  Case c = two_tokens(DType::f16, 1, 0.5, 0.5, a, b, 1.0f);
  Options o;
  o.out_dtype = DType::f16;
  Output r = reference_attention(c.p, o);
  expect_all(r, 0x3C00u, true, true);
  EXPECT_EQ(reference_attention_mpfr(c.p, DType::f16).bits, r.bits);
  // Odd lower neighbour: the tie goes up.
  Case c2 = two_tokens(DType::f16, 1, 0.5, 0.5, b, b + 0x1p-10, 1.0f);
  expect_all(reference_attention(c2.p, o), 0x3C02u, true, true);
}

TEST(Boundary, SingleTokenF32ValueOnF16Midpoint) {
  // f32 cache, one token, value exactly between two f16 values: out = v, a tie.
  Case c = two_tokens(DType::f32, 1, 1, 1, 1.0 + 0x1p-11, 0, 1.0f, 1);
  Options o;
  o.out_dtype = DType::f16;
  expect_all(reference_attention(c.p, o), 0x3C00u, true, true);
  o.out_dtype = DType::bf16;  // 1 + 2^-11 is far from a bf16 midpoint: fast path certifies
  expect_all(reference_attention(c.p, o), 0x3F80u, false, false);
}

TEST(Boundary, WithinTwoToMinus70OfMidpoint) {
  // Logits 2^-70 and 0: out = mid - (b - a)/4 * 2^-70 (1 + O(2^-70)), just below the midpoint.
  double a = 1.0, b = 1.0 + 0x1p-10;
  for (double sign : {1.0, -1.0}) {
    Case c = two_tokens(DType::f32, 0x1p-35 * sign, 0x1p-35, 0, a, b, 1.0f);
    Options o;
    o.out_dtype = DType::f16;
    Output r = reference_attention(c.p, o);
    // sign > 0: token 0 (value a) weighs more: rounds down to a; else up to b.
    expect_all(r, sign > 0 ? 0x3C00u : 0x3C01u, true, false);
    EXPECT_EQ(r.cert[0].mp_bits, 256u);
    EXPECT_EQ(reference_attention_mpfr(c.p, DType::f16).bits, r.bits);
  }
}

TEST(Boundary, F32OutputNearMidpoint) {
  double a = 1.0, b = 1.0 + 0x1p-23;
  Case c = two_tokens(DType::f32, 0x1p-40, 0x1p-40, 0, a, b, 1.0f);
  Options o;
  o.out_dtype = DType::f32;
  Output r = reference_attention(c.p, o);
  expect_all(r, 0x3F800000u, true, false);
}

TEST(Boundary, EscalatesPrecisionPast256Bits) {
  // Logit difference 2^-447 (subnormal f32 q and k, smallest scale): 256 bits cannot separate
  // the result from the midpoint, 1024 can.
  double a = 1.0, b = 1.0 + 0x1p-10;
  Case c = two_tokens(DType::f32, 0x1p-149, 0x1p-149, 0, a, b, 0x1p-149f);
  Options o;
  o.out_dtype = DType::f16;
  Output r = reference_attention(c.p, o);
  expect_all(r, 0x3C00u, true, false);
  EXPECT_EQ(r.cert[0].mp_bits, 1024u);
}

TEST(Boundary, ExactZeroIsPositive) {
  Case c = two_tokens(DType::f16, 1, 0.5, 0.5, 3.0, -3.0, 1.0f);
  for (DType out : {DType::f32, DType::f16, DType::bf16}) {
    Options o;
    o.out_dtype = out;
    expect_all(reference_attention(c.p, o), 0u, true, true);
  }
}

}  // namespace
}  // namespace pagedattn::ref::testing
