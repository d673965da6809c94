// `pagedattn limits`: what each kernel asks of a device profile, from the same layout
// functions the launchers use (pagedattn/resources.h), so the printed numbers are the
// launched numbers.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli.h"
#include "emu/profile.h"
#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"
#include "pagedattn/supported.h"  // the head and block sizes
#include "pagedattn/validate.h"
#include "pagedattn_testing/formats.h"
#include "pagedattn_audit/traffic.h"

namespace cli {
namespace {

std::vector<std::string> to_strings(const int* begin, const int* end) {
  std::vector<std::string> v;
  for (const int* p = begin; p != end; ++p) v.push_back(std::to_string(*p));
  return v;
}

struct Settings {
  std::string profile = "bi-v100", head_size = "128", block_size = "16", partition_size = "512";
  // --traffic: the bytes each launch moves for one sequence of this shape.
  bool traffic = false;
  std::string num_heads = "32", num_kv_heads = "8", dtype = "f16", kv_cache_dtype = "auto";
  std::string seq_len = "10001";
};

int run_limits(const Settings& s);
pagedattn::audit::TrafficQuery traffic_query(const Settings& s);
void print_traffic(const Settings& s, const pagedattn::audit::TrafficQuery& q,
                   const pagedattn::audit::Traffic& t);

Run setup(CLI::App& app) {
  auto s = std::make_shared<Settings>();
  app.description(
      "Prints, for the device profile, each kernel's threads per block, grid and dynamic\n"
      "shared memory, and the longest sequence (max_seq_len) V1 can take.");
  app.add_option("--profile", s->profile, "device profile or profile .json file (default bi-v100)")
      ->option_text("NAME")
      ->check(profile_name());
  app.add_option("--head-size", s->head_size, "head size (default 128)")
      ->option_text("H")
      ->check(
          one_of(to_strings(std::begin(pagedattn::kHeadSizes), std::end(pagedattn::kHeadSizes))));
  app.add_option("--block-size", s->block_size, "tokens per KV-cache block (default 16)")
      ->option_text("B")
      ->check(
          one_of(to_strings(std::begin(pagedattn::kBlockSizes), std::end(pagedattn::kBlockSizes))));
  app.add_option("--partition-size", s->partition_size,
                 "V2 tokens per partition: a multiple of block size in [64, 4096] (default 512)")
      ->option_text("P")
      ->check(int_in(pagedattn::kMinPartitionSize, pagedattn::kMaxPartitionSize,
                     "a multiple of block size in [64, 4096]"));
  CLI::Option* traffic =
      app.add_flag("--traffic", s->traffic,
                   "also count the bytes each launch reads and writes, on the emulator (runs "
                   "pagedattn-traffic, beside this program)");
  const auto needs_traffic = [&](CLI::Option* o) { o->needs(traffic); };
  needs_traffic(app.add_option("--num-heads", s->num_heads, "--traffic: query heads (default 32)")
                    ->option_text("N")
                    ->check(int_in(1, 256, "an integer in [1, 256]")));
  needs_traffic(app.add_option("--num-kv-heads", s->num_kv_heads,
                               "--traffic: KV heads, dividing --num-heads (default 8)")
                    ->option_text("N")
                    ->check(int_in(1, 256, "an integer in [1, 256]")));
  needs_traffic(app.add_option("--dtype", s->dtype, "--traffic: query dtype (default f16)")
                    ->option_text("T")
                    ->check(one_of({"f32", "f16", "bf16"})));
  needs_traffic(app.add_option("--kv-cache-dtype", s->kv_cache_dtype,
                               "--traffic: vLLM's kv_cache_dtype (default auto)")
                    ->option_text("T")
                    ->check(one_of({"auto", "fp8", "fp8_e4m3", "fp8_e5m2"})));
  needs_traffic(app.add_option("--traffic-seq-len", s->seq_len,
                               "--traffic: tokens of the one sequence counted (default 10001; "
                               "the headline's 100000 takes minutes on the emulator)")
                    ->option_text("N")
                    ->check(int_in(1, 1000000, "an integer in [1, 1000000]")));
  return [s] { return run_limits(*s); };
}

const bool registered =
    add_command({"limits",
                 "each kernel's shared memory, threads and grid on a device profile, and the "
                 "longest sequence V1 fits",
                 &setup});

int run_limits(const Settings& s) {
  const int head_size = std::stoi(s.head_size);
  const int block_size = std::stoi(s.block_size);
  const int partition = std::stoi(s.partition_size);
  if (partition % block_size != 0) {
    throw UsageError("--partition-size must be a multiple of block size " +
                     std::to_string(block_size) + " in [64, 4096], got " + s.partition_size);
  }
  // Measured before anything is printed: a usage error or a missing helper writes nothing.
  pagedattn::audit::TrafficQuery q;
  pagedattn::audit::Traffic traffic;
  if (s.traffic) {
    q = traffic_query(s);
    traffic = pagedattn::audit::measure_traffic(q);
  }
  const emu::Profile prof = emu::load_profile(s.profile);
  const int ws = prof.warp_size;
  // The launchers opt in above 48 KB, so the per-block ceiling is the opt-in limit.
  const long long smem_limit = prof.shared_memory_per_block_optin;

  const std::int64_t longest = pagedattn::v1_max_seq_len(ws, head_size, block_size, smem_limit);
  pagedattn::Workload w;  // one sequence, one head: the per-block figures
  w.num_seqs = w.num_heads = w.num_kv_heads = 1;
  w.head_size = head_size;
  w.block_size = block_size;
  w.partition_size = partition;
  w.max_seq_len = longest;
  const auto v1 = pagedattn::v1_resources(ws, w);
  w.max_seq_len = partition;
  const auto v2 = pagedattn::v2_resources(ws, w);
  const auto red = pagedattn::reduce_resources(ws, w);
  const std::int64_t fixed_floats = pagedattn::attn_logits_offset(ws, head_size);
  const std::int64_t scratch_floats = std::int64_t(pagedattn::num_warps(ws) - 1) * head_size;

  std::cout << "profile " << prof.name << ": warp size " << ws << ", " << prof.multiprocessor_count
            << " multiprocessors, dynamic shared memory per block " << prof.shared_memory_per_block
            << " bytes (" << smem_limit << " with opt-in)\n"
            << "head_size " << head_size << ", block_size " << block_size << ", V2 partition_size "
            << partition << "\n\n";
  std::cout << pagedattn::kernel_entry_name(v1.kernel) << ": " << v1.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n"
            << "  dynamic shared memory 4 * (" << fixed_floats << " + max(round_up(max_seq_len, "
            << block_size << "), " << scratch_floats << ")) bytes; " << v1.dynamic_smem_bytes
            << " at max_seq_len " << longest << "\n";
  std::cout << pagedattn::kernel_entry_name(v2.kernel) << ": " << v2.threads_per_block
            << " threads per block, grid (num_heads, num_seqs, ceil(max_seq_len / " << partition
            << "))\n  dynamic shared memory " << v2.dynamic_smem_bytes << " bytes\n";
  std::cout << pagedattn::kernel_entry_name(red.kernel) << ": " << red.threads_per_block
            << " threads per block, grid (num_heads, num_seqs)\n  dynamic shared memory "
            << red.dynamic_smem_bytes << " bytes (streams over partitions: no length cap)\n";
  // The grouped kernels (Options::grouped): resources.h's head_groups and grouped_smem_bytes.
  const std::int64_t slice = pagedattn::grouped_head_floats(ws, head_size, partition);
  std::cout << "grouped V1/V2 (Options::grouped, r = num_heads / num_kv_heads > 1): grid "
               "(num_kv_heads * ceil(r / h), num_seqs[, partitions]), h heads per block, at "
               "most "
            << pagedattn::group_max_heads(ws, head_size, block_size) << ", as many as fit "
            << pagedattn::kGroupedSmemBudget << " bytes\n  dynamic shared memory 4 * ("
            << pagedattn::grouped_heads_offset(ws, head_size, block_size) << " + h * ("
            << pagedattn::round_up(head_size, 4) << " + round_up(max(tokens, " << scratch_floats
            << "), 4))) bytes; V2:";
  for (int r : {2, 4, 8, 16}) {
    w.num_kv_heads = 1;
    w.num_heads = r;
    const auto g = pagedattn::v2_grouped_resources(ws, w);
    std::cout << (r == 2 ? " " : ", ") << "r " << r << ": h " << g.groups.heads_per_block << ", "
              << g.dynamic_smem_bytes << " bytes";
  }
  std::cout << " (" << 4 * slice
            << " bytes per head)\n  built for f32/f16/bf16 (and their fp8 caches), head sizes "
            << pagedattn::list_text(pagedattn::GroupedHeadSizeList{}) << ", block sizes "
            << pagedattn::list_text(pagedattn::GroupedBlockSizeList{})
            << "; with one query head per KV head Options::grouped runs the per-head kernels";
  w.num_kv_heads = 8;
  w.num_heads = 32;
  if (const char* why = pagedattn::grouped_fallback_reason(w))
    std::cout << " (here: " << why << ")";
  // A block of one head shares no KV read: there the per-head kernel runs
  // (grouped_launch_fallback_reason); for V1 that is past this length.
  std::int64_t shared_to = 0;
  for (std::int64_t len = block_size;; len += block_size) {
    const auto g = pagedattn::head_groups(ws, head_size, block_size, 2,
                                          pagedattn::v1_partition_tokens(block_size, len));
    if (g.heads_per_block < 2) break;
    shared_to = len;
  }
  std::cout << "\n  where h would be 1, the per-head kernel (the same KV reads): grouped V1 "
               "shares them up to max_seq_len "
            << shared_to << "\n\n";

  // vLLM's own V1 request at the same limit, for comparison: one step per block. The
  // device also counts vLLM's static __shared__ arrays: q_vecs (head_size scalars; fp32,
  // the largest) and red_smem (2 * warps floats).
  const std::int64_t vllm_static = 4LL * head_size + 2LL * pagedattn::num_warps(ws) * 4;
  std::int64_t vllm_longest = 0;
  for (w.max_seq_len = block_size; pagedattn::vllm_v1_smem_bytes(ws, w) + vllm_static <= smem_limit;
       w.max_seq_len += block_size) {
    vllm_longest = w.max_seq_len;
  }
  std::cout << "longest V1 sequence: " << longest << " tokens (" << smem_limit
            << " bytes of shared memory; vLLM's V1 layout: " << vllm_longest << " tokens with its "
            << vllm_static << " static bytes, fp32)\n";
  if (s.traffic) print_traffic(s, q, traffic);
  return 0;
}

std::string ratio(std::uint64_t a, std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4fx", b ? double(a) / double(b) : 0.0);
  return buf;
}

pagedattn::audit::TrafficQuery traffic_query(const Settings& s) {
  pagedattn::audit::TrafficQuery q;
  q.profile = s.profile;
  q.dtype = s.dtype;
  q.kv_cache_dtype = s.kv_cache_dtype;
  q.num_heads = std::stoi(s.num_heads);
  q.num_kv_heads = std::stoi(s.num_kv_heads);
  q.head_size = std::stoi(s.head_size);
  q.block_size = std::stoi(s.block_size);
  q.partition_size = std::stoi(s.partition_size);
  q.seq_lens = {std::stoi(s.seq_len)};
  if (q.num_heads % q.num_kv_heads != 0) {
    throw UsageError("--num-heads " + s.num_heads + " must be a multiple of --num-kv-heads " +
                     s.num_kv_heads);
  }
  return q;
}

// The bytes each launch moved, beside the model's K and V loads (perfmodel.h
// kv_load_bytes) and what exists.
void print_traffic(const Settings& s, const pagedattn::audit::TrafficQuery& q,
                   const pagedattn::audit::Traffic& t) {
  pagedattn::Workload w;
  w.num_heads = q.num_heads;
  w.num_kv_heads = q.num_kv_heads;
  w.head_size = q.head_size;
  w.block_size = q.block_size;
  w.partition_size = q.partition_size;
  w.max_seq_len = q.seq_lens[0];
  // Element sizes from the one format table (--dtype is validated before this runs).
  pagedattn::DType scalar = pagedattn::DType::f16;
  pagedattn::testing::parse_short_name(s.dtype, &scalar);
  w.io_elem_bytes = static_cast<int>(pagedattn::testing::traits(scalar).size);
  w.cache_elem_bytes = s.kv_cache_dtype != "auto" ? 1 : w.io_elem_bytes;  // fp8: one byte
  const pagedattn::perf::Estimate e =
      pagedattn::perf::estimate(pagedattn::perf::load_device(s.profile), w);

  const std::uint64_t inputs = t.kv_bytes_exist + t.query_bytes + t.block_table_bytes;
  std::cout << "\nbytes moved, counted on the emulator (the instrumented kernels, "
               "pagedattn-traffic): 1 sequence of "
            << s.seq_len << " tokens, " << q.num_heads << " query heads over " << q.num_kv_heads
            << " KV heads, " << s.dtype << ", kv cache " << s.kv_cache_dtype << "\n"
            << "  KV cache bytes that exist: " << t.kv_bytes_exist << " (query " << t.query_bytes
            << ", block table " << t.block_table_bytes << ")\n";
  for (const pagedattn::audit::TrafficRun& r : t.runs) {
    const bool v1 = r.kernel == "v1", grouped = r.variant == "grouped";
    const pagedattn::perf::KernelEstimate& m =
        v1 ? (grouped ? e.v1_grouped : e.v1) : (grouped ? e.v2_grouped : e.v2);
    const std::string name = r.kernel + " " + r.variant;
    const std::string why = r.absent_reason();
    if (!why.empty()) {
      std::cout << "  " << name << ": absent, " << why << "\n";
      continue;
    }
    for (const pagedattn::audit::LaunchBytes& l : r.launches) {
      const bool reduce = l.role == "reduce";
      std::cout << "  " << name << " "
                << pagedattn::kernel_entry_name(reduce ? pagedattn::Kernel::reduce
                                                : v1   ? pagedattn::Kernel::v1
                                                       : pagedattn::Kernel::v2)
                << ": read " << l.bytes_read << " bytes, written " << l.bytes_written << " bytes";
      if (!reduce) {
        std::cout << "; KV read " << l.kv_bytes_read
                  << " bytes = " << ratio(l.kv_bytes_read, t.kv_bytes_exist)
                  << " what exists (model " << std::int64_t(m.kv_load_bytes) << ")";
      }
      std::cout << "\n";
    }
    std::cout << "  " << name << " in all: read " << r.bytes_read()
              << " bytes = " << ratio(r.bytes_read(), inputs)
              << " the KV cache, query and block table"
              << (r.grouped_fallback.empty() ? "" : " (ran per head: " + r.grouped_fallback + ")")
              << "\n";
  }
}

}  // namespace
}  // namespace cli
