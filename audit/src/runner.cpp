// The runner. The reference of a case's inputs is computed once, on its own thread, while
// the kernels run on the emulator: on 2 cores the two overlap instead of adding up.
#include "pagedattn_audit/runner.h"
#include "pagedattn_audit/findings.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>

#include "emu/checks.h"
#include "emu/device_math.h"
#include "emu/profile.h"
#include "pagedattn/api.h"
#include "pagedattn/resources.h"
#include "pagedattn_ref/reference.h"
#include "case_bound.h"
#if PAGEDATTN_AUDIT_CUDA
#include "native.h"
#endif

namespace pagedattn::audit {
namespace {

ref::DType to_ref(DType t) {
  switch (t) {
    case DType::f32:
      return ref::DType::f32;
    case DType::f16:
      return ref::DType::f16;
    case DType::bf16:
      return ref::DType::bf16;
    case DType::fp8_e4m3:
      return ref::DType::fp8_e4m3;
    case DType::fp8_e5m2:
      return ref::DType::fp8_e5m2;
    default:
      throw std::invalid_argument("audit: no reference dtype for this dtype");
  }
}

ref::Problem to_problem(const Inputs& in) {
  ref::Problem p;
  p.num_seqs = in.num_seqs;
  p.num_heads = in.num_heads;
  p.num_kv_heads = in.num_kv_heads;
  p.head_size = in.head_size;
  p.block_size = in.block_size;
  p.num_blocks = static_cast<int>(in.num_blocks);
  p.max_blocks_per_seq = in.max_blocks_per_seq;
  p.scalar_dtype = to_ref(in.dtype);
  p.cache_dtype = in.cache == CacheFormat::fp8_e4m3   ? ref::DType::fp8_e4m3
                  : in.cache == CacheFormat::fp8_e5m2 ? ref::DType::fp8_e5m2
                                                      : to_ref(in.dtype);
  p.query = in.query.data();
  p.key_cache = in.key_cache.data();
  p.value_cache = in.value_cache.data();
  p.block_tables = in.block_tables.data();
  p.seq_lens = in.seq_lens.data();
  p.alibi_slopes = in.alibi_slopes.empty() ? nullptr : in.alibi_slopes.data();
  p.scale = in.scale;
  p.k_scale = in.k_scale;
  p.v_scale = in.v_scale;
  return p;
}

// Restores the exact exp model however a kernel call ends.
struct ExpModelScope {
  explicit ExpModelScope(const emu::math::ExpModel& m) { emu::math::set_exp_model(m); }
  ~ExpModelScope() { emu::math::set_exp_model({}); }
};

const char* mode_name(emu::math::ExpModel::Mode m) {
  switch (m) {
    case emu::math::ExpModel::Mode::random:
      return "random";
    case emu::math::ExpModel::Mode::up:
      return "up";
    case emu::math::ExpModel::Mode::down:
      return "down";
    default:
      return "exact_host";
  }
}

struct Buffer {
  std::vector<std::uint8_t> bytes;
  TensorView view;
  Buffer(DType t, std::initializer_list<std::int64_t> shape) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    bytes.assign(std::max<std::size_t>(1, static_cast<std::size_t>(n) * dtype_size(t)), 0);
    view = TensorView::contiguous(bytes.data(), t, shape);
  }
};

TensorView view(const void* data, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(const_cast<void*>(data), t, shape);
}

#if PAGEDATTN_AUDIT_CUDA
// max |a - b| over two outputs of the same shape (raw elements of `dtype`); NaN in one
// and not the other is an infinite difference, NaN in both none.
double max_abs_diff(DType dtype, const std::vector<std::uint8_t>& a,
                    const std::vector<std::uint8_t>& b) {
  const std::size_t es = dtype_size(dtype), n = std::min(a.size(), b.size()) / es;
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t ba = 0, bb = 0;
    std::memcpy(&ba, a.data() + i * es, es);
    std::memcpy(&bb, b.data() + i * es, es);
    const double va = decode_output(dtype, ba), vb = decode_output(dtype, bb);
    if (std::isnan(va) || std::isnan(vb)) {
      if (std::isnan(va) != std::isnan(vb)) return INFINITY;
      continue;
    }
    const double d = va == vb ? 0.0 : std::fabs(va - vb);  // inf == inf: no difference
    if (!(d <= m)) m = d;
  }
  return m;
}
#endif

