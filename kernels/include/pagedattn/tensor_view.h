// A non-owning view of a strided tensor: what a PyTorch binding passes for each
// at::Tensor (data_ptr, dtype, sizes, strides), so the binding stays a thin layer.
// Strides are in elements. A default-constructed view is "no tensor" (vLLM's None).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include "pagedattn/dtypes.h"

namespace pagedattn {

struct TensorView {
  static constexpr int kMaxDims = 6;

  void* data = nullptr;
  DType dtype = DType::f32;
  int ndim = 0;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};

  // A contiguous (row-major) view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape);
  // A view with explicit strides (elements); shape and strides must have equal length.
  static TensorView strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                            std::initializer_list<std::int64_t> strides);

  bool defined() const { return data != nullptr; }
  std::int64_t size(int d) const { return shape[d]; }
  std::int64_t stride(int d) const { return strides[d]; }
  std::int64_t numel() const;
  bool is_contiguous() const;
  // "[2, 8, 128]"
  std::string shape_string() const;
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace pagedattn
