// pagedattn_gpu_check: the native kernels (CUDA) against the emulator (h200 profile, the
// same warp width) and the double reference, on the same inputs, in three classes:
//   bitwise  every attention instantiation (dtype x cache x head size x block size), V1 and
//            V2, on inputs whose math order is the same on both executors: every token of a
//            KV head has the same key, so all logits of a row are equal and every exp is
//            exp(0) = 1 exactly (CUDA's __expf and the emulator's exp model agree there);
//            everything else (q.k, the sums, P.V, conversions, V2's states and reduce) must
//            then match bit for bit: out, and V2's exp_sums, max_logits and tmp_out;
//   bound    random inputs, where __expf and the emulator's exp differ: each executor
//            against the exact reference within the proven bound (pagedattn::testing's
//            judge: kernel_error_bound with CUDA's __expf accuracy and warp 32);
//   reduce   the reduce alone on the same host-made partition states: bitwise when every
//            maximum is equal (weights s_p exp(0)), else within the derived reduce bound
//            (kernels/tests/reduce_bound.h) of the exact fold.
// --dry runs the "native" side on the emulator too (no CUDA call at all), so the plumbing
// is tested without a GPU; --inject-wrong flips one output bit of every native run, which
// every class must catch (shows the comparisons can fail).
//
// usage: pagedattn_gpu_check [--grid full|quick|sanitizer] [--json FILE] [--dry]
//                            [--inject-wrong]
// Exit status 0 only if every check passes; 1 if one fails; 2 for a usage error.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../gpu_bench/cuda_check.h"
#include "../tests/reduce_bound.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"
#include "pagedattn_testing/judge.h"
#include "pagedattn_testing/run.h"
#include "pagedattn_testing/uniform_case.h"

using namespace pagedattn;
using namespace pagedattn::testing;
using pagedattn::test::reduce_bounds;
using pagedattn::test::worst_ratio;
namespace wrong = pagedattn::test::wrong;
using json = nlohmann::json;

namespace {

bool g_inject = false;
constexpr const char* kProfile = "h200";  // the emulator's twin of an NVIDIA GPU: warp 32

using gpubench::check;
// Device memory, or host memory under --dry (the emulator reads host pointers).
using DevBuf = gpubench::Buffer;

Backend native_backend() {
  return gpubench::dry ? Backend::emulator(kProfile) : Backend::cuda();
}
void native_sync() {
  if (!gpubench::dry) check(cudaDeviceSynchronize(), "kernel execution");
}

// run_kernel (pagedattn_testing/run.h) on the native executor: the same call, the same
// poisoned outputs, V2's states copied back too.
Outputs run_native(const Case& c, Kernel kernel, const Options& opt) {
  const std::int64_t S = c.num_seqs, H = c.num_heads, D = c.head_size;
  Outputs o;
  o.out_dtype = c.scalar;
  o.out_bytes.assign(S * H * D * traits(c.scalar).size, 0xff);
  DevBuf out(o.out_bytes), q(c.query), kc(c.key_cache), vc(c.value_cache), bt(c.block_tables),
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
    paged_attention(Kernel::v1, call, native_backend(), opt);
  } else {
    const std::int64_t P = max_num_partitions(c.max_seq_len, opt.partition_size);
    o.num_partitions = static_cast<int>(P);
    o.tmp_dtype = effective_choices(opt).partials_in_output_dtype ? c.scalar : DType::f32;
    o.exp_sums.assign(S * H * P, NAN);
    o.max_logits.assign(S * H * P, NAN);
    o.tmp_out.assign(S * H * P * D * traits(o.tmp_dtype).size, 0xff);
    DevBuf es(o.exp_sums), ml(o.max_logits), tmp(o.tmp_out);
    call.exp_sums = TensorView::contiguous(es.ptr, DType::f32, {S, H, P});
    call.max_logits = TensorView::contiguous(ml.ptr, DType::f32, {S, H, P});
    call.tmp_out = TensorView::contiguous(tmp.ptr, o.tmp_dtype, {S, H, P, D});
    paged_attention(Kernel::v2, call, native_backend(), opt);
    native_sync();
    es.to_host(o.exp_sums);
    ml.to_host(o.max_logits);
    tmp.to_host(o.tmp_out);
  }
  native_sync();
  out.to_host(o.out_bytes);
  if (g_inject) o.out_bytes[0] ^= 1;  // one bit of element 0: every class must notice
  o.out.resize(S * H * D);
  for (std::size_t i = 0; i < o.out.size(); ++i) o.out[i] = decode(c.scalar, o.out_bytes.data(), i);
  return o;
}

