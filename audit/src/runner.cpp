// The runner. The reference of a case's inputs is computed once, on its own thread, while
// the kernels run on the emulator: on 2 cores the two overlap instead of adding up.
#include "pagedattn_audit/runner.h"
#include "pagedattn_audit/findings.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <map>

#include "emu/checks.h"
#include "emu/device_math.h"
#include "emu/profile.h"
#include "pagedattn/api.h"
#include "pagedattn/resources.h"
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/adversarial_exp.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/kernel_under_test.h"
#if PAGEDATTN_AUDIT_CUDA
#include "native.h"
#endif

namespace pagedattn::audit {
namespace {

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
    case emu::math::ExpModel::Mode::adversarial:
      return "adversarial";
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

#if PAGEDATTN_AUDIT_CUDA
// max |a - b| over two outputs of the same shape (raw elements of `dtype`); NaN in one
// and not the other is an infinite difference, NaN in both none.
double max_abs_diff(DType dtype, const std::vector<std::uint8_t>& a,
                    const std::vector<std::uint8_t>& b) {
  const std::size_t es = dtype_size(dtype), n = std::min(a.size(), b.size()) / es;
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double va = testing::decode(dtype, a.data(), i), vb = testing::decode(dtype, b.data(), i);
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
CaseResult describe_case(const testing::Case& in, const Origin& origin, const KernelVariant& kernel,
                         const std::string& profile, int warp_size, const std::string& backend,
                         int partition_size, const std::string& numerics) {
  CaseResult r;
  r.kernel = kernel.kernel;
  r.variant = kernel.variant();
  if (kernel.grouped) {
    const Kernel k = kernel.kernel == "v1" ? Kernel::v1 : Kernel::v2;
    const int P = partition_size ? partition_size : Options{}.partition_size;
    if (const char* why = testing::grouped_fallback(in, k, warp_size, P)) r.grouped_fallback = why;
  }
  r.profile = profile;
  r.backend = backend;
  r.dtype = testing::traits(in.scalar).short_name;
  r.kv_cache_dtype = testing::kv_cache_dtype(in.cache);
  r.distribution = origin.distribution;
  r.numerics = numerics;
  r.num_seqs = in.num_seqs;
  r.num_heads = in.num_heads;
  r.num_kv_heads = in.num_kv_heads;
  r.head_size = in.head_size;
  r.block_size = in.block_size;
  r.seq_len = in.max_seq_len;
  r.partition_size = partition_size;
  r.alibi = in.has_alibi();
  r.seed = origin.seed;
  return r;
}

// --traffic: the case's bytes from pagedattn-traffic, once per kernel, variant, partition
// size and numerics choices of one input set (the exp model moves no byte).
void count_traffic(CaseResult& r, const testing::Case& in, int partition_size,
                   const NumericsChoices& choices, std::map<std::string, Traffic>& done) {
  if (!r.launched) {
    r.traffic_absent = "not launched";
    return;
  }
  TrafficQuery q;
  q.profile = r.profile;
  q.dtype = r.dtype;
  q.kv_cache_dtype = r.kv_cache_dtype;
  q.num_heads = r.num_heads;
  q.num_kv_heads = r.num_kv_heads;
  q.head_size = r.head_size;
  q.block_size = r.block_size;
  q.partition_size = partition_size;
  q.seq_lens.assign(in.seq_lens.begin(), in.seq_lens.end());
  q.alibi = r.alibi;
  q.choices = choices;
  q.kernel = r.kernel;
  q.variant = r.variant;
  const std::string key = r.profile + "/" + r.kernel + "/" + r.variant + "/" +
                          std::to_string(partition_size) + "/" + r.numerics;
  auto it = done.find(key);
  if (it == done.end()) {
    try {
      it = done.emplace(key, measure_traffic(q)).first;
    } catch (const std::exception& e) {
      r.traffic_absent = e.what();
      return;
    }
  }
  const std::string why = it->second.runs.at(0).absent_reason();
  if (why.empty()) {
    r.traffic = it->second;
    r.traffic_absent.clear();
  } else {
    r.traffic_absent = why;
  }
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

std::vector<CaseResult> run_inputs(const Config& c, const testing::Case& in, const Origin& origin,
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
  const std::shared_future<ref::Output> reference = std::async(std::launch::async, [&] {
    ref::Output r = testing::exact(in);
    ref_time = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ref).count();
    return r;
  });

  // The exact magnitudes the bound takes (kernel_error_bound), also beside the kernels.
  const std::shared_future<testing::Magnitudes> bound_magnitudes =
      std::async(std::launch::async, [&] { return testing::magnitudes(in); });
  // --exp-mode adversarial needs both before its launches (the directions come from the
  // exact output); one adversary per partition size.
  const bool adversarial =
      c.exp_mode == "adversarial" &&
      std::any_of(c.exp_ulps.begin(), c.exp_ulps.end(), [](int k) { return k > 0; });
  std::map<int, testing::AdversarialExp> adversaries;
  auto adversary = [&](int P) -> const testing::AdversarialExp& {
    auto it = adversaries.find(P);
    if (it == adversaries.end()) {
      it = adversaries
               .emplace(
                   P, testing::AdversarialExp(in, bound_magnitudes.get(), reference.get().value, P))
               .first;
    }
    return it->second;
  };

  const std::int64_t S = in.num_seqs, H = in.num_heads, D = in.head_size;
  const AttentionCall inputs = in.call();

  const std::vector<KernelVariant> kernels = kernel_variants(c.kernel);
  const std::vector<NumericsVariant> numerics = numerics_variants(c.numerics);

  std::map<std::string, Traffic> traffic;  // --traffic: what pagedattn-traffic counted
  std::vector<CaseResult> results;
  std::vector<std::vector<std::uint8_t>> outputs;  // each launched case's out, for metrics
  std::vector<testing::BoundSetup> bound_cases;    // what each case's bound needs
  for (const std::string& profile : on_emulator ? c.profiles : std::vector<std::string>{}) {
    const emu::Profile prof = emu::load_profile(profile);
    for (const KernelVariant& kernel : kernels) {
      const std::vector<int> parts =
          kernel.kernel == "v1" ? std::vector<int>{0} : c.partition_sizes;
      for (int P : parts) {
        for (const NumericsVariant& num : numerics) {
          for (int k : c.exp_ulps) {
            CaseResult r = describe_case(in, origin, kernel, prof.name, prof.warp_size, c.backend,
                                         P, num.name);
            emu::math::ExpModel em;
            if (k > 0 && adversarial) {
              em = adversary(P).model(k);
            } else if (k > 0) {
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
            opt.grouped = kernel.grouped;
            if (P) opt.partition_size = P;
            const std::int64_t NP =
                P ? std::max<std::int64_t>(1, max_num_partitions(in.max_seq_len, P)) : 1;
            Buffer out(in.scalar, {S, H, D});
            const auto t0 = std::chrono::steady_clock::now();
            try {
              ExpModelScope scope(em);
              const Backend be = Backend::emulator(profile);
              AttentionCall call = inputs;
              call.out = out.view;
              if (kernel.kernel == "v1") {
                paged_attention(Kernel::v1, call, be, opt);
              } else {
                Buffer es(DType::f32, {S, H, NP}), ml(DType::f32, {S, H, NP});
                Buffer tmp(effective_choices(opt).partials_in_output_dtype ? in.scalar : DType::f32,
                           {S, H, NP, D});
                call.exp_sums = es.view;
                call.max_logits = ml.view;
                call.tmp_out = tmp.view;
                paged_attention(Kernel::v2, call, be, opt);
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
            if (c.traffic)
              count_traffic(r, in, P ? P : opt.partition_size, effective_choices(opt), traffic);
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
  // of the same kernel, variant, partition size and numerics.
  const std::size_t num_emulated = results.size();
  for (const KernelVariant& kernel : on_cuda ? kernels : std::vector<KernelVariant>{}) {
    const std::vector<int> parts = kernel.kernel == "v1" ? std::vector<int>{0} : c.partition_sizes;
    for (int P : parts) {
      for (const NumericsVariant& num : numerics) {
        CaseResult r = describe_case(in, origin, kernel, device_name, 32, "cuda", P, num.name);
        r.exp_mode = "device";
        if (c.traffic) r.traffic_absent = "cuda backend: bytes are counted on the emulator";
        Options opt;
        opt.numerics = num.numerics;
        opt.vllm_choices = num.choices;
        opt.grouped = kernel.grouped;
        if (P) opt.partition_size = P;
        const std::int64_t NP =
            P ? std::max<std::int64_t>(1, max_num_partitions(in.max_seq_len, P)) : 1;
        std::vector<std::uint8_t> out;
        try {
          r.time_s = native::run(*device_inputs, kernel.kernel, opt, NP, out);
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
            if (e.kernel != r.kernel || e.variant != r.variant || e.partition_size != P ||
                e.numerics != r.numerics || !e.launched)
              continue;
            r.gpu_vs_emulator_max_abs_diff = max_abs_diff(in.scalar, out, outputs[i]);
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

  const testing::Magnitudes& magnitudes = bound_magnitudes.get();
  const std::string input_finding = first_nonfinite_input(in);
  const ref::Output& exact = reference.get();
  for (std::size_t i = 0; i < results.size(); ++i) {
    CaseResult& r = results[i];
    r.ref_time_s = ref_time;
    if (!input_finding.empty()) r.findings.push_back("non-finite live input " + input_finding);
    if (r.launched) {
      const std::vector<double> bounds =
          testing::element_bounds(in, magnitudes, bound_cases[i], exact.value, exact.value_err);
      r.metrics = compute_metrics(in.scalar, outputs[i].data(), exact.value, exact.bits, &bounds,
                                  &exact.value_err);
      if (r.metrics->worst_element >= 0) {
        r.worst_bound = testing::element_bound_parts(
            in, magnitudes, bound_cases[i], exact.value, exact.value_err,
            static_cast<std::size_t>(r.metrics->worst_element));
      }
      const std::string f = first_nonfinite_output("out", in.scalar, outputs[i].data(), S, H, D);
      if (!f.empty()) r.findings.push_back("non-finite output " + f);
    }
    if (progress) progress(r);
  }
  return results;
}

namespace {

// One generated case of the grid. A distribution built for one summation order
// (depends_on_warp) is generated per profile and run on that profile alone, so every row's
// inputs follow from its own shape, seed and profile; native rows (--backend cuda) get
// warp 32's, and --backend both the first profile's (the device's rows share them).
void run_generated(const Config& c, CaseShape sh, const std::string& dist, std::uint64_t seed,
                   const std::function<void(const CaseResult&)>& progress,
                   std::vector<CaseResult>& all) {
  std::vector<Config> runs{c};
  if (depends_on_warp(dist) && c.backend == "emulator" && c.profiles.size() > 1) {
    runs.clear();
    for (const std::string& p : c.profiles) {
      runs.push_back(c);
      runs.back().profiles = {p};
    }
  }
  for (const Config& rc : runs) {
    sh.warp_size = rc.backend == "cuda" || rc.profiles.empty()
                       ? 32
                       : testing::profile_warp_size(rc.profiles.front());
    testing::Case in = generate_inputs(sh, dist, seed, c.threads);
    if (c.has_scale) in.scale = testing::float_value(c.scale);
    for (CaseResult& r : run_inputs(rc, in, {dist, seed}, progress)) all.push_back(std::move(r));
  }
}

}  // namespace

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
                        if (!testing::parse_short_name(dt, &sh.dtype) ||
                            !is_scalar_dtype(sh.dtype)) {
                          throw UsageError("--dtype: unknown '" + dt + "'");
                        }
                        if (!parse_kv_cache_dtype(kv, &sh.cache)) {
                          throw UsageError("--kv-cache-dtype: unknown '" + kv + "'");
                        }
                        sh.seq_len = len;
                        sh.alibi = al == "on";
                        run_generated(c, sh, dist, seed, progress, all);
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
