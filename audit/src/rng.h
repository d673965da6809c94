// A small counter-based generator: each (seed, stream) pair gives its own sequence, so a
// tensor can be filled block by block on any number of threads with the same result.
#pragma once
#include <cmath>
#include <cstdint>

namespace pagedattn::audit {

inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // `a`, `b`, `c` name the stream (tensor tag, block, head...).
  Rng(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0)
      : state_(mix64(mix64(mix64(seed ^ 0x6175646974ull) ^ a) ^ b) ^ c) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // [0, 1) with 24 random bits: exact in float.
  float unit() { return static_cast<float>(next() >> 40) * 0x1p-24f; }
  // [lo, hi)
  float uniform(float lo, float hi) { return lo + (hi - lo) * unit(); }
  // Standard normal (Box-Muller on 53-bit uniforms).
  double normal() {
    const double u1 = (static_cast<double>(next() >> 11) + 1) * 0x1p-53;
    const double u2 = static_cast<double>(next() >> 11) * 0x1p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // [0, n)
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace pagedattn::audit
