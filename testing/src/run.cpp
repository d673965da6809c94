#include "pagedattn_testing/run.h"

#include <emu/checks.h>
#include <emu/cuda_runtime.h>
#include <emu/profile.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "pagedattn/api.h"
#include "pagedattn/resources.h"

namespace pagedattn::testing {
namespace {

// Emulator device memory holding a copy of a vector (a std::vector's storage has no guard).
// Inside a ReuseInputAllocations scope the allocation comes from, and goes back to, the
// scope's slot for its role when the byte size matches (see run.h); the copy is made
// afresh either way, so a kernel sees the same bytes in an allocation of the same size.
template <class T>
class DeviceCopy {
 public:
  using Slot = ReuseInputAllocations::Slot;
  explicit DeviceCopy(const std::vector<T>& v, Slot* slot = nullptr) : n_(v.size()), slot_(slot) {
    const std::size_t bytes = n_ * sizeof(T);
    // Whether the allocation ends flush against its guard: cudaMalloc does so under
    // memcheck only (else it rounds to 16 bytes), so a kept one serves the same mode.
    memcheck_ = (emu::enabled_checks() & emu::check_memcheck) != 0;
    if (slot_ && slot_->ptr) {  // kept from an earlier call: reused, or freed now
      if (slot_->bytes == bytes && slot_->memcheck == memcheck_ && n_)
        ptr_ = static_cast<T*>(slot_->ptr);
      else
        cudaFree(slot_->ptr);
      slot_->ptr = nullptr;
    }
    if (n_ == 0) return;
    if (!ptr_ && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      throw std::runtime_error("run_kernel: cudaMalloc of " + std::to_string(bytes) +
                               " bytes failed");
    }
    std::memcpy(ptr_, v.data(), bytes);
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() {
    if (!ptr_) return;
    if (slot_) {
      *slot_ = {ptr_, n_ * sizeof(T), memcheck_};
    } else {
      cudaFree(ptr_);
    }
  }
  T* data() const { return ptr_; }
  void copy_to(std::vector<T>& v) const {
    if (n_) std::memcpy(v.data(), ptr_, n_ * sizeof(T));
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
  Slot* slot_;
  bool memcheck_ = false;
};

// The ReuseInputAllocations open on this host thread (the outermost), or null.
thread_local ReuseInputAllocations* t_reuse = nullptr;

}  // namespace

ReuseInputAllocations::ReuseInputAllocations() : outer_(t_reuse) {
  if (!outer_) t_reuse = this;
}

ReuseInputAllocations::~ReuseInputAllocations() {
  if (outer_) return;
  t_reuse = nullptr;
  for (const Slot& s : slots_)
    if (s.ptr) cudaFree(s.ptr);
}

ReuseInputAllocations* ReuseInputAllocations::current() {
  return t_reuse;
}

namespace {
// The backend for a profile name, its profile resolved once per host thread (per name and
// $EMU_PROFILE_SET, the environment resolve_profile reads): a name alone makes every
// launch read and parse the profile's JSON again, about 1% of a property campaign's CPU.
// "" (the current profile, which may change) and names that do not resolve go to the
// kernels as names, so they refuse a bad one with their own message.
Backend emulator_backend(const std::string& profile) {
  if (profile.empty()) return Backend::emulator(profile);
  thread_local std::map<std::pair<std::string, std::string>, Backend> resolved;
  const char* set = std::getenv("EMU_PROFILE_SET");
  const auto key = std::make_pair(profile, std::string(set ? set : ""));
  const auto it = resolved.find(key);
  if (it != resolved.end()) return it->second;
  try {
    return resolved.emplace(key, Backend::emulator(emu::resolve_profile(profile))).first->second;
  } catch (const emu::ProfileError&) {
    return Backend::emulator(profile);
  }
}
}  // namespace

Outputs run_kernel(const Case& c, Kernel kernel, const std::string& profile, const Options& options,
                   bool poison) {
  return run_kernel(c, kernel, emulator_backend(profile), options, poison);
}

Outputs run_kernel(const Case& c, Kernel kernel, const Backend& backend, const Options& options,
                   bool poison) {
  const std::int64_t S = c.num_seqs, H = c.num_heads, D = c.head_size;
  Outputs o;
  o.out_dtype = c.scalar;
  o.out_bytes.assign(S * H * D * traits(c.scalar).size, poison ? 0xff : 0);  // 0xff..: NaN
  using R = ReuseInputAllocations;
  R* const r = R::current();
  const auto slot = [r](R::Role role) { return r ? r->slot(role) : nullptr; };
  const DeviceCopy<std::uint8_t> query(c.query, slot(R::query)),
      kc(c.key_cache, slot(R::key_cache)), vc(c.value_cache, slot(R::value_cache));
  const DeviceCopy<std::int32_t> bt(c.block_tables, slot(R::block_tables)),
      sl(c.seq_lens, slot(R::seq_lens));
  const DeviceCopy<float> alibi(c.alibi_slopes, slot(R::alibi));
  const DeviceCopy<std::uint8_t> out(o.out_bytes, slot(R::out));
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
