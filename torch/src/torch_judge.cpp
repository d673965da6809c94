// torch.ops.pagedattn.judge: the check's judge (judge.h) on host tensors in vLLM's layout.
// The implementation under test may run on any device; its inputs are made on the host
// and so is the judgement: every tensor this operator takes is a contiguous CPU tensor.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "emu/profile.h"
#include "judge.h"
#include "torch_dtype.h"

namespace pagedattn_torch {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

void host_contiguous(const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.defined(), "pagedattn.judge: ", name, " is undefined");
  TORCH_CHECK_VALUE(t.device().is_cpu(), "pagedattn.judge: ", name,
                    " must be a CPU tensor (the judge runs on the host), got ", t.device());
  TORCH_CHECK_VALUE(t.is_contiguous(), "pagedattn.judge: ", name, " must be contiguous");
}

void expect_shape(const at::Tensor& t, const char* name, const std::vector<std::int64_t>& want,
                  const char* meaning) {
  TORCH_CHECK_VALUE(t.sizes().vec() == want, "pagedattn.judge: ", name, " must have shape ",
                    meaning, ", got ", shape_of(t));
}

pagedattn::DType scalar_of(const at::Tensor& q) {
  const c10::optional<pagedattn::DType> d = library_dtype(q.scalar_type());
  const bool scalar = d && (*d == pagedattn::DType::f32 || *d == pagedattn::DType::f16 ||
                            *d == pagedattn::DType::bf16);
  TORCH_CHECK_TYPE(scalar, "pagedattn.judge: query must have dtype float32, float16 or ",
                   "bfloat16, got ", q.scalar_type());
  return *d;
}

// Whether kv_cache_dtype names an fp8 cache (uint8 bytes); refuses an unknown name.
bool fp8_cache(c10::string_view kv) {
  const std::string s(kv);
  if (s == "auto") return false;
  if (s == "fp8" || s == "fp8_e4m3" || s == "fp8_e5m2") return true;  // vLLM: "fp8" is E4M3
  TORCH_CHECK_VALUE(false, "pagedattn.judge: kv_cache_dtype must be one of {auto, fp8, fp8_e4m3, ",
                    "fp8_e5m2}, got '", s, "'");
  return false;
}