// Every token of each KV head gets token 0's key (block table slot 0 of sequence 0), in
// the cache bytes (the case's only copy): all logits of a row equal.
void make_keys_identical(Case& c) {
  const KvLayout L = c.layout();
  const std::size_t esz = traits(c.cache_element()).size;
  const Block blk0{c.table(0, 0)};
  for (int kvh = 0; kvh < c.num_kv_heads; ++kvh)
    for (std::int64_t blk = 0; blk < c.num_blocks; ++blk)
      for (int slot = 0; slot < c.block_size; ++slot)
        for (int d = 0; d < c.head_size; ++d)
          std::memcpy(&c.key_cache[L.key(Block{blk}, KvHead{kvh}, Slot{slot}, Dim{d}) * esz],
                      &c.key_cache[L.key(blk0, KvHead{kvh}, Slot{0}, Dim{d}) * esz], esz);
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(a[i] - b[i]);
    d = std::isnan(e) ? (std::isnan(a[i]) && std::isnan(b[i]) ? d : INFINITY) : std::max(d, e);
  }
  return d;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

const char* short_name(DType t) {
  return traits(t).short_name;
}

// One attention case: its inputs and the options of the call.
struct Spec {
  UniformSpec in;
  Options opt;
};

struct Runner {
  json rows = json::array();
  int failures = 0;

  void record(json row, bool pass) {
    row["pass"] = pass;
    failures += !pass;
    std::printf("%-8s %-44s %-6s %s%s\n", row["class"].get<std::string>().c_str(),
                row["name"].get<std::string>().c_str(), row["kernel"].get<std::string>().c_str(),
                row.contains("bitwise") && !row["bitwise"].is_null()
                    ? (row["bitwise"].get<bool>() ? "bitwise " : "DIFFERS ")
                    : "",
                pass ? "" : " FAIL");
    if (!pass && row.contains("detail"))
      std::printf("    %s\n", row["detail"].get<std::string>().c_str());
    rows.push_back(std::move(row));
  }

  // One attention case: native, emulated, reference; bitwise expected or not.
  void attention(const std::string& cls, const std::string& name, const Spec& spec, bool bitwise) {
    Case input = uniform_case(spec.in);
    if (bitwise) make_keys_identical(input);
    const Judge judge(std::move(input));
    const Case& c = judge.input();
    const Options& opt = spec.opt;
    for (Kernel ver : {Kernel::v1, Kernel::v2}) {
      json row = {{"class", cls},
                  {"name", name},
                  {"kernel", ver == Kernel::v1 ? "v1" : "v2"},
                  {"dtype", short_name(c.scalar)},
                  {"cache", kv_cache_dtype(c.cache)},
                  {"head_size", c.head_size},
                  {"block_size", c.block_size},
                  {"partition_size", opt.partition_size},
                  {"seq_lens", c.seq_lens},
                  {"numerics", opt.numerics == Numerics::exact_fp32 ? "ours" : "vllm_compatible"}};
      try {
        const Outputs gpu = run_native(c, ver, opt);
        const Outputs emu = run_kernel(c, ver, kProfile, opt);
        const Verdict g = judge.verdict(gpu.out, ver, opt, kProfile);
        const Verdict e = judge.verdict(emu.out, ver, opt, kProfile);
        const bool same = gpu.out_bytes == emu.out_bytes &&
                          same_bytes(gpu.exp_sums, emu.exp_sums) &&
                          same_bytes(gpu.max_logits, emu.max_logits) && gpu.tmp_out == emu.tmp_out;
        row["bitwise"] = same;
        row["bitwise_expected"] = bitwise;
        row["gpu_over_bound"] = g.worst;
        row["emu_over_bound"] = e.worst;
        row["max_abs_gpu_minus_emu"] = max_abs_diff(gpu.out, emu.out);
        // A NaN where the exact value is finite counts +inf (judge.h's err_over_bound).
        const bool pass = g.worst <= 1 && e.worst <= 1 && (!bitwise || same);
        if (!pass) row["detail"] = "gpu: " + g.where + "; emu: " + e.where;
        record(row, pass);
      } catch (const std::exception& ex) {
        row["detail"] = ex.what();
        record(row, false);
      }
    }
  }