// What a case ran on: the inputs' shape and kind, the kernel and where it ran.
CaseResult describe_case(const Inputs& in, const std::string& kernel, const std::string& profile,
                         const std::string& backend, int partition_size,
                         const std::string& numerics) {
  CaseResult r;
  r.kernel = kernel;
  r.profile = profile;
  r.backend = backend;
  r.dtype = in.dtype == DType::f32 ? "f32" : in.dtype == DType::bf16 ? "bf16" : "f16";
  r.kv_cache_dtype = in.kv_cache_dtype();
  r.distribution = in.distribution;
  r.numerics = numerics;
  r.num_seqs = in.num_seqs;
  r.num_heads = in.num_heads;
  r.num_kv_heads = in.num_kv_heads;
  r.head_size = in.head_size;
  r.block_size = in.block_size;
  r.seq_len = in.max_seq_len;
  r.partition_size = partition_size;
  r.alibi = !in.alibi_slopes.empty();
  r.seed = in.seed;
  return r;
}

}  // namespace

std::vector<NumericsVariant> numerics_variants(const std::string& selection) {
  const NumericsVariant ours{"ours", Numerics::exact_fp32, {}};
  const NumericsVariant vllm{"vllm", Numerics::vllm_compatible, NumericsChoices::all()};
  if (selection == "ours") return {ours};
  if (selection == "vllm") return {vllm};
  if (selection == "both") return {ours, vllm};
  if (selection == "ablation") {
    NumericsVariant partials{"vllm_partials_only", Numerics::exact_fp32, {}};
    partials.choices.partials_in_output_dtype = true;
    NumericsVariant eps{"vllm_epsilon_only", Numerics::exact_fp32, {}};
    eps.choices.epsilon_denominator = true;
    NumericsVariant round_p{"vllm_round_p_only", Numerics::exact_fp32, {}};
    round_p.choices.round_probabilities = true;
    return {ours, partials, eps, round_p, vllm};
  }
  throw UsageError("--numerics: unknown '" + selection + "' (ours, vllm, both, ablation)");
}

