// The library's element type for a torch scalar type: one mapping for the operators
// (torch_ops.cpp) and the judge (torch_judge.cpp), each of which names its own allowed set.
#pragma once
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include "pagedattn/dtypes.h"

namespace pagedattn_torch {

// nullopt where the library has no such element type.
inline c10::optional<pagedattn::DType> library_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
      return pagedattn::DType::f32;
    case c10::kHalf:
      return pagedattn::DType::f16;
    case c10::kBFloat16:
      return pagedattn::DType::bf16;
    case c10::kByte:
      return pagedattn::DType::u8;
    case c10::kInt:
      return pagedattn::DType::i32;
    default:
      return c10::nullopt;
  }
}

}  // namespace pagedattn_torch
