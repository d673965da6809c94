// vLLM's paged-attention operators as torch operators (namespace `pagedattn`), backed
// on CPU by the emulator running the production kernel source under a device profile.
// Schemas are vLLM's (csrc/torch_bindings.cpp): the v0.6.x form with float scales is the
// default overload, the newer one-element-tensor form is the `tensor_scales` overload.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <tuple>

#include "emu/profile.h"
#include "pagedattn/version_select.h"
#include "torch_bridge.h"
#include "torch_dtype.h"

namespace pagedattn_torch {
namespace {

// Tensors of no elements (num_seqs = 0) may have no storage; the library reads no byte
// of them but calls a null view "no tensor", so they get this address.
char g_empty_storage;

pagedattn::DType dtype_of(const at::Tensor& t, const char* name, const char* allowed) {
  const c10::optional<pagedattn::DType> d = library_dtype(t.scalar_type());
  TORCH_CHECK_TYPE(d.has_value(), "pagedattn: ", name, " must have dtype ", allowed, ", got ",
                   t.scalar_type());
  return *d;
}

// Every tensor on one device, so no kernel reads host memory as device memory.
void check_device(const at::Tensor& t, const char* name, const c10::Device& device) {
  if (t.defined() && t.device() != device) {
    TORCH_CHECK_VALUE(false, "pagedattn: ", name, " is on ", t.device(), " but out is on ", device,
                      ": every tensor argument must be on out's device");
  }
}

pagedattn::TensorView view_of(const at::Tensor& t, const char* name, const char* allowed) {
  pagedattn::TensorView v;
  if (!t.defined()) return v;
  TORCH_CHECK_VALUE(t.dim() <= pagedattn::TensorView::kMaxDims, "pagedattn: ", name,
                    " must have at most ", pagedattn::TensorView::kMaxDims, " dimensions, got ",
                    t.dim());
  v.dtype = dtype_of(t, name, allowed);
  v.ndim = static_cast<int>(t.dim());
  for (int d = 0; d < v.ndim; ++d) {
    v.shape[d] = t.size(d);
    v.strides[d] = t.stride(d);
  }
  void* data = t.is_meta() ? nullptr : t.data_ptr();
  v.data = data ? data : &g_empty_storage;
  return v;
}

constexpr const char* kScalar = "float32, float16 or bfloat16";
constexpr const char* kCache = "the query's dtype, or uint8 for an fp8 kv_cache_dtype";
constexpr const char* kInt32 = "int32";
constexpr const char* kFloat32 = "float32";
constexpr const char* kTmpOut = "float32 or out's dtype";

// The library's own validation names the argument; its errors become ValueError, a
// refused launch (V1 out of shared memory) RuntimeError.
template <class F>
void translate_errors(F&& f) {
  try {
    f();
  } catch (const pagedattn::Error& e) {
    TORCH_CHECK_VALUE(false, e.what());
  } catch (const pagedattn::LaunchError& e) {
    TORCH_CHECK(false, e.what());
  } catch (const emu::ProfileError& e) {
    TORCH_CHECK_VALUE(false, "pagedattn: profile: ", e.what());
  }
}

// vLLM keeps V2's partial outputs in the output dtype; the library keeps them in fp32
// (Numerics::exact_fp32). Given an output-dtype tmp_out, the kernels write an fp32
// scratch of the same shape and strides, and tmp_out receives its rounded copy, so
// `out` is as exact as with an fp32 tmp_out.
at::Tensor fp32_scratch_for(const at::Tensor& tmp_out, const at::Tensor& out) {
  if (!tmp_out.defined() || tmp_out.scalar_type() == at::kFloat ||
      tmp_out.scalar_type() != out.scalar_type()) {
    return {};
  }
  return at::empty_strided(tmp_out.sizes(), tmp_out.strides(), tmp_out.options().dtype(at::kFloat));
}

std::mutex g_profile_mutex;
std::string g_profile;  // "" until first asked: then $PAGEDATTN_PROFILE or bi-v100

std::string current_profile_name() {
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  if (g_profile.empty()) {
    const char* env = std::getenv("PAGEDATTN_PROFILE");
    g_profile = env && *env ? env : "bi-v100";
  }
  return g_profile;
}

// Options::grouped for every V1/V2 call of the process (set_grouped), first from
// $PAGEDATTN_GROUPED ("1": on); off by default. The outputs are the same bits either way.
std::atomic<int> g_grouped{-1};  // -1: not yet read from the environment

bool current_grouped() {
  int g = g_grouped.load();
  if (g < 0) {
    const char* env = std::getenv("PAGEDATTN_GROUPED");
    int want = env && std::string(env) == "1" ? 1 : 0;
    g_grouped.compare_exchange_strong(g, want);  // a concurrent set_grouped wins
    g = g_grouped.load();
  }
  return g == 1;
}

pagedattn::Backend cpu_backend(const at::Tensor&) {
  return pagedattn::Backend::emulator(current_profile_name());
}

}  // namespace

double scale_value(const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.defined() && t.numel() == 1, "pagedattn: ", name,
                    " must be a one-element float32 tensor (or a float), got ",
                    t.defined() ? t.sizes().vec() : std::vector<std::int64_t>{}, " elements");
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, "pagedattn: ", name,
                   " must have dtype float32, got ", t.scalar_type());
  TORCH_CHECK_VALUE(!t.is_meta(), "pagedattn: ", name, " is on meta: its value is needed");
  return t.item<double>();
}

