// Element-format steps the input generators share: a value rounded to a format, and one
// step of its bit pattern.
#pragma once
#include <cstdint>

#include "pagedattn/dtypes.h"
#include "pagedattn_testing/formats.h"

namespace pagedattn::audit {

// `v` rounded to format `t` (round to nearest even), as a float.
inline float in_format(DType t, double v) {
  const std::uint32_t bits = testing::encode(t, v);
  return static_cast<float>(testing::decode(t, &bits, 0));
}

// v moved by one step of `t`'s bit pattern away from or toward zero (never across it).
inline float nudge(float v, DType t, bool up) {
  std::uint32_t bits = testing::encode(t, v);
  const std::size_t size = testing::traits(t).size;
  const std::uint32_t mag_mask = size == 4 ? 0x7fffffffu : size == 2 ? 0x7fffu : 0x7fu;
  if ((bits & mag_mask) == 0 && !up) return v;
  bits = up ? bits + 1 : bits - 1;
  return static_cast<float>(testing::decode(t, &bits, 0));
}

}  // namespace pagedattn::audit
