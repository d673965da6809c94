// Runs the kernels natively (CUDA) and on the emulator (h200 profile, the same warp
// width) against the double reference on a few configurations, and prints a summary:
// the error of each executor relative to the derived bound (<= 1 passes) and how far the
// two executors differ (they round identically except for exp: __expf vs the emulator's
// exp model). Exit status 0 only if every check passes. Built with pagedattn_kernels_cuda.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "../tests/reference.h"

using namespace pagedattn;
using namespace pagedattn::test;

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

// Same call as run_kernel (tests/reference.cpp), on the GPU.
Outputs run_cuda(const Problem& p, Kernel kernel) {
  const Config& c = p.c;
  const std::int64_t S = p.seq_lens.size(), H = c.num_heads, D = c.head_size, B = c.block_size;
  const DType cd = c.cache == CacheFormat::same ? c.scalar : DType::u8;
  const char* kv = c.cache == CacheFormat::same       ? "auto"
                   : c.cache == CacheFormat::fp8_e4m3 ? "fp8"
                                                      : "fp8_e5m2";
  Outputs o;
  o.out_bytes.assign(S * H * D * dtype_size(c.scalar), 0xff);
  DeviceBuffer out(o.out_bytes), q(p.query), kc(p.key_cache), vc(p.value_cache), bt(p.block_tables),
      sl(p.seq_lens), al(p.alibi.empty() ? std::vector<float>(1) : p.alibi);
  const auto out_v = TensorView::contiguous(out.ptr, c.scalar, {S, H, D});
  const auto q_v = TensorView::contiguous(q.ptr, c.scalar, {S, H, D});
  const auto k_v =
      TensorView::contiguous(kc.ptr, cd, {p.num_blocks, c.num_kv_heads, D / p.x, B, p.x});
  const auto v_v = TensorView::contiguous(vc.ptr, cd, {p.num_blocks, c.num_kv_heads, D, B});
  const auto bt_v = TensorView::contiguous(bt.ptr, DType::i32, {S, p.max_blocks_per_seq});
  const auto sl_v = TensorView::contiguous(sl.ptr, DType::i32, {S});
  const auto al_v = c.alibi ? TensorView::contiguous(al.ptr, DType::f32, {H}) : TensorView{};
  Options opt;
  opt.partition_size = c.partition_size;
  opt.numerics = c.numerics;
  if (kernel == Kernel::v1) {
    paged_attention_v1(out_v, q_v, k_v, v_v, c.num_kv_heads, c.scale, bt_v, sl_v, B, p.max_seq_len,
                       al_v, kv, c.k_scale, c.v_scale, Backend::cuda(), opt);
  } else {
    const std::int64_t P = (p.max_seq_len + c.partition_size - 1) / c.partition_size;
    const DType td = c.numerics == Numerics::exact_fp32 ? DType::f32 : c.scalar;
    DeviceBuffer es(S * H * P * 4), ml(S * H * P * 4), tmp(S * H * P * D * dtype_size(td));
    paged_attention_v2(out_v, TensorView::contiguous(es.ptr, DType::f32, {S, H, P}),
                       TensorView::contiguous(ml.ptr, DType::f32, {S, H, P}),
                       TensorView::contiguous(tmp.ptr, td, {S, H, P, D}), q_v, k_v, v_v,
                       c.num_kv_heads, c.scale, bt_v, sl_v, B, p.max_seq_len, al_v, kv, c.k_scale,
                       c.v_scale, Backend::cuda(), opt);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("kernel failed");
  out.to_host(o.out_bytes);
  o.out.resize(S * H * D);
  for (std::size_t i = 0; i < o.out.size(); ++i)
    o.out[i] = decode_scalar(c.scalar, o.out_bytes.data(), i);
  return o;
}

struct Case {
  std::string name;
  Config c;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](std::string name, DType t, CacheFormat cache, int head, int block,
                 std::vector<int> lens) {
    Config c;
    c.scalar = t;
    c.cache = cache;
    c.head_size = head;
    c.block_size = block;
    c.num_heads = 8;
    c.num_kv_heads = 2;
    c.seq_lens = std::move(lens);
    c.partition_size = 512;
    c.k_scale = 0.75;
    c.v_scale = 1.5;
    v.push_back({std::move(name), c});
    return &v.back().c;
  };
  add("f16 auto h128 b16", DType::f16, CacheFormat::same, 128, 16, {1, 511, 513, 2000});
  add("bf16 fp8_e4m3 h64 b32", DType::bf16, CacheFormat::fp8_e4m3, 64, 32, {37, 1030});
  add("f32 auto h256 b8", DType::f32, CacheFormat::same, 256, 8, {700, 5});
  add("f16 fp8_e5m2 h80 b16 alibi", DType::f16, CacheFormat::fp8_e5m2, 80, 16, {900, 64})->alibi =
      true;
  add("f16 auto h128 b16 vllm_compatible", DType::f16, CacheFormat::same, 128, 16, {1500, 3})
      ->numerics = Numerics::vllm_compatible;
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
  for (const Case& k : cases()) {
    const Problem p = make_problem(k.c);
    const auto want = reference_attention(p);
    for (Kernel ver : {Kernel::v1, Kernel::v2}) {
      const auto bounds = error_bounds(p, ver);
      const Outputs gpu = run_cuda(p, ver);
      const Outputs emu = run_kernel(p, ver, "h200");
      const Comparison g = compare(p, gpu.out, want, bounds);
      const Comparison e = compare(p, emu.out, want, bounds);
      double diff = 0;
      for (std::size_t i = 0; i < gpu.out.size(); ++i)
        diff = std::max(diff, std::fabs(gpu.out[i] - emu.out[i]));
      const bool pass = !g.any_nan && !e.any_nan && g.worst_ratio <= 1 && e.worst_ratio <= 1;
      ok &= pass;
      std::printf("%-36s %-3s %12.4g %12.4g %14.3g %9s%s\n", k.name.c_str(),
                  ver == Kernel::v1 ? "v1" : "v2", g.worst_ratio, e.worst_ratio, diff,
                  gpu.out_bytes == emu.out_bytes ? "yes" : "no", pass ? "" : "  FAIL");
      if (!pass) std::printf("    gpu: %s\n    emu: %s\n", g.worst.c_str(), e.worst.c_str());
    }
  }
  std::printf("gpu_check: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
