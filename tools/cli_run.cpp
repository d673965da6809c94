// `pagedattn run`: replay one decode step from a folder of .npy files on the emulator.
// Order matters for the promise "nothing is written on a validation error": load and
// check every input and every launch's arguments first, run the kernels into memory,
// and only then write the outputs, each atomically.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>
#include <string>

#include "cli.h"
#include "cli_replay.h"
#include "emu/profile.h"
#include "emu/traffic.h"
#include "pagedattn_audit/findings.h"
#include "pagedattn/api.h"
#include "pagedattn/resources.h"
#include "pagedattn_testing/kernel_under_test.h"

namespace cli {
namespace {

const char* const kDescription =
    "Replays one decode step. Reads vLLM's paged_attention arguments from DIR as .npy\n"
    "files: query, key_cache, value_cache, block_tables, seq_lens and optionally\n"
    "alibi_slopes (float32 '<f4' or float16 '<f2'; with --bf16, '<u2' arrays hold\n"
    "bfloat16 bits; fp8 caches are uint8 '|u1'; block_tables and seq_lens '<i4';\n"
    "alibi_slopes '<f4'). num_kv_heads and block_size come from key_cache's shape,\n"
    "head_size from query's, max_seq_len is max(seq_lens). Runs the kernels on the\n"
    "emulator and writes to OUTDIR, in the query's dtype: out_v1.npy and/or out_v2.npy,\n"
    "plus V2's exp_sums.npy and max_logits.npy (float32) and tmp_out.npy (float32: the\n"
    "library keeps partial outputs in fp32).";

const char* const kFooter =
    "Nothing is written when an input breaks the contract (the error names the file and\n"
    "the rule). A launch the device refuses (V1 out of shared memory) is reported on\n"
    "stderr and the exit code is 1; with --kernel both the other kernel's outputs are\n"
    "still written. A NaN or inf in a live input (a query element, a key or value slot\n"
    "inside seq_len, an ALiBi slope) or in an output is reported as a finding naming the\n"
    "first offending index; the outputs are still written, and --strict makes the exit\n"
    "code 1.";

struct Settings {
  std::string dir, out_dir, kernel = "both", profile = "bi-v100", kv_cache_dtype = "auto";
  std::string scale, k_scale = "1", v_scale = "1", partition_size = "512";
  bool bf16 = false, strict = false, grouped = false;
};

int run(const Settings& s);

Run setup(CLI::App& app) {
  auto s = std::make_shared<Settings>();
  app.description(kDescription);
  app.footer(kFooter);
  app.add_option("DIR", s->dir, "the replay folder holding the .npy inputs")->required();
  app.add_option("--out", s->out_dir, "output folder (created if missing)")
      ->option_text("OUTDIR")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::error_code ec;
            if (v.empty()) return "must name a folder, got ''";
            if (std::filesystem::exists(v, ec) && !std::filesystem::is_directory(v, ec)) {
              return "must name a folder, got '" + v + "', which is a file";
            }
            return "";
          },
          "", "folder"));
  app.add_option("--kernel", s->kernel, "v1, v2 or both (default both)")
      ->option_text("K")
      ->check(one_of({"v1", "v2", "both"}));
  app.add_option("--profile", s->profile, "device profile or profile .json file (default bi-v100)")
      ->option_text("NAME")
      ->check(profile_name());
  app.add_option("--scale", s->scale, "softmax scale, finite (default head_size^-0.5)")
      ->option_text("S")
      ->check(finite_number(false));
  app.add_option("--kv-cache-dtype", s->kv_cache_dtype,
                 "auto, fp8 (= fp8_e4m3, as vLLM), fp8_e4m3 or fp8_e5m2 (default auto)")
      ->option_text("T")
      ->check(one_of({"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  app.add_option("--k-scale", s->k_scale,
                 "fp8 key dequantization scale, finite and > 0 (default 1)")
      ->option_text("X")
      ->check(finite_number(true));
  app.add_option("--v-scale", s->v_scale,
                 "fp8 value dequantization scale, finite and > 0 (default 1)")
      ->option_text("X")
      ->check(finite_number(true));
  app.add_option("--partition-size", s->partition_size,
                 "V2 tokens per partition: a multiple of block_size in [64, 4096] with\n"
                 "ceil(max_seq_len / P) <= 65535 (the grid's z limit; default 512)")
      ->option_text("P")
      ->check(int_in(pagedattn::kMinPartitionSize, pagedattn::kMaxPartitionSize,
                     "a multiple of block_size in [64, 4096]"));
  app.add_flag("--grouped", s->grouped,
               "the grouped kernels (Options::grouped: one thread block serves the query\n"
               "heads of one KV head, reading each KV element once for them; the same\n"
               "outputs bit for bit); where no KV read is shared (one query head per KV\n"
               "head), the per-head kernels, and the run says why");
  app.add_flag("--bf16", s->bf16, "'<u2' arrays are bfloat16 bits");
  app.add_flag("--strict", s->strict, "exit 1 when there is a non-finite finding");
  return [s] {
    Settings t = *s;
    if (t.kv_cache_dtype == "fp8") t.kv_cache_dtype = "fp8_e4m3";  // vLLM's meaning of "fp8"
    return run(t);
  };
}

const bool registered = add_command(
    {"run", "replay a decode step from .npy files (vLLM's argument names) on the emulator",
     &setup});

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

// The inputs of the replay's kernel calls, by name (outputs are set per call).
struct Call {
  pagedattn::AttentionCall inputs;
  const Settings* s;
};
using pagedattn::testing::Case;

pagedattn::AttentionCall with_outputs(const Call& c, pagedattn::Kernel k, const Output& out,
                                      const Output& es, const Output& ml, const Output& tmp) {
  pagedattn::AttentionCall a = c.inputs;
  a.out = out.view;
  if (k == pagedattn::Kernel::v2) {
    a.exp_sums = es.view;
    a.max_logits = ml.view;
    a.tmp_out = tmp.view;
  }
  return a;
}

// With --grouped, says which attention kernels the call launched, from the emulator's
// launch log (emu/traffic.h names every launch), and why not the grouped ones.
void call_kernel(const Call& c, const Case& r, pagedattn::Kernel k, const Output& out,
                 const Output& es, const Output& ml, const Output& tmp,
                 const pagedattn::Options& o) {
  emu::take_launch_traffic();
  if (o.grouped) emu::set_count_traffic(true);
  try {
    pagedattn::paged_attention(k, with_outputs(c, k, out, es, ml, tmp),
                               pagedattn::Backend::emulator(c.s->profile), o);
  } catch (...) {
    emu::set_count_traffic(false);
    throw;
  }
  if (!o.grouped) return;
  emu::set_count_traffic(false);
  bool grouped = false;
  for (const emu::LaunchTraffic& t : emu::take_launch_traffic())
    grouped |= t.kernel.find("grouped_attention_kernel") != std::string::npos;
  const char* why = pagedattn::testing::grouped_fallback(
      r, k, emu::load_profile(c.s->profile).warp_size, o.partition_size);
  std::cout << pagedattn::kernel_name(k) << ": "
            << (grouped ? "grouped kernels launched"
                        : std::string("per-head kernels launched (") + (why ? why : "?") + ")")
            << "\n";
}

// Why V1 failed, in the terms a user can act on: the shared memory it needs here, the
// profile's ceiling, and the longest sequence that would fit.
std::string v1_failure(const Case& r, const std::string& profile, const std::string& what) {
  const emu::Profile p = emu::load_profile(profile);
  pagedattn::Workload w;
  w.num_seqs = r.num_seqs;
  w.num_heads = r.num_heads;
  w.head_size = r.head_size;
  w.block_size = r.block_size;
  w.max_seq_len = r.max_seq_len;
  const std::int64_t need = pagedattn::v1_resources(p.warp_size, w).dynamic_smem_bytes;
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

int run(const Settings& s) {
  Case r = load_replay(s.dir, s.bf16, s.kv_cache_dtype);
  const bool want_v1 = s.kernel != "v2", want_v2 = s.kernel != "v1";
  const int partition_size = std::stoi(s.partition_size);
  if (partition_size % r.block_size != 0) {
    throw UsageError("--partition-size must be a multiple of block_size " +
                     std::to_string(r.block_size) + " (from key_cache.npy) in [64, 4096], got " +
                     s.partition_size);
  }
  // V2's grid has one z index per partition; over the limit no launch can run it.
  const std::int64_t partitions = pagedattn::max_num_partitions(r.max_seq_len, partition_size);
  if (want_v2 && partitions > pagedattn::kMaxGridYZ) {
    const std::int64_t fewest = (r.max_seq_len + pagedattn::kMaxGridYZ - 1) / pagedattn::kMaxGridYZ;
    const std::int64_t need = std::max<std::int64_t>(
        pagedattn::kMinPartitionSize, (fewest + r.block_size - 1) / r.block_size * r.block_size);
    throw UsageError("--partition-size " + s.partition_size + " gives ceil(max_seq_len " +
                     std::to_string(r.max_seq_len) + " / " + s.partition_size +
                     ") = " + std::to_string(partitions) +
                     " partitions, over the grid's z limit 65535: use --partition-size >= " +
                     std::to_string(need) + " (or --kernel v1)");
  }

  // The flags' values as given (doubles, as vLLM passes them): `run` judges nothing, so
  // the kernels see exactly what the user wrote.
  r.scale =
      !s.scale.empty() ? std::stod(s.scale) : 1.0 / std::sqrt(static_cast<double>(r.head_size));
  r.k_scale = std::stod(s.k_scale);
  r.v_scale = std::stod(s.v_scale);
  Call c;
  c.s = &s;
  c.inputs = r.call();

  pagedattn::Options opts;
  opts.partition_size = partition_size;
  opts.grouped = s.grouped;
  const std::int64_t S = r.num_seqs, H = r.num_heads, D = r.head_size;
  const std::int64_t P = pagedattn::max_num_partitions(r.max_seq_len, partition_size);
  Output out_v1 = make_output("out_v1", npy_descr(r.scalar), r.scalar, {S, H, D});
  Output out_v2 = make_output("out_v2", npy_descr(r.scalar), r.scalar, {S, H, D});
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
          k, with_outputs(c, k, o, exp_sums, max_logits, tmp_out), opts);
      pagedattn::validate_indices(p, r.block_tables.data(), r.seq_lens.data());
    }
  } catch (const pagedattn::Error& e) {
    throw InputError(s.dir + ": " + e.what());
  }

  std::cout << "replay " << s.dir << ": num_seqs " << S << ", num_heads " << H << ", num_kv_heads "
            << r.num_kv_heads << ", head_size " << D << ", block_size " << r.block_size
            << ", max_seq_len " << r.max_seq_len << ", scale " << c.inputs.scale << ", profile "
            << s.profile << "\n";

  bool v1_ok = false, v2_ok = false;
  if (want_v1) {
    try {
      call_kernel(c, r, pagedattn::Kernel::v1, out_v1, exp_sums, max_logits, tmp_out, opts);
      v1_ok = true;
    } catch (const std::exception& e) {
      std::cerr << "pagedattn run: " << v1_failure(r, s.profile, e.what()) << "\n";
    }
  }
  if (want_v2) {
    try {
      call_kernel(c, r, pagedattn::Kernel::v2, out_v2, exp_sums, max_logits, tmp_out, opts);
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

  // Findings: a poisoned live input or a non-finite output is named, never passed over.
  std::vector<std::string> findings;
  const std::string input = pagedattn::audit::first_nonfinite_input(r);
  if (!input.empty()) findings.push_back("non-finite live input " + input);
  for (const Output* o : {&out_v1, &out_v2}) {
    if (!(o == &out_v1 ? v1_ok : v2_ok)) continue;
    const std::string f =
        pagedattn::audit::first_nonfinite_output(o->name, r.scalar, o->array.data.data(), S, H, D);
    if (!f.empty()) findings.push_back("non-finite output " + f);
  }
  for (const std::string& f : findings) std::cerr << "pagedattn run: finding: " << f << "\n";
  if ((want_v1 && !v1_ok) || (want_v2 && !v2_ok)) return kExitFailure;
  return s.strict && !findings.empty() ? kExitFailure : 0;
}

}  // namespace
}  // namespace cli
