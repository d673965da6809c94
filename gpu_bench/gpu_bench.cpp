// pagedattn_gpu_bench: V1, V2 and the reduce on the present NVIDIA GPU: time (CUDA events)
// and achieved bandwidth as a fraction of a device-to-device copy measured in the same run,
// for the headline case (1 sequence, 32 heads, 8 KV heads, head size 128, 100,000 tokens,
// fp16) and a sweep (1..256 sequences, 1K..128K tokens). Writes JSON that `pagedattn report`
// reads (out/gpu/gpu_bench.json). Every row names its kernel variant ("ungrouped": today's
// one-block-per-query-head V1/V2); variants added later (grouped GQA kernels) are timed on
// the same inputs in the same case.
//
// Sizing (one H200, ~4.3 TB/s copy): the full sweep's caches add up to ~61 GB of KV (each
// case's cache is 4096 x seqs x tokens bytes, capped at --max-cache-gb); each is filled by
// device copies (milliseconds) and each kernel runs 2 + reps times, reading its cache about
// 4 times over (32 query heads over 8 KV heads, one block per query head): about
// 61 GB x 4 x (2 + 5) x 3 kernels / 4.3 TB/s ~ 1.2 s of kernels, plus ~100 allocations
// and launches: well under a minute. --quick: the headline and 4 small cases.
// --dry: the emulator (h200 profile) on host memory, host-clock times, a 4,096-token
// "headline" and one small case: tests the program, measures nothing.
//
// usage: pagedattn_gpu_bench --out FILE [--quick] [--dry] [--max-cache-gb G]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_check.h"
#include "pagedattn/api.h"

using namespace pagedattn;
using gpubench::Buffer;
using gpubench::check;
using json = nlohmann::json;

namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHead = 128, kBlock = 16, kPartition = 512;

// Bytes a kernel must move at least: K and V once per KV head, the block table, the query
// and the output (and V2's partials): the model's DRAM count (perfmodel/src/model.cpp).
double kv_bytes(int seqs, std::int64_t L) {
  return 2.0 * seqs * kKvHeads * L * kHead * 2;
}

struct Case {
  int seqs;
  std::int64_t seq_len;
  bool headline;
};