void run_attention(const AttentionArgs& a, const pagedattn::Backend& backend,
                   const c10::Device& device) {
  const bool v2 = a.exp_sums.defined();
  const at::Tensor alibi = a.alibi_slopes.has_value() ? *a.alibi_slopes : at::Tensor();
  for (auto [t, name] : {std::pair{&a.exp_sums, "exp_sums"},
                         {&a.max_logits, "max_logits"},
                         {&a.tmp_out, "tmp_out"},
                         {&a.query, "query"},
                         {&a.key_cache, "key_cache"},
                         {&a.value_cache, "value_cache"},
                         {&a.block_tables, "block_tables"},
                         {&a.seq_lens, "seq_lens"},
                         {&alibi, "alibi_slopes"}}) {
    check_device(*t, name, device);
  }
  const at::Tensor scratch = fp32_scratch_for(a.tmp_out, a.out);
  const at::Tensor& tmp = scratch.defined() ? scratch : a.tmp_out;
  const auto out = view_of(a.out, "out", kScalar);
  const auto query = view_of(a.query, "query", kScalar);
  const auto key_cache = view_of(a.key_cache, "key_cache", kCache);
  const auto value_cache = view_of(a.value_cache, "value_cache", kCache);
  const auto block_tables = view_of(a.block_tables, "block_tables", kInt32);
  const auto seq_lens = view_of(a.seq_lens, "seq_lens", kInt32);
  const auto alibi_view = view_of(alibi, "alibi_slopes", kFloat32);
  const auto exp_sums = view_of(a.exp_sums, "exp_sums", kFloat32);
  const auto max_logits = view_of(a.max_logits, "max_logits", kFloat32);
  const auto tmp_out = view_of(tmp, "tmp_out", kTmpOut);
  const std::shared_ptr<void> guard = enter_device(device);
  translate_errors([&] {
    pagedattn::AttentionCall call;
    call.out = out;
    if (v2) {
      call.exp_sums = exp_sums;
      call.max_logits = max_logits;
      call.tmp_out = tmp_out;
    }
    call.query = query;
    call.key_cache = key_cache;
    call.value_cache = value_cache;
    call.num_kv_heads = a.num_kv_heads;
    call.scale = a.scale;
    call.block_tables = block_tables;
    call.seq_lens = seq_lens;
    call.block_size = a.block_size;
    call.max_seq_len = a.max_seq_len;
    call.alibi_slopes = alibi_view;
    call.kv_cache_dtype = a.kv_cache_dtype;
    call.k_scale = a.k_scale;
    call.v_scale = a.v_scale;
    call.blocksparse = {a.tp_rank, a.blocksparse_local_blocks, a.blocksparse_vert_stride,
                        a.blocksparse_block_size, a.blocksparse_head_sliding_step};
    const pagedattn::Kernel kernel = v2 ? pagedattn::Kernel::v2 : pagedattn::Kernel::v1;
    pagedattn::Options options;
    options.grouped = current_grouped();
    if (device.is_meta()) {  // shapes only (fake tensors): validate, compute nothing
      pagedattn::validate_attention(kernel, call, options);
    } else {
      pagedattn::paged_attention(kernel, call, backend, options);
    }
  });
  if (scratch.defined() && !device.is_meta()) a.tmp_out.copy_(scratch);
}

