// std::mt19937_64's exact output stream, generated faster: the cases of every property
// are drawn from it (uniform_case), and libstdc++'s engine regenerates its 312 words
// one at a time with a branch per word, a sizeable part of a property case's CPU time.
// Here the regeneration runs on vectors of words (GCC's vector extension): within each
// of its three stretches the words a word depends on were either not yet rewritten or
// rewritten in an earlier stretch, so four at a time give the same words as one at a time.
// Same seeding, same tempering, same min/max: a drop-in UniformRandomBitGenerator whose
// every draw equals std::mt19937_64's with the same seed (test_mt19937_64.cpp compares
// them over millions of draws and across the regenerations' boundaries).
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

namespace pagedattn::testing {

class Mt19937_64 {
 public:
  using result_type = std::uint64_t;
  static constexpr std::size_t kN = 312, kM = 156;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

  explicit Mt19937_64(result_type seed = 5489u) {
    x_[0] = seed;
    for (std::size_t i = 1; i < kN; ++i)
      x_[i] = 6364136223846793005ULL * (x_[i - 1] ^ (x_[i - 1] >> 62)) + i;
    next_ = kN;
  }

  result_type operator()() {
    if (next_ >= kN) regenerate();
    result_type z = x_[next_++];
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    z ^= z >> 43;
    return z;
  }

 private:
  static constexpr result_type kA = 0xB5026F5AA96619E9ULL;
  static constexpr result_type kUpper = ~result_type{0} << 31, kLower = ~kUpper;
  typedef result_type V __attribute__((vector_size(32)));

  // Words out[0..3] from words k[0..4] (old) and far[0..3]: the vectors stay inside (no
  // vector crosses a call, so the build needs no AVX and no ABI note applies).
  static void step4(result_type* out, const result_type* k, const result_type* far) {
    V a, b, f;
    std::memcpy(&a, k, sizeof a);
    std::memcpy(&b, k + 1, sizeof b);
    std::memcpy(&f, far, sizeof f);
    const V y = (a & kUpper) | (b & kLower);
    const V w = f ^ (y >> 1) ^ (-(y & 1) & kA);
    std::memcpy(out, &w, sizeof w);
  }
  static result_type step1(result_type k, result_type k1, result_type far) {
    const result_type y = (k & kUpper) | (k1 & kLower);
    return far ^ (y >> 1) ^ (-(y & 1) & kA);
  }

  void regenerate() {
    static_assert((kN - kM) % 4 == 0, "the first stretch is whole vectors");
    // Words 0 .. n - m - 1 read words k + 1 and k + m, none rewritten yet.
    for (std::size_t k = 0; k < kN - kM; k += 4) step4(x_ + k, x_ + k, x_ + k + kM);
    // Words n - m .. n - 2 read word k + 1 (not rewritten yet) and word k + m - n, which
    // the first stretch rewrote: 152 in vectors, then three.
    constexpr std::size_t kVecEnd = kN - kM + (kM - 1) / 4 * 4;
    for (std::size_t k = kN - kM; k < kVecEnd; k += 4) step4(x_ + k, x_ + k, x_ + k - (kN - kM));
    for (std::size_t k = kVecEnd; k < kN - 1; ++k)
      x_[k] = step1(x_[k], x_[k + 1], x_[k - (kN - kM)]);
    // The last word wraps around to the new word 0.
    x_[kN - 1] = step1(x_[kN - 1], x_[0], x_[kM - 1]);
    next_ = 0;
  }

  result_type x_[kN];
  std::size_t next_;
};

// std::uniform_real_distribution<double>(a, b)(rng) as libstdc++ (the toolchain's
// standard library) computes it: generate_canonical<double, 53> takes one 64-bit draw x and
// returns double(x) / 2^64, or the double below 1 where that rounds to 1; the distribution
// returns canonical * (b - a) + a. Only the uint64-to-double conversion differs from the
// compiled library code: it is done without the compiler's branch on the top bit, which
// half the draws take either way (a misprediction every other draw). Test
// Mt19937_64.UniformRealIsStdsDistribution holds the two to the bit.
template <class G>  // a generator of 64 random bits (Mt19937_64)
double uniform_real(G& rng, double a, double b) {
  static_assert(G::min() == 0 && G::max() == ~std::uint64_t{0}, "64 random bits a draw");
  const std::uint64_t x = rng();
  // Below 2^63 the signed conversion is exact-rounded; above, halving with the low bit
  // kept sticky (round to odd) and doubling rounds the same way, as the compiler's own
  // sequence does. Both computed, one kept by a mask.
  const double low = static_cast<double>(static_cast<std::int64_t>(x & ~(std::uint64_t{1} << 63)));
  const double high = 2.0 * static_cast<double>(static_cast<std::int64_t>((x >> 1) | (x & 1)));
  std::uint64_t lb, hb;
  std::memcpy(&lb, &low, sizeof lb);
  std::memcpy(&hb, &high, sizeof hb);
  const std::uint64_t top = std::uint64_t{0} - (x >> 63);
  const std::uint64_t rb = (lb & ~top) | (hb & top);
  double xd;
  std::memcpy(&xd, &rb, sizeof xd);
  double canonical = xd / 0x1p64;
  if (canonical >= 1.0) canonical = 0x1.fffffffffffffp-1;  // std::nextafter(1.0, 0.0)
  return canonical * (b - a) + a;
}

}  // namespace pagedattn::testing
