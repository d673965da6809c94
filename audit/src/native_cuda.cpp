// The audit's native path: see native.h.
#include <cuda_runtime.h>

#include <stdexcept>

#include "native.h"
#include "pagedattn/api.h"

namespace pagedattn::audit::native {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

// One device allocation, freed however the case ends.
struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    check(cudaMalloc(&ptr, n ? n : 1), "cudaMalloc");
  }
  DeviceBuffer(const void* host, std::size_t n) : DeviceBuffer(n) {
    if (n) check(cudaMemcpy(ptr, host, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(e); }
};

template <class T>
std::unique_ptr<DeviceBuffer> upload_vec(const std::vector<T>& v) {
  return std::make_unique<DeviceBuffer>(v.data(), v.size() * sizeof(T));
}

TensorView view(const DeviceBuffer& b, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(b.ptr, t, shape);
}

}  // namespace

struct DeviceInputs {
  const testing::Case* in = nullptr;
  std::unique_ptr<DeviceBuffer> q, kc, vc, bt, sl, al;
};

std::string require_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("no CUDA device: cudaGetDeviceCount failed: ") +
                             cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                             "); --backend cuda needs an NVIDIA GPU (use --backend emulator)");
  }
  if (count == 0) {
    throw std::runtime_error(
        "no CUDA device: cudaGetDeviceCount found 0 devices; --backend cuda needs an NVIDIA GPU "
        "(use --backend emulator)");
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return prop.name;
}

std::shared_ptr<DeviceInputs> upload(const testing::Case& in) {
  auto d = std::make_shared<DeviceInputs>();
  d->in = &in;
  d->q = upload_vec(in.query);
  d->kc = upload_vec(in.key_cache);
  d->vc = upload_vec(in.value_cache);
  d->bt = upload_vec(in.block_tables);
  d->sl = upload_vec(in.seq_lens);
  d->al = upload_vec(in.alibi_slopes);
  return d;
}

double run(const DeviceInputs& d, const std::string& kernel, const Options& opt,
           std::int64_t num_partitions, std::vector<std::uint8_t>& out) {
  const testing::Case& in = *d.in;
  const std::int64_t S = in.num_seqs, H = in.num_heads, D = in.head_size, NP = num_partitions;
  // The case's own views with the device copies' pointers.
  AttentionCall call = in.call();
  call.query.data = d.q->ptr;
  call.key_cache.data = d.kc->ptr;
  call.value_cache.data = d.vc->ptr;
  call.block_tables.data = d.bt->ptr;
  call.seq_lens.data = d.sl->ptr;
  if (in.has_alibi()) call.alibi_slopes.data = d.al->ptr;

  const std::size_t out_bytes = static_cast<std::size_t>(S * H * D) * dtype_size(in.scalar);
  DeviceBuffer o(out_bytes);
  call.out = view(o, in.scalar, {S, H, D});
  const Backend be = Backend::cuda();
  Event start, stop;
  float ms = 0;
  if (kernel == "v1") {
    check(cudaEventRecord(start.e), "cudaEventRecord");
    paged_attention(Kernel::v1, call, be, opt);
    check(cudaEventRecord(stop.e), "cudaEventRecord");
  } else {
    const DType td = effective_choices(opt).partials_in_output_dtype ? in.scalar : DType::f32;
    DeviceBuffer es(static_cast<std::size_t>(S * H * NP) * 4);
    DeviceBuffer ml(static_cast<std::size_t>(S * H * NP) * 4);
    DeviceBuffer tmp(static_cast<std::size_t>(S * H * NP * D) * dtype_size(td));
    call.exp_sums = view(es, DType::f32, {S, H, NP});
    call.max_logits = view(ml, DType::f32, {S, H, NP});
    call.tmp_out = view(tmp, td, {S, H, NP, D});
    check(cudaEventRecord(start.e), "cudaEventRecord");
    paged_attention(Kernel::v2, call, be, opt);
    check(cudaEventRecord(stop.e), "cudaEventRecord");
  }
  // The kernels' own errors surface here (an asynchronous fault, not a refused launch).
  check(cudaEventSynchronize(stop.e), "kernel execution");
  check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
  out.resize(out_bytes);
  check(cudaMemcpy(out.data(), o.ptr, out_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return ms * 1e-3;
}

}  // namespace pagedattn::audit::native
