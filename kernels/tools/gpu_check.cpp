// Runs the kernels natively (CUDA) and on the emulator (h200 profile, the same warp
// width) against the exact reference on a few configurations, and prints a summary: the
// error of each executor over the proven bound (kernel_error_bound, per element; <= 1
// passes: CUDA's __expf accuracy and warp 32, the bound of both executors) and how far
// the two executors differ (they round identically except for exp: __expf vs the
// emulator's exp model). Exit status 0 only if every check passes. Built with
// pagedattn_kernels_cuda.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

using namespace pagedattn;
using namespace pagedattn::testing;

namespace {

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    if (cudaMalloc(&ptr, bytes ? bytes : 1) != cudaSuccess) throw std::runtime_error("cudaMalloc");
  }
  template <class T>
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  template <class T>
  void to_host(std::vector<T>& host) const {
    cudaMemcpy(host.data(), ptr, host.size() * sizeof(T), cudaMemcpyDeviceToHost);
  }
};

// The case's call with device copies of its tensors, on the GPU.
Outputs run_cuda(const Case& c, Kernel kernel, const Options& opt) {
  const std::int64_t S = c.num_seqs, H = c.num_heads, D = c.head_size;
  Outputs o;
  o.out_dtype = c.scalar;
  o.out_bytes.assign(S * H * D * traits(c.scalar).size, 0xff);
  DeviceBuffer out(o.out_bytes), q(c.query), kc(c.key_cache), vc(c.value_cache), bt(c.block_tables),
      sl(c.seq_lens), al(c.has_alibi() ? c.alibi_slopes : std::vector<float>(1));
  AttentionCall call = c.call();
  call.out = TensorView::contiguous(out.ptr, c.scalar, {S, H, D});
  call.query.data = q.ptr;
  call.key_cache.data = kc.ptr;
  call.value_cache.data = vc.ptr;
  call.block_tables.data = bt.ptr;
  call.seq_lens.data = sl.ptr;
  if (c.has_alibi()) call.alibi_slopes.data = al.ptr;
  if (kernel == Kernel::v1) {
    paged_attention(Kernel::v1, call, Backend::cuda(), opt);
  } else {
    const std::int64_t P = (c.max_seq_len + opt.partition_size - 1) / opt.partition_size;
    const DType td = effective_choices(opt).partials_in_output_dtype ? c.scalar : DType::f32;
    DeviceBuffer es(S * H * P * 4), ml(S * H * P * 4), tmp(S * H * P * D * traits(td).size);
    call.exp_sums = TensorView::contiguous(es.ptr, DType::f32, {S, H, P});
    call.max_logits = TensorView::contiguous(ml.ptr, DType::f32, {S, H, P});
    call.tmp_out = TensorView::contiguous(tmp.ptr, td, {S, H, P, D});
    paged_attention(Kernel::v2, call, Backend::cuda(), opt);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("kernel failed");
  out.to_host(o.out_bytes);
  o.out.resize(S * H * D);
  for (std::size_t i = 0; i < o.out.size(); ++i) o.out[i] = decode(c.scalar, o.out_bytes.data(), i);
  return o;
}

struct Check {
  std::string name;
  UniformSpec spec;
  Options options;
};

std::vector<Check> checks() {
  std::vector<Check> v;
  auto add = [&](std::string name, DType t, CacheFormat cache, int head, int block,
                 std::vector<int> lens) {
    Check k;
    k.name = std::move(name);
    k.spec.scalar = t;
    k.spec.cache = cache;
    k.spec.head_size = head;
    k.spec.block_size = block;
    k.spec.num_heads = 8;
    k.spec.num_kv_heads = 2;
    k.spec.seq_lens = std::move(lens);
    k.spec.k_scale = 0.75;
    k.spec.v_scale = 1.5;
    k.options.partition_size = 512;
    v.push_back(k);
    return &v.back();
  };
  add("f16 auto h128 b16", DType::f16, CacheFormat::same, 128, 16, {1, 511, 513, 2000});
  add("bf16 fp8_e4m3 h64 b32", DType::bf16, CacheFormat::fp8_e4m3, 64, 32, {37, 1030});
  add("f32 auto h256 b8", DType::f32, CacheFormat::same, 256, 8, {700, 5});
  add("f16 fp8_e5m2 h80 b16 alibi", DType::f16, CacheFormat::fp8_e5m2, 80, 16, {900, 64})
      ->spec.alibi = true;
  add("f16 auto h128 b16 vllm_compatible", DType::f16, CacheFormat::same, 128, 16, {1500, 3})
      ->options.numerics = Numerics::vllm_compatible;
  add("f16 auto h128 b16 long", DType::f16, CacheFormat::same, 128, 16, {20000});
  return v;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gpu_check: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("gpu_check on %s (sm_%d%d, %d SMs, %zu B shared/block opt-in)\n", prop.name,
              prop.major, prop.minor, prop.multiProcessorCount, prop.sharedMemPerBlockOptin);
  std::printf("%-36s %-3s %12s %12s %14s %9s\n", "config", "ver", "gpu/bound", "emu/bound",
              "max|gpu-emu|", "bitwise");
  bool ok = true;
  for (const Check& k : checks()) {
    const Judge judge(uniform_case(k.spec));
    for (Kernel ver : {Kernel::v1, Kernel::v2}) {
      // NVIDIA: warp 32 and CUDA's __expf accuracy, as on the h200 profile.
      const std::vector<double> bounds = judge.bounds(bound_setup(ver, k.options, "h200"));
      const Outputs gpu = run_cuda(judge.input(), ver, k.options);
      const Outputs emu = run_kernel(judge.input(), ver, "h200", k.options);
      const Verdict g = err_over_bound(judge.input(), gpu.out, judge.exact_output(), bounds);
      const Verdict e = err_over_bound(judge.input(), emu.out, judge.exact_output(), bounds);
      double diff = 0;
      for (std::size_t i = 0; i < gpu.out.size(); ++i)
        diff = std::max(diff, std::fabs(gpu.out[i] - emu.out[i]));
      const bool pass = g.worst <= 1 && e.worst <= 1;
      ok &= pass;
      std::printf("%-36s %-3s %12.4g %12.4g %14.3g %9s%s\n", k.name.c_str(),
                  ver == Kernel::v1 ? "v1" : "v2", g.worst, e.worst, diff,
                  gpu.out_bytes == emu.out_bytes ? "yes" : "no", pass ? "" : "  FAIL");
      if (!pass) std::printf("    gpu: %s\n    emu: %s\n", g.where.c_str(), e.where.c_str());
    }
  }
  std::printf("gpu_check: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
