// Every output byte of V1 and V2 (out, exp_sums, max_logits, tmp_out) over a broad grid,
// as one 64-bit digest per run: the guard that a refactoring of the kernel code changes
// nothing the kernels compute. The grid: 3 dtypes x {same, fp8 E4M3, fp8 E5M2} caches x
// both numerics x head sizes 64/80/128/256 (block sizes 8/16/32 and partition sizes
// rotating over them) x ALiBi on/off x three inputs (plain; NaN and inf in live inputs and
// NaN in every dead slot; magnitudes that overflow fp32 logits and P.V sums, so every rare
// path runs) x bi-v100 (warp 64) and h200 (warp 32) x V1 and V2. Several sequences per run
// cover empty partitions, one-token and zero-token sequences and GQA (4 heads over 2).
//
//   pagedattn_output_digests                 prints "case digest" lines
//   pagedattn_output_digests --check FILE    exits 1 naming each case whose digest differs
//   ... --grouped                            the same runs on the grouped kernels
//                                            (Options::grouped), against the same digests
//
// With --grouped (ctest kernels.output_digests_grouped) the grid's 2 query heads per KV
// head run in one block of grouped_attention_kernel.cuh and every digest must equal the
// ungrouped kernel's committed one: the grouped kernels are bit-identical to today's on
// every setting of the grid (every dtype, cache, head and block size, numerics, partition
// size, ALiBi, rare path and both warp widths); the count of grouped runs is printed
// (other GQA ratios: kernels/tests/test_grouped.cpp).
//
// The inputs come from digest_grid.cpp alone (a fixed integer generator, no <random>
// distributions, whose results the standard leaves to the library), so the digests move
// only when the kernels' results do. Wrong variant it catches: any change of a rounding,
// an order of summation, a rare-path condition or a written byte; shown by summing the
// warps' exp-sums in reverse order in attention_kernel.cuh once (57 of the 1728 runs'
// digests changed). Instrumented once, the grid ran the attention kernel's rare P.V path
// in 3200 blocks, the reduce's in 134 and the slow logit for 160874 tokens. 11 s.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "digest_grid.h"

#include "pagedattn_testing/kernel_under_test.h"

namespace {

using namespace pagedattn;

std::size_t grouped_runs = 0;  // runs that launched the grouped kernels (--grouped)

std::vector<std::pair<std::string, std::uint64_t>> all_digests(bool grouped) {
  std::vector<std::pair<std::string, std::uint64_t>> r;
  for (const auto& [s, seed] : digest::grid()) {
    const testing::Case c = digest::make(s, seed);
    if (grouped && testing::kernels_under_test(c).size() > 2) grouped_runs += 4;
    for (const char* prof : {"bi-v100", "h200"})
      for (Kernel k : {Kernel::v1, Kernel::v2})
        r.emplace_back(s.name() + '/' + prof + '/' + kernel_name(k),
                       digest::run(s, c, k, Backend::emulator(prof), grouped));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool grouped = argc > 1 && std::string(argv[1]) == "--grouped";
  if (grouped) {
    --argc;
    ++argv;
  }
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 1 && !check) {
    std::fprintf(stderr, "usage: %s [--grouped] [--check DIGEST_FILE]\n", argv[0]);
    return 2;
  }
  std::map<std::string, std::string> want;
  if (check) {
    std::ifstream f(argv[2]);
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", argv[2]);
      return 2;
    }
    std::string name, digest;
    while (f >> name >> digest) want[name] = digest;
  }
  int differ = 0;
  std::size_t n = 0;
  for (const auto& [name, h] : all_digests(grouped)) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    ++n;
    if (!check) {
      std::printf("%s %s\n", name.c_str(), hex);
    } else if (want[name] != hex) {
      std::printf("differs: %s %s (committed %s)\n", name.c_str(), hex,
                  want[name].empty() ? "none" : want[name].c_str());
      ++differ;
    }
  }
  if (check) {
    std::printf("%zu runs (%zu on the grouped kernels), %d differ from %s\n", n, grouped_runs,
                differ, argv[2]);
    if (want.size() != n) {
      std::printf("the file lists %zu runs, the grid has %zu\n", want.size(), n);
      return 1;
    }
    // Every shape has grouped kernels (supported.h) and the grid's sequences share KV heads
    // two by two: a run that stays per head means a shape without them.
    if (grouped && grouped_runs != n) {
      std::printf("%zu runs stayed on the per-head kernels: every shape has grouped ones\n",
                  n - grouped_runs);
      return 1;
    }
  }
  return differ ? 1 : 0;
}
