// libFuzzer target: the host API (pagedattn/api.h) on the emulator with random shapes,
// strides, dtypes and scalar arguments. Each tensor gets its own allocation of exactly
// the bytes its shape and strides span, so a rule the validation misses shows up as an
// ASan report when the kernel (or the index checks) reads past it. A call must return
// or throw pagedattn::Error / LaunchError; anything else is a finding. Problems are kept
// tiny (a few sequences, heads and blocks) so an accepted call runs in milliseconds.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emu/checks.h"
#include "pagedattn/api.h"
#include "pagedattn/validate.h"

namespace {

using pagedattn::DType;
using pagedattn::TensorView;

constexpr std::int64_t kMaxBytes = 1 << 20;

struct Tensor {
  std::vector<unsigned char> bytes;
  TensorView view;
};

// A tensor of `ndim` dims near `like` (a shape the rules want, so the fuzzer gets past
// the first checks often), with random or contiguous strides; undefined when the bytes
// it would span are too many.
Tensor make(FuzzedDataProvider& in, std::vector<std::int64_t> like, DType dtype) {
  Tensor t;
  if (in.ConsumeIntegralInRange(0, 15) == 0) return t;  // undefined: data == nullptr
  t.view.dtype = in.ConsumeIntegralInRange(0, 15) == 0
                     ? static_cast<DType>(in.ConsumeIntegralInRange(0, 6))
                     : dtype;
  int ndim = static_cast<int>(like.size());
  if (in.ConsumeIntegralInRange(0, 15) == 0) ndim = in.ConsumeIntegralInRange(0, 6);
  t.view.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    const std::int64_t base = d < static_cast<int>(like.size()) ? like[d] : 1;
    t.view.shape[d] =
        in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegralInRange(0, 70) : base;
  }
  const bool contiguous = in.ConsumeIntegralInRange(0, 3) != 0;
  std::int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    t.view.strides[d] = contiguous ? stride : in.ConsumeIntegralInRange<std::int64_t>(-4, 600);
    stride *= std::max<std::int64_t>(1, t.view.shape[d]);
  }
  // Span in elements: the lowest and highest offsets any index reaches.
  std::int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int d = 0; d < ndim; ++d) {
    if (t.view.shape[d] == 0) empty = true;
    const std::int64_t reach = (t.view.shape[d] - 1) * t.view.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const std::int64_t elems = empty ? 0 : hi - lo + 1;
  const std::int64_t item = static_cast<std::int64_t>(pagedattn::dtype_size(t.view.dtype));
  if (elems * item > kMaxBytes) return Tensor{};
  t.bytes.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, elems * item)));
  for (auto& b : t.bytes) b = in.ConsumeIntegral<unsigned char>();
  t.view.data = t.bytes.data() - lo * item;  // negative strides reach below data
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  emu::set_host_threads(1);  // one input, one thread: reproducible and cheap
  FuzzedDataProvider in(data, size);
  const int which = in.ConsumeIntegralInRange(0, 2);  // v1, v2, reduce
  const std::int64_t S = in.ConsumeIntegralInRange(0, 3), H = in.ConsumeIntegralInRange(1, 4);
  const int heads[] = {32, 64, 80, 96, 112, 120, 128, 192, 256, 48};
  const std::int64_t D = heads[in.ConsumeIntegralInRange(0, 9)];
  const std::int64_t KVH = in.ConsumeIntegralInRange(0, 4);
  const std::int64_t B = std::int64_t{8} << in.ConsumeIntegralInRange(0, 3);  // 8..64
  const std::int64_t NB = in.ConsumeIntegralInRange(0, 6);
  const std::int64_t M = in.ConsumeIntegralInRange(0, 6);
  const std::int64_t max_seq_len = in.ConsumeIntegralInRange<std::int64_t>(-2, 200);
  const char* const kv[] = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "int8"};
  const std::string kv_cache_dtype = kv[in.ConsumeIntegralInRange(0, 4)];
  const DType scalars[] = {DType::f32, DType::f16, DType::bf16};
  const DType scalar = scalars[in.ConsumeIntegralInRange(0, 2)];
  const DType cache = kv_cache_dtype == "auto" ? scalar : DType::u8;
  const std::int64_t x = 16 / static_cast<std::int64_t>(pagedattn::dtype_size(cache));
  const double scale = in.ConsumeFloatingPoint<double>();
  const double k_scale = in.ConsumeBool() ? 1.0 : in.ConsumeFloatingPoint<double>();
  const double v_scale = in.ConsumeBool() ? 1.0 : in.ConsumeFloatingPoint<double>();
  pagedattn::Options options;
  options.partition_size = in.ConsumeBool() ? 64 : in.ConsumeIntegralInRange(-1, 5000);
  options.numerics =
      in.ConsumeBool() ? pagedattn::Numerics::exact_fp32 : pagedattn::Numerics::vllm_compatible;
  const std::int64_t P = std::max<std::int64_t>(
      1, (std::max<std::int64_t>(0, max_seq_len) + 63) / 64);  // for partition size 64
  const DType tmp_type =
      options.numerics == pagedattn::Numerics::vllm_compatible ? scalar : DType::f32;

  Tensor out = make(in, {S, H, D}, scalar);
  Tensor query = make(in, {S, H, D}, scalar);
  Tensor key = make(in, {NB, KVH, D / x, B, x}, cache);
  Tensor value = make(in, {NB, KVH, D, B}, cache);
  Tensor tables = make(in, {S, M}, DType::i32);
  Tensor lens = make(in, {S}, DType::i32);
  Tensor alibi = in.ConsumeBool() ? make(in, {H}, DType::f32) : Tensor{};
  Tensor exp_sums = make(in, {S, H, P}, DType::f32);
  Tensor max_logits = make(in, {S, H, P}, DType::f32);
  Tensor tmp_out = make(in, {S, H, P, D}, tmp_type);
  // Index values mostly in range so accepted calls happen: block ids in [0, NB], lengths
  // in [0, max_seq_len].
  if (tables.view.dtype == DType::i32) {
    for (std::size_t i = 0; i + 4 <= tables.bytes.size(); i += 4) {
      const std::int32_t v = static_cast<std::int32_t>(tables.bytes[i] % (NB + 1));
      std::memcpy(&tables.bytes[i], &v, 4);
    }
  }
  if (lens.view.dtype == DType::i32) {
    for (std::size_t i = 0; i + 4 <= lens.bytes.size(); i += 4) {
      const std::int32_t v =
          static_cast<std::int32_t>(lens.bytes[i] % (std::max<std::int64_t>(0, max_seq_len) + 2));
      std::memcpy(&lens.bytes[i], &v, 4);
    }
  }

  const pagedattn::Backend emulator = pagedattn::Backend::emulator("h200");
  try {
    if (which == 0) {
      pagedattn::paged_attention_v1(out.view, query.view, key.view, value.view, KVH, scale,
                                    tables.view, lens.view, B, max_seq_len, alibi.view,
                                    kv_cache_dtype, k_scale, v_scale, emulator, options);
    } else if (which == 1) {
      pagedattn::paged_attention_v2(out.view, exp_sums.view, max_logits.view, tmp_out.view,
                                    query.view, key.view, value.view, KVH, scale, tables.view,
                                    lens.view, B, max_seq_len, alibi.view, kv_cache_dtype, k_scale,
                                    v_scale, emulator, options);
    } else {
      pagedattn::paged_attention_reduce(out.view, exp_sums.view, max_logits.view, tmp_out.view,
                                        lens.view, max_seq_len, emulator, options);
    }
  } catch (const pagedattn::Error&) {
  } catch (const pagedattn::LaunchError&) {
  }
  return 0;
}