void run_reduce(const at::Tensor& out_t, const at::Tensor& exp_sums_t,
                const at::Tensor& max_logits_t, const at::Tensor& tmp_out_t,
                const at::Tensor& seq_lens_t, std::int64_t max_seq_len, std::int64_t partition_size,
                const pagedattn::Backend& backend, const c10::Device& device) {
  for (auto [t, name] : {std::pair{&exp_sums_t, "exp_sums"},
                         {&max_logits_t, "max_logits"},
                         {&tmp_out_t, "tmp_out"},
                         {&seq_lens_t, "seq_lens"}}) {
    check_device(*t, name, device);
  }
  // An output-dtype tmp_out (vLLM's) is widened exactly into fp32 for the reduce.
  at::Tensor tmp = fp32_scratch_for(tmp_out_t, out_t);
  if (tmp.defined() && !device.is_meta()) tmp.copy_(tmp_out_t);
  if (!tmp.defined()) tmp = tmp_out_t;
  const auto out = view_of(out_t, "out", kScalar);
  const auto exp_sums = view_of(exp_sums_t, "exp_sums", kFloat32);
  const auto max_logits = view_of(max_logits_t, "max_logits", kFloat32);
  const auto tmp_out = view_of(tmp, "tmp_out", kTmpOut);
  const auto seq_lens = view_of(seq_lens_t, "seq_lens", kInt32);
  pagedattn::Options options;
  // The library checks the rule too; this keeps an int64 out of int's range from wrapping.
  TORCH_CHECK_VALUE(partition_size >= pagedattn::kMinPartitionSize &&
                        partition_size <= pagedattn::kMaxPartitionSize,
                    "pagedattn: partition_size must be in [", pagedattn::kMinPartitionSize, ", ",
                    pagedattn::kMaxPartitionSize, "], got ", partition_size);
  options.partition_size = static_cast<int>(partition_size);
  const std::shared_ptr<void> guard = enter_device(device);
  translate_errors([&] {
    if (device.is_meta()) {
      pagedattn::validate_reduce(out, exp_sums, max_logits, tmp_out, seq_lens, max_seq_len,
                                 options);
    } else {
      pagedattn::paged_attention_reduce(out, exp_sums, max_logits, tmp_out, seq_lens, max_seq_len,
                                        backend, options);
    }
  });
}

#ifndef PAGEDATTN_TORCH_CUDA
pagedattn::DeviceFacts cuda_device_facts(const std::string& device) {
  TORCH_CHECK_VALUE(false, "pagedattn: device \"", device,
                    "\": this build has no CUDA backend (its torch or the kernels were built "
                    "without CUDA); pass \"cpu\" or a profile name such as \"bi-v100\"");
  return {};
}
bool cuda_registered() {
  return false;
}
std::shared_ptr<void> enter_device(const c10::Device&) {
  return nullptr;
}
#endif