std::vector<CaseResult> run_inputs(const Config& c, const Inputs& in,
                                   const std::function<void(const CaseResult&)>& progress) {
  emu::set_host_threads(c.threads);
  const bool on_emulator = c.backend != "cuda";
  const bool on_cuda = c.backend != "emulator";
  // The device first: without one, fail before any work (a runtime error, exit 1).
#if PAGEDATTN_AUDIT_CUDA
  const std::string device_name = on_cuda ? native::require_device() : "";
  const std::shared_ptr<native::DeviceInputs> device_inputs =
      on_cuda ? native::upload(in) : nullptr;
#else
  if (on_cuda) {
    throw UsageError("--backend " + c.backend + ": this build has no CUDA backend");
  }
#endif
  const auto t_ref = std::chrono::steady_clock::now();
  double ref_time = 0;
  auto reference = std::async(std::launch::async, [&] {
    ref::Options o;
    o.out_dtype = to_ref(in.dtype);
    ref::Output r = ref::reference_attention(to_problem(in), o);
    ref_time = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ref).count();
    return r;
  });

  // The exact magnitudes the bound takes (kernel_error_bound), also beside the kernels.
  auto bound_magnitudes = std::async(std::launch::async, [&] { return bound_inputs(in); });

  const std::int64_t S = in.num_seqs, H = in.num_heads, D = in.head_size, B = in.block_size,
                     KVH = in.num_kv_heads, NB = in.num_blocks;
  const DType ce = in.cache_elem();
  const std::int64_t x = 16 / static_cast<std::int64_t>(dtype_size(ce));
  const TensorView q = view(in.query.data(), in.dtype, {S, H, D});
  const TensorView kc = view(in.key_cache.data(), ce, {NB, KVH, D / x, B, x});
  const TensorView vc = view(in.value_cache.data(), ce, {NB, KVH, D, B});
  const TensorView bt = view(in.block_tables.data(), DType::i32, {S, in.max_blocks_per_seq});
  const TensorView sl = view(in.seq_lens.data(), DType::i32, {S});
  const TensorView al =
      in.alibi_slopes.empty() ? TensorView{} : view(in.alibi_slopes.data(), DType::f32, {H});

  std::vector<std::string> kernels;
  if (c.kernel != "v2") kernels.push_back("v1");
  if (c.kernel != "v1") kernels.push_back("v2");
  const std::vector<NumericsVariant> numerics = numerics_variants(c.numerics);

  std::vector<CaseResult> results;
  std::vector<std::vector<std::uint8_t>> outputs;  // each launched case's out, for metrics
  std::vector<BoundCase> bound_cases;              // what each case's bound needs
  for (const std::string& profile : on_emulator ? c.profiles : std::vector<std::string>{}) {
    const emu::Profile prof = emu::load_profile(profile);
    for (const std::string& kernel : kernels) {
      const std::vector<int> parts = kernel == "v1" ? std::vector<int>{0} : c.partition_sizes;
      for (int P : parts) {
        for (const NumericsVariant& num : numerics) {
          for (int k : c.exp_ulps) {
            CaseResult r = describe_case(in, kernel, prof.name, c.backend, P, num.name);
            emu::math::ExpModel em;
            if (k > 0) {
              em.mode = c.exp_mode == "up"     ? emu::math::ExpModel::Mode::up
                        : c.exp_mode == "down" ? emu::math::ExpModel::Mode::down
                                               : emu::math::ExpModel::Mode::random;
              em.max_ulp = k;
              em.seed = c.exp_seed;
            }
            r.exp_mode = mode_name(em.mode);
            r.exp_max_ulp = em.max_ulp;
            r.exp_seed = em.mode == emu::math::ExpModel::Mode::random ? em.seed : 0;
            r.exp_stated_a = prof.expf_fast_ulp_a;
            r.exp_stated_b = prof.expf_fast_ulp_b;

            Options opt;
            opt.numerics = num.numerics;
            opt.vllm_choices = num.choices;
            if (P) opt.partition_size = P;
            const std::int64_t NP =
                P ? std::max<std::int64_t>(1, max_num_partitions(in.max_seq_len, P)) : 1;
            Buffer out(in.dtype, {S, H, D});
            const auto t0 = std::chrono::steady_clock::now();
            try {
              ExpModelScope scope(em);
              const Backend be = Backend::emulator(profile);
              if (kernel == "v1") {
                paged_attention_v1(out.view, q, kc, vc, KVH, in.scale, bt, sl, B, in.max_seq_len,
                                   al, in.kv_cache_dtype(), in.k_scale, in.v_scale, be, opt);
              } else {
                Buffer es(DType::f32, {S, H, NP}), ml(DType::f32, {S, H, NP});
                Buffer tmp(effective_choices(opt).partials_in_output_dtype ? in.dtype : DType::f32,
                           {S, H, NP, D});
                paged_attention_v2(out.view, es.view, ml.view, tmp.view, q, kc, vc, KVH, in.scale,
                                   bt, sl, B, in.max_seq_len, al, in.kv_cache_dtype(), in.k_scale,
                                   in.v_scale, be, opt);
              }
              r.status = "ok";
              r.launched = true;
            } catch (const LaunchError& e) {
              r.status = "refused";
              r.reason = e.what();
            } catch (const std::exception& e) {
              r.status = "error";
              r.reason = e.what();
            }
            r.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            // The emulator's exp is the correctly rounded one moved at most k ulps.
            bound_cases.push_back({prof.warp_size, P, effective_choices(opt),
                                   bound::ExpAccuracy::emulator(em.max_ulp)});
            outputs.push_back(r.launched ? std::move(out.bytes) : std::vector<std::uint8_t>{});
            results.push_back(std::move(r));
          }
        }
      }
    }
  }

#if PAGEDATTN_AUDIT_CUDA
  // The native cases: no profile or exp-model axis (the device is what it is, its exp is
  // its own __expf). With --backend both, each is compared with the first emulator case
  // of the same kernel, partition size and numerics.
  const std::size_t num_emulated = results.size();
  for (const std::string& kernel : on_cuda ? kernels : std::vector<std::string>{}) {
    const std::vector<int> parts = kernel == "v1" ? std::vector<int>{0} : c.partition_sizes;
    for (int P : parts) {
      for (const NumericsVariant& num : numerics) {
        CaseResult r = describe_case(in, kernel, device_name, "cuda", P, num.name);
        r.exp_mode = "device";
        Options opt;
        opt.numerics = num.numerics;
        opt.vllm_choices = num.choices;
        if (P) opt.partition_size = P;
        const std::int64_t NP =
            P ? std::max<std::int64_t>(1, max_num_partitions(in.max_seq_len, P)) : 1;
        std::vector<std::uint8_t> out;
        try {
          r.time_s = native::run(*device_inputs, kernel, opt, NP, out);
          r.status = "ok";
          r.launched = true;
        } catch (const LaunchError& e) {
          r.status = "refused";
          r.reason = e.what();
        } catch (const Error& e) {
          r.status = "error";
          r.reason = e.what();
        }  // CUDA runtime failures (std::runtime_error) end the audit: exit 1
        if (r.launched) {
          for (std::size_t i = 0; i < num_emulated; ++i) {
            const CaseResult& e = results[i];
            if (e.kernel != r.kernel || e.partition_size != P || e.numerics != r.numerics ||
                !e.launched)
              continue;
            r.gpu_vs_emulator_max_abs_diff = max_abs_diff(in.dtype, out, outputs[i]);
            break;
          }
        }
        // NVIDIA: warp 32, and __expf as CUDA documents it (2 + floor(1.173|x|) ulps).
        bound_cases.push_back({32, P, effective_choices(opt), bound::ExpAccuracy::cuda_fast()});
        outputs.push_back(r.launched ? std::move(out) : std::vector<std::uint8_t>{});
        results.push_back(std::move(r));
      }
    }
  }