  // The reduce alone on states made here: P partitions of one sequence, 4 heads.
  void reduce(const std::string& name, DType out_t, bool equal_maxima, int P, std::uint64_t seed) {
    const int S = 1, H = 4, D = 128, Psize = 512;
    const std::int64_t len = static_cast<std::int64_t>(P) * Psize - 100;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> us(1, 512), uo(-1, 1), um(-20, 20);
    std::vector<float> es(S * H * P), ml(S * H * P), tmp(S * H * P * D);
    for (int i = 0; i < S * H * P; ++i) {
      ml[i] = equal_maxima ? 3.f : static_cast<float>(um(rng));
      es[i] = static_cast<float>(us(rng));
      for (int d = 0; d < D; ++d) tmp[i * D + d] = static_cast<float>(uo(rng));
    }
    std::vector<std::int32_t> sl = {static_cast<std::int32_t>(len)};
    Options opt;
    opt.partition_size = Psize;
    const std::size_t out_bytes = S * H * D * traits(out_t).size;
    json row = {{"class", "reduce"},          {"name", name},    {"kernel", "reduce"},
                {"dtype", short_name(out_t)}, {"partitions", P}, {"head_size", D}};
    try {
      std::vector<std::uint8_t> emu_out(out_bytes, 0xff), gpu_out(out_bytes, 0xff);
      auto call = [&](void* o, void* e, void* m, void* t, void* s, const Backend& be) {
        paged_attention_reduce(TensorView::contiguous(o, out_t, {S, H, D}),
                               TensorView::contiguous(e, DType::f32, {S, H, P}),
                               TensorView::contiguous(m, DType::f32, {S, H, P}),
                               TensorView::contiguous(t, DType::f32, {S, H, P, D}),
                               TensorView::contiguous(s, DType::i32, {S}), len, be, opt);
      };
      call(emu_out.data(), es.data(), ml.data(), tmp.data(), sl.data(),
           Backend::emulator(kProfile));
      {
        DevBuf o(gpu_out), e(es), m(ml), t(tmp), s(sl);
        call(o.ptr, e.ptr, m.ptr, t.ptr, s.ptr, native_backend());
        native_sync();
        o.to_host(gpu_out);
      }
      if (g_inject) gpu_out[0] ^= 1;
      const bool same = gpu_out == emu_out;
      row["bitwise"] = same;
      row["bitwise_expected"] = equal_maxima;
      double g_ratio = 0, e_ratio = 0;
      if (out_t == DType::f32) {  // the derived bound is for the fp32 fold and output
        for (int h = 0; h < H; ++h) {
          const auto st = wrong::row_states(&ml[h * P], &es[h * P], &tmp[h * P * D], P, D);
          const auto exact = wrong::reduce(wrong::Reduction::right, st);
          const auto bound = reduce_bounds(st);
          std::vector<double> g(D), e(D);
          for (int d = 0; d < D; ++d) {
            g[d] = decode(out_t, gpu_out.data(), h * D + d);
            e[d] = decode(out_t, emu_out.data(), h * D + d);
          }
          g_ratio = std::max(g_ratio, worst_ratio(g, exact, bound));
          e_ratio = std::max(e_ratio, worst_ratio(e, exact, bound));
        }
        row["gpu_over_bound"] = g_ratio;
        row["emu_over_bound"] = e_ratio;
      }
      record(row, g_ratio <= 1 && e_ratio <= 1 && (!equal_maxima || same));
    } catch (const std::exception& ex) {
      row["detail"] = ex.what();
      record(row, false);
    }
  }
};