namespace {

// Device facts for the version rule: a profile's (the emulator's view of a device) or,
// in a CUDA build, the GPU's own (torch_ops_cuda.cpp).
pagedattn::DeviceFacts profile_facts(const std::string& profile) {
  pagedattn::DeviceFacts f;
  translate_errors([&] {
    // $EMU_PROFILE_SET applied, as every launch does; the process's current profile stays.
    const emu::Profile p = emu::resolve_profile(profile);
    f = {p.name, p.warp_size, p.multiprocessor_count, p.shared_memory_per_block_optin};
  });
  return f;
}

// The query dtype's element size for the grouped rule (the grouped kernels are built for
// 2-byte queries only): torch's names, as Python's str(dtype) gives them without "torch.".
int query_elem_bytes(const std::string& dtype) {
  if (dtype == "float16" || dtype == "half" || dtype == "bfloat16") return 2;
  if (dtype == "float32" || dtype == "float") return 4;
  TORCH_CHECK_VALUE(false, "pagedattn: choose_version: dtype '", dtype,
                    "' is not a query dtype; allowed: float16, bfloat16, float32");
  return 0;
}

std::tuple<std::string, std::string, bool, std::string> choose_version(
    std::int64_t num_seqs, std::int64_t num_heads, std::int64_t head_size, std::int64_t block_size,
    std::int64_t max_seq_len, c10::string_view device, std::int64_t partition_size,
    std::int64_t num_kv_heads, c10::string_view dtype) {
  const std::string dev(device);
  pagedattn::DeviceFacts facts;
  if (dev.rfind("cuda", 0) == 0) {
    facts = cuda_device_facts(dev);
  } else {
    facts = profile_facts(dev.empty() || dev == "cpu" ? current_profile_name() : dev);
  }
  TORCH_CHECK_VALUE(num_seqs >= 0 && num_heads >= 1 && head_size >= 1 && block_size >= 1 &&
                        max_seq_len >= 0 && partition_size >= 1,
                    "pagedattn: choose_version needs num_seqs >= 0, num_heads, head_size, "
                    "block_size, partition_size >= 1 and max_seq_len >= 0");
  // 0: one KV head per query head (nothing to group), as before the grouped kernels.
  TORCH_CHECK_VALUE(num_kv_heads >= 0 && (num_kv_heads == 0 || num_heads % num_kv_heads == 0),
                    "pagedattn: choose_version: num_kv_heads must be 0 (= num_heads) or divide "
                    "num_heads (",
                    num_heads, "), got ", num_kv_heads);
  pagedattn::Workload w;
  w.num_seqs = static_cast<int>(num_seqs);
  w.num_heads = static_cast<int>(num_heads);
  w.num_kv_heads = static_cast<int>(num_kv_heads == 0 ? num_heads : num_kv_heads);
  w.head_size = static_cast<int>(head_size);
  w.block_size = static_cast<int>(block_size);
  w.max_seq_len = max_seq_len;
  w.partition_size = static_cast<int>(partition_size);
  w.io_elem_bytes = query_elem_bytes(std::string(dtype));
  const pagedattn::VersionChoice c = pagedattn::choose_version(facts, w);
  return {pagedattn::kernel_name(c.version), facts.name + ": " + c.reason, c.grouped,
          c.grouped_reason};
}

void set_profile(c10::string_view profile) {
  const std::string name(profile);
  profile_facts(name);  // loads it: an unknown name fails here, naming the profile
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  g_profile = name;
}

std::string get_profile() {
  return current_profile_name();
}

bool has_cuda_backend() {
  return cuda_registered();
}

void set_grouped(bool on) {
  g_grouped.store(on ? 1 : 0);
}

bool get_grouped() {
  return current_grouped();
}

}  // namespace
}  // namespace pagedattn_torch