json run_case(const Case& c, double copy_gbps, int reps) {
  const std::int64_t S = c.seqs, L = c.seq_len, H = kHeads, D = kHead, B = kBlock;
  const std::int64_t blocks_per_seq = (L + B - 1) / B;
  const std::int64_t NB = S * blocks_per_seq;
  const std::int64_t NP = (L + kPartition - 1) / kPartition;
  const std::int64_t x = 8;  // 16 bytes of fp16
  // Caches: one 2 MB block of fp16 values in [0.1, 0.2] repeated (values do not change the
  // time; NaN-free).
  const std::size_t cache_bytes = static_cast<std::size_t>(NB * kKvHeads * D * B * 2);
  Buffer kc(cache_bytes), vc(cache_bytes);
  {
    std::vector<std::uint16_t> pattern(1 << 20);
    std::mt19937 rng(1);
    for (auto& v : pattern) v = static_cast<std::uint16_t>(0x2e66 + (rng() & 0x3ff));
    kc.fill(pattern.data(), pattern.size() * 2);
    vc.fill(pattern.data(), pattern.size() * 2);
  }
  std::vector<std::int32_t> table(static_cast<std::size_t>(NB)),
      lens(S, static_cast<std::int32_t>(L));
  for (std::int64_t i = 0; i < NB; ++i) table[i] = static_cast<std::int32_t>(i);
  std::vector<std::uint16_t> q(static_cast<std::size_t>(S * H * D), 0x2c00);
  Buffer bt(table.size() * 4), sl(lens.size() * 4), qb(q.size() * 2), out(q.size() * 2);
  bt.upload(0, table.data(), bt.bytes);
  sl.upload(0, lens.data(), sl.bytes);
  qb.upload(0, q.data(), qb.bytes);
  Buffer es(S * H * NP * 4), ml(S * H * NP * 4), tmp(S * H * NP * D * 4);
  const auto tv = [](const Buffer& b, DType t, std::initializer_list<std::int64_t> s) {
    return TensorView::contiguous(b.ptr, t, s);
  };
  const TensorView O = tv(out, DType::f16, {S, H, D}), Q = tv(qb, DType::f16, {S, H, D});
  const TensorView K = tv(kc, DType::f16, {NB, kKvHeads, D / x, B, x});
  const TensorView V = tv(vc, DType::f16, {NB, kKvHeads, D, B});
  const TensorView BT = tv(bt, DType::i32, {S, blocks_per_seq}), SL = tv(sl, DType::i32, {S});
  const TensorView ES = tv(es, DType::f32, {S, H, NP}), ML = tv(ml, DType::f32, {S, H, NP});
  const TensorView TMP = tv(tmp, DType::f32, {S, H, NP, D});
  const double scale = 1.0 / std::sqrt(double(D));
  const Backend be = gpubench::dry ? Backend::emulator("h200") : Backend::cuda();

  const double table_b = 4.0 * S * blocks_per_seq, io_b = 2.0 * S * H * D;
  const double partial_b = double(S) * H * NP * (4.0 * D + 8);
  json rows = json::array();
  auto row = [&](const char* kernel, double us, double bytes, const std::string& note) {
    json r = {{"kernel", kernel},
              {"variant", "ungrouped"},
              {"num_seqs", S},
              {"num_heads", H},
              {"num_kv_heads", kKvHeads},
              {"head_size", D},
              {"block_size", B},
              {"seq_len", L},
              {"dtype", "f16"},
              {"headline", c.headline},
              {"partition_size", kPartition}};
    if (us > 0) {
      r["time_us"] = us;
      r["bytes"] = bytes;
      r["achieved_gbps"] = bytes / (us * 1e3);
      r["fraction_of_copy"] = bytes / (us * 1e3) / copy_gbps;
    } else {
      r["time_us"] = nullptr;
    }
    if (!note.empty()) r["note"] = note;
    rows.push_back(r);
  };
  const double kv = kv_bytes(c.seqs, L);
  try {
    const double us = gpubench::time_us(
        [&] {
          paged_attention_v1(O, Q, K, V, kKvHeads, scale, BT, SL, B, L, TensorView{}, "auto", 1.0,
                             1.0, be);
        },
        2, reps);
    row("v1", us, kv + table_b + 2 * io_b, "");
  } catch (const LaunchError& e) {
    row("v1", 0, 0, std::string("refused: ") + e.what());
  }
  const double v2 = gpubench::time_us(
      [&] {
        paged_attention_v2(O, ES, ML, TMP, Q, K, V, kKvHeads, scale, BT, SL, B, L, TensorView{},
                           "auto", 1.0, 1.0, be);
      },
      2, reps);
  const double red =
      gpubench::time_us([&] { paged_attention_reduce(O, ES, ML, TMP, SL, L, be); }, 2, reps);
  row("v2_total", v2, kv + table_b + 2 * io_b + 2 * partial_b, "V2 and its reduce, one call");
  row("reduce", red, partial_b + io_b, "");
  row("v2", v2 - red, kv + table_b + io_b + partial_b, "v2_total minus the reduce alone");
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  bool quick = false;
  double max_cache_gb = 24;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--dry") {
      gpubench::dry = true;
    } else if (a == "--max-cache-gb" && i + 1 < argc) {
      max_cache_gb = std::atof(argv[++i]);
      if (!(max_cache_gb > 0)) {
        std::cerr << "pagedattn_gpu_bench: --max-cache-gb must be a number > 0\n";
        return 2;
      }
    } else {
      std::cerr << "pagedattn_gpu_bench: unknown argument '" << a
                << "' (allowed: --out FILE, --quick, --dry, --max-cache-gb G)\n";
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "pagedattn_gpu_bench: --out FILE is required\n";
    return 2;
  }
  try {
    const bool dry = gpubench::dry;
    std::string device = "dry run: the emulator (h200 profile), host memory";
    std::string cc = "n/a";
    if (!dry) {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::cerr << "pagedattn_gpu_bench: no CUDA device (--dry runs without one)\n";
        return 1;
      }
      cudaDeviceProp prop{};
      check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
      device = prop.name;
      cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    }
    const std::size_t copy_bytes = dry ? std::size_t(64) << 20 : std::size_t(1) << 30;
    const double copy = gpubench::copy_bandwidth_gbps(copy_bytes);
    std::printf("gpu_bench: %s, device-to-device copy %.0f GB/s\n", device.c_str(), copy);
    std::vector<Case> cases{{1, dry ? 4096 : 100000, true}};
    const std::vector<int> seqs = dry     ? std::vector<int>{1}
                                  : quick ? std::vector<int>{1, 16}
                                          : std::vector<int>{1, 4, 16, 64, 256};
    const std::vector<std::int64_t> lens =
        dry     ? std::vector<std::int64_t>{1024}
        : quick ? std::vector<std::int64_t>{1024, 16384}
                : std::vector<std::int64_t>{1024, 4096, 16384, 65536, 131072};
    json skipped = json::array();
    for (int s : seqs)
      for (auto L : lens) {
        if (kv_bytes(s, L) > max_cache_gb * 1e9) {
          skipped.push_back(
              {{"num_seqs", s}, {"seq_len", L}, {"why", "cache over --max-cache-gb"}});
          continue;
        }
        cases.push_back({s, L, false});
      }
    json rows = json::array();
    for (const Case& c : cases) {
      const int reps = dry ? 1 : kv_bytes(c.seqs, c.seq_len) > 1e9 ? 5 : 20;
      for (auto& r : run_case(c, copy, reps)) {
        rows.push_back(r);
        std::printf(
            "gpu_bench: %-8s seqs %3d  L %6lld  %10.1f us  %s\n",
            r["kernel"].get<std::string>().c_str(), c.seqs, (long long)c.seq_len,
            r["time_us"].is_null() ? -1.0 : r["time_us"].get<double>(),
            r.value("fraction_of_copy", 0.0) > 0
                ? (std::to_string(int(r["fraction_of_copy"].get<double>() * 100)) + "% of copy")
                      .c_str()
                : r.value("note", "").c_str());
      }
    }
    json j = {{"tool", "pagedattn_gpu_bench"},
              {"device", device},
              {"dry", dry},
              {"compute_capability", cc},
              {"copy_bandwidth_gbps", copy},
              {"copy_bytes", copy_bytes},
              {"timing", dry ? "dry run: host clock, one call each, on the emulator"
                             : "CUDA events, mean of 20 calls (5 above 1 GB of cache) after 2 "
                               "warm-ups"},
              {"skipped", skipped},
              {"cases", rows}};
    std::ofstream(out_path) << j.dump(1) << "\n";
    std::printf("gpu_bench: wrote %s\n", out_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "pagedattn_gpu_bench: " << e.what() << "\n";
    return 1;
  }
}
