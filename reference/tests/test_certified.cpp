// The certified fast path against the all-MPFR path: equal bits, every element, every dtype.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <string>

#include "builder.h"

namespace pagedattn::ref::testing {
namespace {

const DType kOuts[] = {DType::f32, DType::f16, DType::bf16};

// Runs both paths and compares bits; returns the number of fallbacks.
int compare(const Case& c, DType out, const std::string& what) {
  Options opt;
  opt.out_dtype = out;
  Output fast = reference_attention(c.p, opt);
  Output mp = reference_attention_mpfr(c.p, out, 128);
  int fb = 0;
  for (size_t i = 0; i < fast.bits.size(); ++i) {
    EXPECT_EQ(fast.bits[i], mp.bits[i])
        << what << " out=" << to_string(out) << " elem " << i << " value " << mp.value[i];
    fb += fast.cert[i].fallback;
    if (!std::isnan(mp.value[i]) && !fast.cert[i].fallback) {
      // The fast value lies within its bound of the exact value (whose nearest double is mp).
      EXPECT_LE(std::fabs(fast.value[i] - mp.value[i]),
                fast.value_err[i] + std::fabs(mp.value[i]) * 0x1p-53)
          << what << " elem " << i;
    }
  }
  return fb;
}

Spec base(DType scalar, DType cache, std::vector<int> lens) {
  Spec s;
  s.scalar = scalar;
  s.cache = cache;
  s.lens = std::move(lens);
  return s;
}

TEST(Certified, RandomAllDtypes) {
  int seed = 0;
  for (DType sc : {DType::f32, DType::f16, DType::bf16}) {
    Spec s = base(sc, sc, {1, 16, 33, 0, 70});
    s.seed = ++seed;
    s.alibi = seed % 2;
    Case c = build(s);
    for (DType out : kOuts) compare(c, out, std::string("random ") + to_string(sc));
  }
}

TEST(Certified, WideSpreadAndLargeLogits) {
  for (double sigma : {8.0, 60.0}) {
    Spec s = base(DType::f32, DType::f32, {50});
    s.kgen = [sigma](std::mt19937_64& r, int, int, int) {
      return std::normal_distribution<double>(0, sigma)(r);
    };
    s.scale = 3.0f;  // logits in the hundreds and thousands, both signs
    Case c = build(s);
    for (DType out : kOuts) compare(c, out, "spread " + std::to_string(sigma));
  }
}

TEST(Certified, OneDominantToken) {
  Spec s = base(DType::f16, DType::f16, {48});
  s.qgen = [](std::mt19937_64&, int, int, int) { return 1.0; };
  s.kgen = [](std::mt19937_64& r, int tok, int, int) {
    return tok == 17 ? 8.0 : std::uniform_real_distribution<double>(-0.5, 0.5)(r);
  };
  Case c = build(s);
  for (DType out : kOuts) compare(c, out, "dominant");
}

TEST(Certified, NearTies) {
  // All keys equal but for one last-bit change: logits tie or nearly tie.
  Spec s = base(DType::bf16, DType::bf16, {64});
  s.kgen = [](std::mt19937_64& r, int, int, int d) {
    return d == 0 ? 1.0 + ((r() & 1) ? 0x1p-7 : 0) : 0.25;
  };
  Case c = build(s);
  for (DType out : kOuts) compare(c, out, "near ties");
}

TEST(Certified, ValuesNearF16Max) {
  Spec s = base(DType::f16, DType::f16, {31});
  s.vgen = [](std::mt19937_64& r, int, int, int) {
    static const double vals[] = {65504, 65472, -65504, 65440, 32768};
    return vals[r() % 5];
  };
  Case c = build(s);
  for (DType out : kOuts) compare(c, out, "near max");
  // f32 cache into f16 output: overflow to infinity and the 65520 boundary.
  Spec t = base(DType::f32, DType::f32, {3});
  t.vgen = [](std::mt19937_64& r, int, int, int) { return (r() & 1) ? 65520.0 : 70000.0; };
  Case c2 = build(t);
  compare(c2, DType::f16, "overflow");
}

TEST(Certified, GqaAlibiRepeatedBlocksNanSlots) {
  Spec s = base(DType::f16, DType::f16, {37, 16, 1});
  s.heads = 8;
  s.kv_heads = 2;
  s.alibi = true;
  s.repeat_blocks = true;
  Case c = build(s);
  for (DType out : kOuts) compare(c, out, "gqa alibi repeat");
}

TEST(Certified, Fp8Caches) {
  for (DType cache : {DType::fp8_e4m3, DType::fp8_e5m2})
    for (DType sc : {DType::f16, DType::bf16, DType::f32}) {
      Spec s = base(sc, cache, {45, 32});
      s.k_scale = 0.0123f;
      s.v_scale = 3.75f;
      s.alibi = true;
      Case c = build(s);
      for (DType out : kOuts) compare(c, out, std::string("fp8 ") + to_string(cache));
    }
}

TEST(Certified, BoundaryLengths) {
  Spec s = base(DType::f16, DType::f16, {0, 1, 15, 16, 17, 32, 64, 65});
  s.heads = 2;
  s.kv_heads = 1;
  s.block_size = 8;
  Case c = build(s);
  for (DType out : kOuts) compare(c, out, "boundary lengths");
  Output o = reference_attention(c.p);
  for (int d = 0; d < 32; ++d) EXPECT_EQ(o.bits[o.index(0, 1, d)], 0u);  // seq_len 0: +0
}

TEST(Certified, NanInUsedValueGivesNanRow) {
  Spec s = base(DType::f16, DType::f16, {5});
  s.vgen = [](std::mt19937_64&, int tok, int, int d) { return tok == 2 && d == 3 ? NAN : 1.0; };
  Case c = build(s);
  Output o = reference_attention(c.p);
  EXPECT_EQ(o.bits[o.index(0, 0, 0)], 0x7E00u);
  EXPECT_EQ(reference_attention_mpfr(c.p, DType::f16).bits[o.index(0, 0, 0)], 0x7E00u);
}

TEST(Certified, ExpMatchesDocumentedAccuracy) {
  // The fast path's bound assumes <= 2 ulp for std::exp; check the host's libm on a sweep
  // against the correctly rounded value (its nearest double, via the MPFR path's rounding).
  std::mt19937_64 r(7);
  int worst = 0;
  for (int i = 0; i < 20000; ++i) {
    double d = -std::uniform_real_distribution<double>(0, 700)(r);
    double a = std::exp(d);
    mpfr_t m;
    mpfr_init2(m, 53);
    mpfr_set_d(m, d, MPFR_RNDN);
    mpfr_exp(m, m, MPFR_RNDN);  // correctly rounded
    double cr = mpfr_get_d(m, MPFR_RNDN);
    mpfr_clear(m);
    double diff = std::fabs(a - cr) / (std::nextafter(cr, INFINITY) - cr);
    worst = std::max(worst, int(std::ceil(diff)));
  }
  EXPECT_LE(worst, 2);
}

}  // namespace
}  // namespace pagedattn::ref::testing

