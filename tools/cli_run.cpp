// `pagedattn run`: replay one decode step from a folder of .npy files on the emulator.
// Order matters for the promise "nothing is written on a validation error": load and
// check every input and every launch's arguments first, run the kernels into memory,
// and only then write the outputs, each atomically.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli.h"
#include "cli_replay.h"
#include "emu/profile.h"
#include "pagedattn/api.h"
#include "pagedattn/resources.h"

namespace cli {
namespace {

const char* const kHelp =
    "usage: pagedattn run DIR --out OUTDIR [--kernel v1|v2|both] [--profile NAME] [--scale S]\n"
    "                     [--kv-cache-dtype auto|fp8_e4m3|fp8_e5m2] [--k-scale X] [--v-scale X]\n"
    "                     [--partition-size P] [--bf16]\n"
    "\n"
    "Reads vLLM's paged_attention arguments from DIR as .npy files: query, key_cache,\n"
    "value_cache, block_tables, seq_lens and optionally alibi_slopes (float32 '<f4' or\n"
    "float16 '<f2'; with --bf16, '<u2' arrays hold bfloat16 bits; fp8 caches are uint8\n"
    "'|u1'; block_tables and seq_lens '<i4'; alibi_slopes '<f4'). num_kv_heads and\n"
    "block_size come from key_cache's shape, head_size from query's, max_seq_len is\n"
    "max(seq_lens). Runs the kernels on the emulator and writes to OUTDIR, in the\n"
    "query's dtype: out_v1.npy and/or out_v2.npy, plus V2's exp_sums.npy and\n"
    "max_logits.npy (float32) and tmp_out.npy (float32: the library keeps partial\n"
    "outputs in fp32).\n"
    "\n"
    "  --out OUTDIR            output folder (created if missing)\n"
    "  --kernel K              v1, v2 or both (default both)\n"
    "  --profile NAME          device profile or profile .json file (default bi-v100)\n"
    "  --scale S               softmax scale, finite (default head_size^-0.5)\n"
    "  --kv-cache-dtype T      auto, fp8_e4m3 or fp8_e5m2 (default auto)\n"
    "  --k-scale X, --v-scale X  fp8 dequantization scales, finite and > 0 (default 1)\n"
    "  --partition-size P      V2 tokens per partition: a multiple of block_size in\n"
    "                          [64, 4096] (default 512)\n"
    "  --bf16                  '<u2' arrays are bfloat16 bits\n"
    "  --help                  this text\n"
    "\n"
    "Nothing is written when an input breaks the contract (the error names the file and\n"
    "the rule). A launch the device refuses (V1 out of shared memory) is reported on\n"
    "stderr and the exit code is 1; with --kernel both the other kernel's outputs are\n"
    "still written.\n";

struct Settings {
  std::string dir, out_dir, kernel = "both", profile = "bi-v100", kv_cache_dtype = "auto";
  bool has_scale = false, bf16 = false;
  double scale = 0, k_scale = 1, v_scale = 1;
  int partition_size = 512;
};

Settings parse_settings(const std::vector<std::string>& argv, bool* help) {
  const Args args = parse_args(argv, {{"--out", true},
                                      {"--kernel", true},
                                      {"--profile", true},
                                      {"--scale", true},
                                      {"--kv-cache-dtype", true},
                                      {"--k-scale", true},
                                      {"--v-scale", true},
                                      {"--partition-size", true},
                                      {"--bf16", false}});
  Settings s;
  *help = args.has("--help");
  if (*help) return s;
  if (args.positional.size() != 1) {
    throw UsageError(args.positional.empty()
                         ? "DIR (the replay folder) is required"
                         : "exactly one DIR is allowed, got '" + args.positional[1] + "' too");
  }
  s.dir = args.positional[0];
  if (!args.has("--out")) throw UsageError("--out OUTDIR is required");
  s.out_dir = args.get("--out", "");
  if (s.out_dir.empty()) throw UsageError("--out must name a folder, got ''");
  std::error_code ec;
  if (std::filesystem::exists(s.out_dir, ec) && !std::filesystem::is_directory(s.out_dir, ec)) {
    throw UsageError("--out must name a folder, got '" + s.out_dir + "', which is a file");
  }
  s.kernel = parse_choice("--kernel", args.get("--kernel", "both"), {"v1", "v2", "both"});
  s.profile = args.get("--profile", "bi-v100");
  check_profile("--profile", s.profile);
  s.kv_cache_dtype = parse_choice("--kv-cache-dtype", args.get("--kv-cache-dtype", "auto"),
                                  {"auto", "fp8_e4m3", "fp8_e5m2"});
  if (args.has("--scale")) {
    s.has_scale = true;
    s.scale = parse_double("--scale", args.get("--scale", ""), "a finite number");
  }
  for (auto [flag, dst] :
       {std::pair{"--k-scale", &s.k_scale}, std::pair{"--v-scale", &s.v_scale}}) {
    if (!args.has(flag)) continue;
    *dst = parse_double(flag, args.get(flag, ""), "a finite number > 0");
    if (!(*dst > 0))
      throw UsageError(std::string(flag) + " must be a finite number > 0, got '" +
                       args.get(flag, "") + "'");
  }
  s.partition_size = static_cast<int>(parse_int(
      "--partition-size", args.get("--partition-size", "512"), pagedattn::kMinPartitionSize,
      pagedattn::kMaxPartitionSize, "a multiple of block_size in [64, 4096]"));
  s.bf16 = args.has("--bf16");
  return s;
}

// Owns an output tensor's bytes and knows how to write them as .npy.
struct Output {
  std::string name;  // file stem: "out_v1", "exp_sums", ...
  npy::Array array;
  pagedattn::TensorView view;
};

Output make_output(const std::string& name, const std::string& descr, pagedattn::DType dtype,
                   std::initializer_list<std::int64_t> shape) {
  Output o;
  o.name = name;
  o.array.descr = descr;
  o.array.shape.assign(shape.begin(), shape.end());
  // At least one byte so the view is "defined" even for an empty tensor.
  o.array.data.assign(std::max<std::size_t>(1, o.array.numel() * pagedattn::dtype_size(dtype)), 0);
  o.view = pagedattn::TensorView::contiguous(o.array.data.data(), dtype, shape);
  return o;
}

pagedattn::TensorView view_of(npy::Array& a, pagedattn::DType dtype) {
  pagedattn::TensorView t;
  t.data = a.data.empty() ? static_cast<void*>(&a) : a.data.data();  // empty: still "defined"
  t.dtype = dtype;
  t.ndim = static_cast<int>(a.shape.size());
  std::int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = a.shape[d];
    t.strides[d] = stride;
    stride *= a.shape[d];
  }
  return t;
}

// The arguments of one kernel call, in vLLM's order, over the replay's tensors.
struct Call {
  pagedattn::TensorView query, key_cache, value_cache, block_tables, seq_lens, alibi;
  const Replay* r;
  const Settings* s;
  double scale;
};

void call_v1(const Call& c, const Output& out, const pagedattn::Options& o) {
  pagedattn::paged_attention_v1(
      out.view, c.query, c.key_cache, c.value_cache, c.r->num_kv_heads, c.scale, c.block_tables,
      c.seq_lens, c.r->block_size, c.r->max_seq_len, c.alibi, c.s->kv_cache_dtype, c.s->k_scale,
      c.s->v_scale, 0, 0, 0, 64, 0, pagedattn::Backend::emulator(c.s->profile), o);
}

void call_v2(const Call& c, const Output& out, const Output& es, const Output& ml,
             const Output& tmp, const pagedattn::Options& o) {
  pagedattn::paged_attention_v2(out.view, es.view, ml.view, tmp.view, c.query, c.key_cache,
                                c.value_cache, c.r->num_kv_heads, c.scale, c.block_tables,
                                c.seq_lens, c.r->block_size, c.r->max_seq_len, c.alibi,
                                c.s->kv_cache_dtype, c.s->k_scale, c.s->v_scale, 0, 0, 0, 64, 0,
                                pagedattn::Backend::emulator(c.s->profile), o);
}

// Why V1 failed, in the terms a user can act on: the shared memory it needs here, the
// profile's ceiling, and the longest sequence that would fit.
std::string v1_failure(const Replay& r, const std::string& profile, const std::string& what) {
  const emu::Profile p = emu::load_profile(profile);
  const std::int64_t need = pagedattn::v1_resources(p.warp_size, r.num_seqs, r.num_heads,
                                                    r.head_size, r.block_size, r.max_seq_len)
                                .dynamic_smem_bytes;
  std::string msg = "paged_attention_v1 failed on profile " + p.name + ": ";
  if (need > p.shared_memory_per_block_optin) {
    msg += "max_seq_len " + std::to_string(r.max_seq_len) + " needs " + std::to_string(need) +
           " bytes of dynamic shared memory, the profile allows " +
           std::to_string(p.shared_memory_per_block_optin) + " (longest V1 sequence: " +
           std::to_string(pagedattn::v1_max_seq_len(p.warp_size, r.head_size, r.block_size,
                                                    p.shared_memory_per_block_optin)) +
           " tokens; use --kernel v2): ";
  }
  return msg + what;
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  bool help = false;
  const Settings s = parse_settings(argv, &help);
  if (help) {
    std::cout << kHelp;
    return 0;
  }
  Replay r = load_replay(s.dir, s.bf16, s.kv_cache_dtype);
  if (s.partition_size % r.block_size != 0) {
    throw UsageError("--partition-size must be a multiple of block_size " +
                     std::to_string(r.block_size) + " (from key_cache.npy) in [64, 4096], got " +
                     std::to_string(s.partition_size));
  }
  const bool want_v1 = s.kernel != "v2", want_v2 = s.kernel != "v1";

  Call c;
  c.r = &r;
  c.s = &s;
  c.scale = s.has_scale ? s.scale : 1.0 / std::sqrt(static_cast<double>(r.head_size));
  c.query = view_of(r.query, r.scalar);
  const pagedattn::DType cache_view = s.kv_cache_dtype == "auto" ? r.scalar : pagedattn::DType::u8;
  c.key_cache = view_of(r.key_cache, cache_view);
  c.value_cache = view_of(r.value_cache, cache_view);
  c.block_tables = view_of(r.block_tables, pagedattn::DType::i32);
  c.seq_lens = view_of(r.seq_lens, pagedattn::DType::i32);
  if (r.has_alibi) c.alibi = view_of(r.alibi_slopes, pagedattn::DType::f32);

  pagedattn::Options opts;
  opts.partition_size = s.partition_size;
  const std::int64_t S = r.num_seqs, H = r.num_heads, D = r.head_size;
  const std::int64_t P = pagedattn::max_num_partitions(r.max_seq_len, s.partition_size);
  Output out_v1 = make_output("out_v1", r.out_descr, r.scalar, {S, H, D});
  Output out_v2 = make_output("out_v2", r.out_descr, r.scalar, {S, H, D});
  Output exp_sums = make_output("exp_sums", "<f4", pagedattn::DType::f32, {S, H, P});
  Output max_logits = make_output("max_logits", "<f4", pagedattn::DType::f32, {S, H, P});
  // Numerics::exact_fp32 (the library's default) keeps partial outputs in fp32.
  Output tmp_out = make_output("tmp_out", "<f4", pagedattn::DType::f32, {S, H, P, D});

  // The library's own argument rules, before anything runs: a rule the file checks
  // missed still stops the run with nothing written.
  try {
    for (pagedattn::Kernel k : {pagedattn::Kernel::v1, pagedattn::Kernel::v2}) {
      if ((k == pagedattn::Kernel::v1 && !want_v1) || (k == pagedattn::Kernel::v2 && !want_v2)) {
        continue;
      }
      const Output& o = k == pagedattn::Kernel::v1 ? out_v1 : out_v2;
      const auto p = pagedattn::validate_attention(
          k, o.view, exp_sums.view, max_logits.view, tmp_out.view, c.query, c.key_cache,
          c.value_cache, r.num_kv_heads, c.scale, c.block_tables, c.seq_lens, r.block_size,
          r.max_seq_len, c.alibi, s.kv_cache_dtype, s.k_scale, s.v_scale, 0, 0, 0, 64, 0, opts);
      pagedattn::validate_indices(p, r.block_tables.as<std::int32_t>(),
                                  r.seq_lens.as<std::int32_t>());
    }
  } catch (const pagedattn::Error& e) {
    throw InputError(s.dir + ": " + e.what());
  }

  std::cout << "replay " << s.dir << ": num_seqs " << S << ", num_heads " << H << ", num_kv_heads "
            << r.num_kv_heads << ", head_size " << D << ", block_size " << r.block_size
            << ", max_seq_len " << r.max_seq_len << ", scale " << c.scale << ", profile "
            << s.profile << "\n";

  bool v1_ok = false, v2_ok = false;
  if (want_v1) {
    try {
      call_v1(c, out_v1, opts);
      v1_ok = true;
    } catch (const std::exception& e) {
      std::cerr << "pagedattn run: " << v1_failure(r, s.profile, e.what()) << "\n";
    }
  }
  if (want_v2) {
    try {
      call_v2(c, out_v2, exp_sums, max_logits, tmp_out, opts);
      v2_ok = true;
    } catch (const std::exception& e) {
      std::cerr << "pagedattn run: paged_attention_v2 failed on profile " << s.profile << ": "
                << e.what() << "\n";
    }
  }

  if (v1_ok || v2_ok) std::filesystem::create_directories(s.out_dir);
  const auto write = [&](const Output& o) {
    const std::string path = (std::filesystem::path(s.out_dir) / (o.name + ".npy")).string();
    npy::Array a = o.array;
    a.data.resize(a.numel() * a.itemsize());  // drop the placeholder byte of empty tensors
    npy::save_atomic(path, a);
    std::cout << "wrote " << path << " " << a.shape_string() << " '" << a.descr << "'\n";
  };
  if (v1_ok) write(out_v1);
  if (v2_ok) {
    for (const Output* o : {&out_v2, &exp_sums, &max_logits, &tmp_out}) write(*o);
  }
  return (want_v1 && !v1_ok) || (want_v2 && !v2_ok) ? kExitFailure : 0;
}

}  // namespace cli