Spec base(DType t, CacheFormat cache, int head, int block, std::vector<int> lens, int part) {
  Spec k;
  k.in.scalar = t;
  k.in.cache = cache;
  k.in.head_size = head;
  k.in.block_size = block;
  k.in.num_heads = 4;
  k.in.num_kv_heads = 2;
  k.in.seq_lens = std::move(lens);
  k.in.k_scale = 0.75;
  k.in.v_scale = 1.5;
  k.opt.partition_size = part;
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  std::string grid = "full", json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--grid" && i + 1 < argc) {
      grid = argv[++i];
      if (grid != "full" && grid != "quick" && grid != "sanitizer") {
        std::fprintf(stderr,
                     "pagedattn_gpu_check: --grid: must be one of {full, quick, sanitizer}, "
                     "got '%s'\n",
                     grid.c_str());
        return 2;
      }
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--dry") {
      gpubench::dry = true;
    } else if (a == "--inject-wrong") {
      g_inject = true;
    } else {
      std::fprintf(stderr,
                   "pagedattn_gpu_check: unknown argument '%s' (allowed: --grid "
                   "full|quick|sanitizer, --json FILE, --dry, --inject-wrong)\n",
                   a.c_str());
      return 2;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string device = "emulator (h200 profile): --dry";
  if (!gpubench::dry) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::printf("gpu_check: no CUDA device (--dry runs without one)\n");
      return 1;
    }
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    device = prop.name;
    std::printf("gpu_check on %s (sm_%d%d, %d SMs, %zu B shared/block opt-in), grid %s\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                prop.sharedMemPerBlockOptin, grid.c_str());
  } else {
    std::printf("gpu_check --dry: the native side runs on the emulator too, grid %s\n",
                grid.c_str());
  }
  Runner run;
  const bool small = grid == "sanitizer";
  // Bitwise class: every instantiation (full), three head sizes (quick), three cases
  // (sanitizer). seq_lens 1 (one token), 300 and 777 (partial blocks, several partitions
  // of 256, empty partitions past the shorter sequences); GQA 4 over 2.
  const std::vector<int> heads = grid == "full"
                                     ? std::vector<int>(kHeadSizes.begin(), kHeadSizes.end())
                                     : std::vector<int>{64, 128, 256};
  const std::vector<int> lens = small ? std::vector<int>{1, 300} : std::vector<int>{1, 300, 777};
  int n = 0;
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (bool fp8 : {false, true})
      for (int h : heads)
        for (int b : {8, 16, 32}) {
          if (fp8 && h == 120) continue;  // 16-element fp8 key chunks cannot tile 120
          if (small && !((t == DType::f16 && !fp8 && h == 128 && b == 16) ||
                         (t == DType::bf16 && fp8 && h == 64 && b == 32) ||
                         (t == DType::f32 && !fp8 && h == 256 && b == 8)))
            continue;
          // Both fp8 formats, alternately (one instantiation serves both: a runtime flag).
          const CacheFormat cache = !fp8             ? CacheFormat::same
                                    : (n++ % 2 == 0) ? CacheFormat::fp8_e4m3
                                                     : CacheFormat::fp8_e5m2;
          Spec c = base(t, cache, h, b, lens, 256);
          c.in.seed = 1000 + n;
          run.attention("bitwise",
                        std::string(short_name(t)) + " " + kv_cache_dtype(cache) + " h" +
                            std::to_string(h) + " b" + std::to_string(b),
                        c, true);
        }
  {  // vLLM's numerics (rounded probabilities, epsilon, fp16 partials): same order too
    Spec c = base(DType::f16, CacheFormat::same, 128, 16, lens, 256);
    c.opt.numerics = Numerics::vllm_compatible;
    run.attention("bitwise", "f16 auto h128 b16 vllm_compatible", c, true);
  }
  // Bound class: random inputs, exp in play. 8 heads over 2 KV heads, partition 512.
  struct B {
    const char* name;
    DType t;
    CacheFormat cache;
    int head, block;
    std::vector<int> lens;
    bool alibi;
    Numerics num;
  };
  std::vector<B> bound_cases = {
      {"f16 auto h128 b16",
       DType::f16,
       CacheFormat::same,
       128,
       16,
       {1, 511, 513, 2000},
       false,
       Numerics::exact_fp32},
      {"bf16 fp8_e4m3 h64 b32",
       DType::bf16,
       CacheFormat::fp8_e4m3,
       64,
       32,
       {37, 1030},
       false,
       Numerics::exact_fp32},
      {"f32 auto h256 b8",
       DType::f32,
       CacheFormat::same,
       256,
       8,
       {700, 5},
       false,
       Numerics::exact_fp32},
      {"f16 fp8_e5m2 h80 b16 alibi",
       DType::f16,
       CacheFormat::fp8_e5m2,
       80,
       16,
       {900, 64},
       true,
       Numerics::exact_fp32},
      {"f16 auto h128 b16 vllm_compatible",
       DType::f16,
       CacheFormat::same,
       128,
       16,
       {1500, 3},
       false,
       Numerics::vllm_compatible},
      {"f16 auto h128 b16 long",
       DType::f16,
       CacheFormat::same,
       128,
       16,
       {20000},
       false,
       Numerics::exact_fp32},
  };
  if (small) bound_cases = {bound_cases[0]};
  for (const B& k : bound_cases) {
    Spec c = base(k.t, k.cache, k.head, k.block, small ? std::vector<int>{1, 600} : k.lens, 512);
    c.in.num_heads = 8;
    c.in.alibi = k.alibi;
    c.opt.numerics = k.num;
    run.attention("bound", k.name, c, false);
  }
  // Reduce class.
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    run.reduce(std::string(short_name(t)) + " equal maxima", t, true, small ? 3 : 40, 7);
  run.reduce("f32 maxima in [-20, 20]", DType::f32, false, small ? 3 : 300, 8);

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json summary = json::object();
  for (const char* cls : {"bitwise", "bound", "reduce"}) {
    int cases = 0, passed = 0, identical = 0;
    double worst = 0;
    for (const auto& r : run.rows) {
      if (r["class"] != cls) continue;
      ++cases;
      passed += r["pass"].get<bool>();
      identical += r.value("bitwise", false);
      if (r.contains("gpu_over_bound")) worst = std::max(worst, r["gpu_over_bound"].get<double>());
    }
    summary[cls] = {{"cases", cases},
                    {"passed", passed},
                    {"bitwise_identical", identical},
                    {"worst_gpu_over_bound", worst}};
  }
  const bool ok = run.failures == 0;
  std::printf("gpu_check: %s (%d of %zu checks failed) in %.1f s\n", ok ? "PASS" : "FAIL",
              run.failures, run.rows.size(), secs);
  if (!json_path.empty()) {
    json j = {{"tool", "pagedattn_gpu_check"},
              {"device", device},
              {"dry", gpubench::dry},
              {"inject_wrong", g_inject},
              {"grid", grid},
              {"emulator_profile", kProfile},
              {"pass", ok},
              {"seconds", secs},
              {"summary", summary},
              {"cases", run.rows}};
    std::ofstream(json_path) << j.dump(1) << "\n";
  }
  return ok ? 0 : 1;
}