#endif

  const BoundInputs magnitudes = bound_magnitudes.get();
  LiveInputs live;
  live.num_seqs = S, live.num_heads = H, live.num_kv_heads = KVH, live.head_size = D;
  live.block_size = B, live.max_blocks_per_seq = in.max_blocks_per_seq;
  live.scalar = in.dtype;
  live.cache = in.cache == CacheFormat::same       ? in.dtype
               : in.cache == CacheFormat::fp8_e4m3 ? DType::fp8_e4m3
                                                   : DType::fp8_e5m2;
  live.query = in.query.data(), live.key_cache = in.key_cache.data();
  live.value_cache = in.value_cache.data(), live.block_tables = in.block_tables.data();
  live.seq_lens = in.seq_lens.data(), live.scale = in.scale;
  live.alibi_slopes = in.alibi_slopes.empty() ? nullptr : in.alibi_slopes.data();
  // The magnitudes read every live input (q and slopes where a sequence has a token, keys
  // and values inside seq_len) and mark each row that read a non-finite one: only then is
  // there a finding to name, and the scan for its first element runs.
  const bool any_nonfinite =
      std::any_of(magnitudes.rows.begin(), magnitudes.rows.end(),
                  [](const bound::RowMagnitudes& m) { return std::isnan(m.spread); });
  const std::string input_finding =
      any_nonfinite || !std::isfinite(in.scale) ? first_nonfinite_input(live) : "";
  const ref::Output exact = reference.get();
  for (std::size_t i = 0; i < results.size(); ++i) {
    CaseResult& r = results[i];
    r.ref_time_s = ref_time;
    if (!input_finding.empty()) r.findings.push_back("non-finite live input " + input_finding);
    if (r.launched) {
      const std::vector<double> bounds =
          element_bounds(in, magnitudes, bound_cases[i], exact.value, exact.value_err);
      r.metrics = compute_metrics(in.dtype, outputs[i].data(), exact.value, exact.bits, &bounds);
      const std::string f = first_nonfinite_output("out", in.dtype, outputs[i].data(), S, H, D);
      if (!f.empty()) r.findings.push_back("non-finite output " + f);
    }
    if (progress) progress(r);
  }
  return results;
}

std::vector<CaseResult> run_grid(const Config& c,
                                 const std::function<void(const CaseResult&)>& progress) {
  std::vector<CaseResult> all;
  for (int ns : c.num_seqs) {
    for (int nh : c.num_heads) {
      for (int nkv : c.num_kv_heads) {
        if (nh % nkv != 0)
          continue;  // not a whole GQA group: skipped (check_config
                     // rejects a grid with no valid pair)
        for (int hs : c.head_sizes) {
          for (int bs : c.block_sizes) {
            for (const std::string& dt : c.dtypes) {
              for (const std::string& kv : c.kv_cache_dtypes) {
                for (int len : c.seq_lens) {
                  for (const std::string& al : c.alibi) {
                    for (const std::string& dist : c.distributions) {
                      for (std::uint64_t seed : c.seeds) {
                        CaseShape sh;
                        sh.num_seqs = ns;
                        sh.num_heads = nh;
                        sh.num_kv_heads = nkv;
                        sh.head_size = hs;
                        sh.block_size = bs;
                        sh.dtype = dt == "f32"    ? DType::f32
                                   : dt == "bf16" ? DType::bf16
                                                  : DType::f16;
                        if (!parse_kv_cache_dtype(kv, &sh.cache)) {
                          throw UsageError("--kv-cache-dtype: unknown '" + kv + "'");
                        }
                        sh.seq_len = len;
                        sh.alibi = al == "on";
                        Inputs in = generate_inputs(sh, dist, seed, c.threads);
                        if (c.has_scale) in.scale = static_cast<float>(c.scale);
                        for (CaseResult& r : run_inputs(c, in, progress)) {
                          all.push_back(std::move(r));
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return all;
}

}  // namespace pagedattn::audit
