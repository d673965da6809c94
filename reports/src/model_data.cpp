#include "model_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>

#include "emu/profile.h"
#include "pagedattn/perfmodel.h"
#include "pagedattn/resources.h"
#include "pagedattn/version_select.h"

namespace pagedattn::report {
namespace {

using json = nlohmann::json;

// 1 .. 1,000,000 tokens, `per_decade` points per decade, rounded to whole tokens.
std::vector<std::int64_t> log_grid(int per_decade) {
  std::vector<std::int64_t> v;
  for (int i = 0; i <= 6 * per_decade; ++i) {
    const auto n = static_cast<std::int64_t>(std::llround(std::pow(10.0, double(i) / per_decade)));
    if (v.empty() || n != v.back()) v.push_back(n);
  }
  return v;
}

json nullable(double t) {
  return std::isfinite(t) ? json(t) : json(nullptr);
}

json kernel_json(const perf::KernelEstimate& k) {
  return {{"kernel", kernel_name(k.kernel)},
          {"grouped", k.grouped},
          {"heads_per_block", k.heads_per_block},
          {"launchable", k.launchable},
          {"reason", k.reason},
          {"blocks", k.blocks},
          {"smem_bytes", k.smem_bytes},
          {"resident_blocks_per_sm", k.resident_blocks_per_sm},
          {"occupancy_limiter", k.occupancy_limiter},
          {"occupancy", k.occupancy},
          {"waves", k.waves},
          {"dram_bytes", k.dram_bytes},
          {"kv_load_bytes", k.kv_load_bytes},
          {"flops", k.flops},
          {"t_issue_us", nullable(k.t_issue_us)},
          {"t_memory_us", nullable(k.t_memory_us)},
          {"t_flops_us", nullable(k.t_flops_us)},
          {"t_launch_us", k.t_launch_us},
          {"time_us", nullable(k.time_us)},
          {"bound", k.bound},
          {"bandwidth_fraction", k.launchable ? json(k.bandwidth_fraction) : json(nullptr)}};
}

perf::Workload headline() {
  perf::Workload w;  // 1 sequence, 32 heads, 8 KV heads, head 128, block 16, fp16
  w.max_seq_len = 100000;
  return w;
}

// Grouped against per head on one profile: the four variants' times against seq_len at 1
// and 64 sequences of the headline shape, and for each the first length (a grid of 16
// tokens to 1M; 0: none) at which one variant beats another, and at which the modelled
// choose_version first picks grouped.
json grouped_section(const perf::Device& d, const std::vector<std::int64_t>& grid) {
  using perf::Variant;
  json curves = json::array();
  for (int b : {1, 64}) {
    perf::Workload w = headline();
    w.num_seqs = b;
    json t = json::object();
    for (Variant v : {Variant::v1, Variant::v2, Variant::v1_grouped, Variant::v2_grouped}) {
      json ys = json::array();
      for (auto L : grid) {
        w.max_seq_len = L;
        ys.push_back(nullable(perf::time_us(perf::estimate(d, w), v)));
      }
      t[perf::variant_name(v)] = ys;
    }
    json x = json::array();
    for (auto [first, later] : {std::pair{Variant::v1, Variant::v2},
                                {Variant::v1_grouped, Variant::v2_grouped},
                                {Variant::v1, Variant::v1_grouped},
                                {Variant::v2, Variant::v2_grouped}})
      x.push_back({{"first", perf::variant_name(first)},
                   {"later", perf::variant_name(later)},
                   {"seq_len", perf::crossover_seq_len(d, w, 1000000, 16, first, later)}});
    std::int64_t groups_from = 0;
    for (std::int64_t L = 16; L <= 1000000 && groups_from == 0; L += 16) {
      w.max_seq_len = L;
      if (choose_version(d, w).grouped) groups_from = L;
    }
    curves.push_back(
        {{"num_seqs", b}, {"time_us", t}, {"crossovers", x}, {"chooser_groups_from", groups_from}});
  }
  // A few lengths by name (the READMEs' table): the four times and the modelled choice.
  json rows = json::array();
  for (int b : {1, 64})
    for (std::int64_t L : {1000, 4096, 16384, 100000}) {
      perf::Workload w = headline();
      w.num_seqs = b;
      w.max_seq_len = L;
      const perf::Estimate e = perf::estimate(d, w);
      const VersionChoice c = choose_version(d, w);
      json r = {{"num_seqs", b}, {"seq_len", L}};
      for (Variant v : {Variant::v1, Variant::v2, Variant::v1_grouped, Variant::v2_grouped})
        r[perf::variant_name(v)] = nullable(perf::time_us(e, v));
      r["chosen"] = std::string(c.grouped ? "grouped " : "") + kernel_name(c.version);
      rows.push_back(r);
    }
  return {{"seq_len", grid}, {"curves", curves}, {"at", rows}};
}

}  // namespace

json limits_section(const std::vector<std::string>& profiles) {
  json out = json::object();
  const auto grid = log_grid(20);
  for (const auto& name : profiles) {
    const emu::Profile p = emu::load_profile(name);
    json s;
    s["warp_size"] = p.warp_size;
    s["shared_memory_per_block"] = p.shared_memory_per_block;
    s["shared_memory_per_block_optin"] = p.shared_memory_per_block_optin;
    s["optin_confidence"] = p.provenance.count("shared_memory_per_block_optin")
                                ? p.provenance.at("shared_memory_per_block_optin").confidence
                                : "";
    s["seq_len"] = grid;
    json v1 = json::array(), vllm = json::array();
    perf::Workload w = headline();  // head 128, block 16
    for (auto L : grid) {
      w.max_seq_len = L;
      v1.push_back(v1_resources(p.warp_size, w).dynamic_smem_bytes);
      vllm.push_back(vllm_v1_smem_bytes(p.warp_size, w));
    }
    s["v1_smem_bytes"] = v1;
    s["vllm_v1_smem_bytes"] = vllm;
    s["v2_smem_bytes"] = attention_smem_bytes(p.warp_size, 128, 512);
    s["reduce_smem_bytes"] = reduce_smem_bytes(p.warp_size);
    s["v1_max_seq_len"] = v1_max_seq_len(p.warp_size, 128, 16, p.shared_memory_per_block_optin);
    json band = json::object();
    for (int kb : {32, 48, 64, 96, 128})
      band[std::to_string(kb)] = v1_max_seq_len(p.warp_size, 128, 16, kb * 1024LL);
    s["v1_max_seq_len_at_kb"] = band;
    out[p.name] = s;
  }
  return out;
}

json model_section(const std::vector<std::string>& profiles) {
  json out = json::object();
  const auto grid = log_grid(10);
  const int batches[] = {1, 4, 16, 64, 256};
  for (const auto& name : profiles) {
    const perf::Device d = perf::load_device(name);
    json s;
    json params = json::object();
    for (const auto& [k, v] : d.model)
      params[k] = {{"value", v.value}, {"source", v.source}, {"confidence", v.confidence}};
    s["params"] = params;
    s["memory_bandwidth_gbps"] = d.memory_bandwidth_gbps;
    s["multiprocessor_count"] = d.multiprocessor_count;
    s["seq_len"] = grid;
    json curves = json::array();
    for (int b : batches) {
      perf::Workload w = headline();
      w.num_seqs = b;
      json v1 = json::array(), v2 = json::array();
      for (auto L : grid) {
        w.max_seq_len = L;
        const perf::Estimate e = perf::estimate(d, w);
        v1.push_back(nullable(e.v1_us));
        v2.push_back(e.v2_us);
      }
      w.max_seq_len = 1;
      const std::int64_t x = perf::crossover_seq_len(d, w, 1000000, 16);
      w.max_seq_len = x > 0 ? x : 1;
      const perf::Estimate ex = perf::estimate(d, w);
      curves.push_back({{"num_seqs", b},
                        {"v1_us", v1},
                        {"v2_us", v2},
                        {"crossover_seq_len", x},
                        {"crossover_v1_launchable", x > 0 && ex.v1.launchable}});
    }
    s["curves"] = curves;
    // Which version each rule picks: ours with the model (choose_version(perf::Device)),
    // ours from the device facts alone, and vLLM's constants.
    const DeviceFacts facts{d.name, d.warp_size, d.multiprocessor_count,
                            d.shared_memory_per_block_optin};
    json choices = json::array();
    for (int b : {1, 16, 256})
      for (std::int64_t L : {512, 2048, 8192, 12144, 16384, 100000}) {
        perf::Workload w = headline();  // 32 heads over 8, head 128, block 16
        w.num_seqs = b;
        w.max_seq_len = L;
        const VersionChoice m = choose_version(d, w);
        const VersionChoice f = choose_version(facts, w);
        choices.push_back({{"num_seqs", b},
                           {"seq_len", L},
                           {"modelled", kernel_name(m.version)},
                           {"reason", m.reason},
                           {"modelled_grouped", m.grouped},
                           {"grouped_reason", m.grouped_reason},
                           {"facts", kernel_name(f.version)},
                           {"facts_grouped", f.grouped},
                           {"vllm", kernel_name(vllm_choose_version(w))},
                           {"v1_fits", L <= v1_max_seq_len(d.warp_size, 128, 16,
                                                           d.shared_memory_per_block_optin)}});
      }
    s["choices"] = choices;
    const perf::Estimate h = perf::estimate(d, headline());
    s["headline"] = {{"workload",
                      "1 sequence, 32 heads, 8 KV heads, head size 128, block 16, "
                      "100,000 tokens, fp16"},
                     {"v1", kernel_json(h.v1)},
                     {"v2", kernel_json(h.v2)},
                     {"v1_grouped", kernel_json(h.v1_grouped)},
                     {"v2_grouped", kernel_json(h.v2_grouped)},
                     {"reduce", kernel_json(h.reduce)},
                     {"v1_us", nullable(h.v1_us)},
                     {"v2_us", h.v2_us},
                     {"v1_grouped_us", nullable(h.v1_grouped_us)},
                     {"v2_grouped_us", nullable(h.v2_grouped_us)}};
    s["grouped"] = grouped_section(d, grid);
    out[d.name] = s;
  }
  return out;
}

json published_section() {
  struct Case {
    const char* source;
    const char* setting;
    const char* profile;
    int num_seqs, num_heads, num_kv_heads;
    std::int64_t seq_len;
    double v1_us, v2_us;
  };
  const Case cases[] = {
      {"vLLM issue #1880 (benchmark_paged_attention.py; GPU not named in the comment)",
       "batch 1, 64 heads, MQA (1 KV head), head 128, block 16, 4096 tokens, fp16", "a100", 1, 64,
       1, 4096, 100.380, 52.862},
      {"vLLM PR #2744 (A100-40GB-PCIe)",
       "batch 1, 64 heads, 8 KV heads, head 128, 1024 tokens, bf16", "a100", 1, 64, 8, 1024, 37.541,
       29.602},
      {"vLLM PR #2744 (A100-40GB-PCIe)",
       "batch 4, 64 heads, 8 KV heads, head 128, 1024 tokens, bf16", "a100", 4, 64, 8, 1024, 68.585,
       71.447},
  };
  json rows = json::array();
  const perf::Device a100 = perf::load_device("a100");
  for (const Case& c : cases) {
    perf::Workload w;
    w.num_seqs = c.num_seqs;
    w.num_heads = c.num_heads;
    w.num_kv_heads = c.num_kv_heads;
    w.max_seq_len = c.seq_len;
    const perf::Estimate e = perf::estimate(a100, w);
    rows.push_back({{"source", c.source},
                    {"setting", c.setting},
                    {"profile", c.profile},
                    {"published_v1_us", c.v1_us},
                    {"published_v2_us", c.v2_us},
                    {"model_v1_us", nullable(e.v1_us)},
                    {"model_v2_us", e.v2_us},
                    {"calibrated_here", c.seq_len == 4096}});
  }
  // FlashInfer's claim is about bandwidth, not time: our V2's modelled fraction of peak for
  // a long single-request decode on h200, without and with GQA.
  const perf::Device h200 = perf::load_device("h200");
  json bw = json::array();
  for (int kv : {32, 8}) {
    perf::Workload w = headline();
    w.num_kv_heads = kv;
    const perf::Estimate e = perf::estimate(h200, w);
    // V2 + reduce: both kernels' bytes over both kernels' time.
    const auto fraction = [&](const perf::KernelEstimate& k, double us) {
      if (!std::isfinite(us)) return json(nullptr);  // grouped falls back (32 KV heads)
      return json((k.dram_bytes + e.reduce.dram_bytes) / (us * 1e3) / h200.memory_bandwidth_gbps);
    };
    bw.push_back({{"setting", std::string("h200, 1 sequence, 32 heads, ") + std::to_string(kv) +
                                  " KV heads, 100,000 tokens, fp16"},
                  {"model_v2_us", e.v2_us},
                  {"model_bandwidth_fraction", fraction(e.v2, e.v2_us)},
                  {"model_grouped_v2_us", nullable(e.v2_grouped_us)},
                  {"model_grouped_bandwidth_fraction", fraction(e.v2_grouped, e.v2_grouped_us)},
                  {"published",
                   "FlashInfer: near-100% of peak bandwidth for long "
                   "single-request decode (its own kernel, not vLLM's)"}});
  }
  return {{"times", rows}, {"bandwidth", bw}};
}

}  // namespace pagedattn::report