namespace pagedattn::ref::testing {
namespace {

// The reference's gather against the test builder's layout: a naive long-double evaluation over
// the logical values agrees to 1e-15 relative (of max |v|).
TEST(Certified, GatherMatchesNaiveEvaluation) {
  for (DType cache : {DType::f16, DType::fp8_e4m3, DType::f32}) {
    Spec s;
    s.scalar = cache == DType::fp8_e4m3 ? DType::bf16 : cache;
    s.cache = cache;
    s.heads = 4;
    s.kv_heads = 2;
    s.head_size = 64;
    s.block_size = 8;
    s.lens = {29, 8};
    s.alibi = true;
    s.k_scale = 0.5f;
    s.v_scale = 2.0f;
    Case c = build(s);
    Options opt;
    opt.out_dtype = DType::f32;
    Output o = reference_attention(c.p, opt);
    const int hs = 64, es = esize(s.scalar);
    for (int sq = 0; sq < 2; ++sq)
      for (int h = 0; h < 4; ++h) {
        int g = h / 2, L = c.lens[sq];
        std::vector<long double> x(L);
        long double m = -INFINITY;
        for (int i = 0; i < L; ++i) {
          int slot = c.slot_of.at({c.bt[sq * c.p.max_blocks_per_seq + i / 8], i % 8});
          long double dot = 0;
          for (int d = 0; d < hs; ++d) {
            uint32_t qb = 0;
            std::memcpy(&qb, &c.q[((size_t(sq) * 4 + h) * hs + d) * es], es);
            double qv = s.scalar == DType::f32   ? decode_f32(qb)
                        : s.scalar == DType::f16 ? decode_f16(uint16_t(qb))
                                                 : decode_bf16(uint16_t(qb));
            dot += (long double)qv * c.klog[(size_t(slot) * 2 + g) * hs + d];
          }
          x[i] = c.p.scale * dot + (long double)c.slopes[h] * (i - L + 1);
          m = std::max(m, x[i]);
        }
        for (int d = 0; d < hs; ++d) {
          long double num = 0, den = 0, vmax = 0;
          for (int i = 0; i < L; ++i) {
            int slot = c.slot_of.at({c.bt[sq * c.p.max_blocks_per_seq + i / 8], i % 8});
            long double w = std::exp(x[i] - m), v = c.vlog[(size_t(slot) * 2 + g) * hs + d];
            num += w * v;
            den += w;
            vmax = std::max(vmax, std::fabs(v));
          }
          EXPECT_NEAR(o.value[o.index(sq, h, d)], double(num / den), double(vmax) * 1e-15)
              << to_string(cache) << " s" << sq << " h" << h << " d" << d;
        }
      }
  }
}

}  // namespace
}  // namespace pagedattn::ref::testing
