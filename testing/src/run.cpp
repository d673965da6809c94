#include "pagedattn_testing/run.h"

#include <emu/cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "pagedattn/api.h"
#include "pagedattn/resources.h"

namespace pagedattn::testing {
namespace {

// Emulator device memory holding a copy of a vector (a std::vector's storage has no guard).
template <class T>
class DeviceCopy {
 public:
  explicit DeviceCopy(const std::vector<T>& v) : n_(v.size()) {
    if (n_ == 0) return;
    if (cudaMalloc(&ptr_, n_ * sizeof(T)) != cudaSuccess) {
      throw std::runtime_error("run_kernel: cudaMalloc of " + std::to_string(n_ * sizeof(T)) +
                               " bytes failed");
    }
    std::memcpy(ptr_, v.data(), n_ * sizeof(T));
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() {
    if (ptr_) cudaFree(ptr_);
  }
  T* data() const { return ptr_; }
  void copy_to(std::vector<T>& v) const {
    if (n_) std::memcpy(v.data(), ptr_, n_ * sizeof(T));
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

}  // namespace

Outputs run_kernel(const Case& c, Kernel kernel, const std::string& profile, const Options& options,
                   bool poison) {
  return run_kernel(c, kernel, Backend::emulator(profile), options, poison);
}

Outputs run_kernel(const Case& c, Kernel kernel, const Backend& backend, const Options& options,
                   bool poison) {
  const std::int64_t S = c.num_seqs, H = c.num_heads, D = c.head_size;
  Outputs o;
  o.out_dtype = c.scalar;
  o.out_bytes.assign(S * H * D * traits(c.scalar).size, poison ? 0xff : 0);  // 0xff..: NaN
  const DeviceCopy<std::uint8_t> query(c.query), kc(c.key_cache), vc(c.value_cache);
  const DeviceCopy<std::int32_t> bt(c.block_tables), sl(c.seq_lens);
  const DeviceCopy<float> alibi(c.alibi_slopes);
  const DeviceCopy<std::uint8_t> out(o.out_bytes);
  AttentionCall call = c.call();
  call.query.data = query.data();
  call.key_cache.data = kc.data();
  call.value_cache.data = vc.data();
  call.block_tables.data = bt.data();
  call.seq_lens.data = sl.data();
  call.alibi_slopes.data = alibi.data();  // null without ALiBi: still undefined
  call.out = TensorView::contiguous(out.data(), c.scalar, {S, H, D});
  if (kernel == Kernel::v1) {
    paged_attention(Kernel::v1, call, backend, options);
  } else {
    const std::int64_t P = max_num_partitions(c.max_seq_len, options.partition_size);
    o.num_partitions = static_cast<int>(P);
    o.tmp_dtype = effective_choices(options).partials_in_output_dtype ? c.scalar : DType::f32;
    o.exp_sums.assign(S * H * P, NAN);
    o.max_logits.assign(S * H * P, NAN);
    o.tmp_out.assign(S * H * P * D * traits(o.tmp_dtype).size, poison ? 0xff : 0);
    const DeviceCopy<float> es(o.exp_sums), ml(o.max_logits);
    const DeviceCopy<std::uint8_t> tmp(o.tmp_out);
    call.exp_sums = TensorView::contiguous(es.data(), DType::f32, {S, H, P});
    call.max_logits = TensorView::contiguous(ml.data(), DType::f32, {S, H, P});
    call.tmp_out = TensorView::contiguous(tmp.data(), o.tmp_dtype, {S, H, P, D});
    paged_attention(Kernel::v2, call, backend, options);
    es.copy_to(o.exp_sums);
    ml.copy_to(o.max_logits);
    tmp.copy_to(o.tmp_out);
  }
  out.copy_to(o.out_bytes);
  o.out.resize(S * H * D);
  for (std::size_t i = 0; i < o.out.size(); ++i) o.out[i] = decode(c.scalar, o.out_bytes.data(), i);
  return o;
}

}  // namespace pagedattn::testing