// vLLM's schemas, argument for argument (its csrc/torch_bindings.cpp).
TORCH_LIBRARY(pagedattn, m) {
  m.def(
      "paged_attention_v1(Tensor! out, Tensor query, Tensor key_cache, Tensor value_cache, "
      "int num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, int block_size, "
      "int max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype, float k_scale, float v_scale, "
      "int tp_rank, int blocksparse_local_blocks, int blocksparse_vert_stride, "
      "int blocksparse_block_size, int blocksparse_head_sliding_step) -> ()");
  m.def(
      "paged_attention_v1.tensor_scales(Tensor! out, Tensor query, Tensor key_cache, "
      "Tensor value_cache, int num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, "
      "int block_size, int max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype, "
      "Tensor k_scale, Tensor v_scale, int tp_rank, int blocksparse_local_blocks, "
      "int blocksparse_vert_stride, int blocksparse_block_size, "
      "int blocksparse_head_sliding_step) -> ()");
  m.def(
      "paged_attention_v2(Tensor! out, Tensor! exp_sums, Tensor! max_logits, Tensor! tmp_out, "
      "Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, "
      "Tensor block_tables, Tensor seq_lens, int block_size, int max_seq_len, "
      "Tensor? alibi_slopes, str kv_cache_dtype, float k_scale, float v_scale, int tp_rank, "
      "int blocksparse_local_blocks, int blocksparse_vert_stride, int blocksparse_block_size, "
      "int blocksparse_head_sliding_step) -> ()");
  m.def(
      "paged_attention_v2.tensor_scales(Tensor! out, Tensor! exp_sums, Tensor! max_logits, "
      "Tensor! tmp_out, Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, "
      "float scale, Tensor block_tables, Tensor seq_lens, int block_size, int max_seq_len, "
      "Tensor? alibi_slopes, str kv_cache_dtype, Tensor k_scale, Tensor v_scale, int tp_rank, "
      "int blocksparse_local_blocks, int blocksparse_vert_stride, int blocksparse_block_size, "
      "int blocksparse_head_sliding_step) -> ()");
  // V2's reduce alone (vLLM has no such operator): merges the partition states.
  m.def(
      "paged_attention_reduce(Tensor! out, Tensor exp_sums, Tensor max_logits, Tensor tmp_out, "
      "Tensor seq_lens, int max_seq_len, int partition_size=512) -> ()");
  // The project's V1/V2 and grouped rule (kernels/include/pagedattn/version_select.h) for a
  // device: "" or "cpu" (the current profile), a profile name or file, or "cuda[:N]".
  // Returns (version, reason, grouped, grouped_reason).
  m.def(
      "choose_version(int num_seqs, int num_heads, int head_size, int block_size, "
      "int max_seq_len, str device=\"\", int partition_size=512, int num_kv_heads=0, "
      "str dtype=\"float16\") -> (str, str, bool, str)",
      &pagedattn_torch::choose_version);
  m.def("set_profile(str profile) -> ()", &pagedattn_torch::set_profile);
  m.def("get_profile() -> str", &pagedattn_torch::get_profile);
  m.def("has_cuda_backend() -> bool", &pagedattn_torch::has_cuda_backend);
  // Options::grouped for the V1/V2 operators of this process (kernels/README.md, "Grouped
  // kernels"): one thread block per KV head's query heads where the grouped kernels are
  // built, the per-head kernels elsewhere; the same outputs bit for bit.
  m.def("set_grouped(bool grouped) -> ()", &pagedattn_torch::set_grouped);
  m.def("get_grouped() -> bool", &pagedattn_torch::get_grouped);
}

TORCH_LIBRARY_IMPL(pagedattn, CPU, m) {
  PAGEDATTN_TORCH_IMPLS(m, pagedattn_torch::cpu_backend);
}

// Meta (fake) tensors: the same validation, nothing computed. Torch 1.13 has a
// fallthrough for the Autograd key of CPU and CUDA but not of Meta: give it one.
TORCH_LIBRARY_IMPL(pagedattn, Meta, m) {
  PAGEDATTN_TORCH_IMPLS(m, pagedattn_torch::cpu_backend);
}
TORCH_LIBRARY_IMPL(pagedattn, AutogradMeta, m) {
  for (const char* op :
       {"paged_attention_v1", "paged_attention_v1.tensor_scales", "paged_attention_v2",
        "paged_attention_v2.tensor_scales", "paged_attention_reduce"}) {
    m.impl(op, torch::CppFunction::makeFallthrough());
  }
}