using Result = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// Returns (exact, exact_err, ulp, exact_bits, bounds): float64 [S, H, D] three times, int64
// [S, H, D] (the rounded exact output's bits), float64 [len(partition_sizes), 2, S, H, D]
// (ours, then vLLM's numerics).
Result judge(const at::Tensor& query, const at::Tensor& key_cache, const at::Tensor& value_cache,
             std::int64_t num_kv_heads, double scale, const at::Tensor& block_tables,
             const at::Tensor& seq_lens, std::int64_t block_size,
             const c10::optional<at::Tensor>& alibi_slopes, c10::string_view kv_cache_dtype,
             double k_scale, double v_scale, c10::IntArrayRef partition_sizes,
             c10::string_view profile) {
  for (auto [t, name] : {std::pair{&query, "query"},
                         {&key_cache, "key_cache"},
                         {&value_cache, "value_cache"},
                         {&block_tables, "block_tables"},
                         {&seq_lens, "seq_lens"}}) {
    host_contiguous(*t, name);
  }
  TORCH_CHECK_VALUE(query.dim() == 3, "pagedattn.judge: query must have shape [num_seqs, ",
                    "num_heads, head_size], got ", shape_of(query));
  const pagedattn::DType qd = scalar_of(query);
  const bool fp8 = fp8_cache(kv_cache_dtype);
  const at::ScalarType cache_type = fp8 ? at::kByte : query.scalar_type();
  for (auto [t, name] : {std::pair{&key_cache, "key_cache"}, {&value_cache, "value_cache"}}) {
    TORCH_CHECK_TYPE(t->scalar_type() == cache_type, "pagedattn.judge: ", name, " must have dtype ",
                     cache_type, " (kv_cache_dtype '", std::string(kv_cache_dtype), "'), got ",
                     t->scalar_type());
  }
  TORCH_CHECK_TYPE(block_tables.scalar_type() == at::kInt && seq_lens.scalar_type() == at::kInt,
                   "pagedattn.judge: block_tables and seq_lens must have dtype int32");
  const std::int64_t S = query.size(0), H = query.size(1), D = query.size(2);
  const std::int64_t x = fp8 ? 16 : 16 / query.element_size();
  TORCH_CHECK_VALUE(key_cache.dim() == 5 && key_cache.size(0) >= 0,
                    "pagedattn.judge: key_cache must have shape [num_blocks, num_kv_heads, "
                    "head_size/x, block_size, x], got ",
                    shape_of(key_cache));
  const std::int64_t NB = key_cache.size(0);
  TORCH_CHECK_VALUE(D % x == 0, "pagedattn.judge: head_size ", D, " is not a multiple of x = ", x);
  expect_shape(key_cache, "key_cache", {NB, num_kv_heads, D / x, block_size, x},
               "[num_blocks, num_kv_heads, head_size/x, block_size, x]");
  expect_shape(value_cache, "value_cache", {NB, num_kv_heads, D, block_size},
               "[num_blocks, num_kv_heads, head_size, block_size]");
  TORCH_CHECK_VALUE(block_tables.dim() == 2 && block_tables.size(0) == S,
                    "pagedattn.judge: block_tables must have shape [num_seqs, ",
                    "max_blocks_per_seq], got ", shape_of(block_tables));
  expect_shape(seq_lens, "seq_lens", {S}, "[num_seqs]");
  at::Tensor alibi;
  if (alibi_slopes.has_value() && alibi_slopes->defined()) {
    alibi = *alibi_slopes;
    host_contiguous(alibi, "alibi_slopes");
    TORCH_CHECK_TYPE(alibi.scalar_type() == at::kFloat,
                     "pagedattn.judge: alibi_slopes must have dtype float32");
    expect_shape(alibi, "alibi_slopes", {H}, "[num_heads]");
  }
  // The call as the kernels take it, over the host tensors (contiguous, checked above).
  namespace pa = pagedattn;
  const pa::DType cd = fp8 ? pa::DType::u8 : qd;
  pagedattn::judge::Request r;
  pa::AttentionCall& call = r.call;
  call.query = pa::TensorView::contiguous(query.data_ptr(), qd, {S, H, D});
  call.key_cache = pa::TensorView::contiguous(key_cache.data_ptr(), cd,
                                              {NB, num_kv_heads, D / x, block_size, x});
  call.value_cache =
      pa::TensorView::contiguous(value_cache.data_ptr(), cd, {NB, num_kv_heads, D, block_size});
  call.num_kv_heads = num_kv_heads;
  // The kernels take the scales as float (vLLM's too): judge those values.
  call.scale = static_cast<float>(scale);
  call.block_tables = pa::TensorView::contiguous(block_tables.data_ptr(), pa::DType::i32,
                                                 {S, block_tables.size(1)});
  call.seq_lens = pa::TensorView::contiguous(seq_lens.data_ptr(), pa::DType::i32, {S});
  call.block_size = block_size;
  std::int64_t max_len = 0;
  for (std::int64_t s = 0; s < S; ++s)
    max_len = std::max<std::int64_t>(max_len, seq_lens.data_ptr<std::int32_t>()[s]);
  call.max_seq_len = max_len;
  if (alibi.defined())
    call.alibi_slopes = pa::TensorView::contiguous(alibi.data_ptr(), pa::DType::f32, {H});
  call.kv_cache_dtype = std::string(kv_cache_dtype);
  call.k_scale = static_cast<float>(k_scale);
  call.v_scale = static_cast<float>(v_scale);
  r.partition_sizes.assign(partition_sizes.begin(), partition_sizes.end());
  TORCH_CHECK_VALUE(!r.partition_sizes.empty(), "pagedattn.judge: partition_sizes is empty ",
                    "(give 0 for V1, a positive multiple of block_size for V2)");
  pagedattn::judge::Judgement j;
  try {
    r.warp_size = emu::load_profile(std::string(profile)).warp_size;
    j = pagedattn::judge::judge(r);
  } catch (const emu::ProfileError& e) {
    TORCH_CHECK_VALUE(false, "pagedattn.judge: profile: ", e.what());
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "pagedattn.judge: ", e.what());
  }
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const auto copy = [&](const std::vector<double>& v, std::vector<std::int64_t> shape) {
    at::Tensor t = at::empty(shape, f64);
    if (!v.empty()) std::memcpy(t.data_ptr<double>(), v.data(), v.size() * sizeof(double));
    return t;
  };
  at::Tensor bits = at::empty({S, H, D}, at::TensorOptions().dtype(at::kLong));
  for (std::size_t i = 0; i < j.exact_bits.size(); ++i)
    bits.data_ptr<std::int64_t>()[i] = j.exact_bits[i];
  return {copy(j.exact, {S, H, D}), copy(j.exact_err, {S, H, D}), copy(j.ulp, {S, H, D}), bits,
          copy(j.bounds, {static_cast<std::int64_t>(r.partition_sizes.size()), 2, S, H, D})};
}

}  // namespace
}  // namespace pagedattn_torch

// A fragment of the `pagedattn` library (torch_ops.cpp defines it): a plain function, the
// same on every dispatch key (its tensors are host tensors).
TORCH_LIBRARY_FRAGMENT(pagedattn, m) {
  m.def(
      "judge(Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, "
      "Tensor block_tables, Tensor seq_lens, int block_size, Tensor? alibi_slopes, "
      "str kv_cache_dtype, float k_scale, float v_scale, int[] partition_sizes, str profile) "
      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
      &pagedattn_torch::judge);
}
