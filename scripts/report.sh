#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes what the project reports
# today into out/report/: the emulator and reference benchmarks (Google Benchmark JSON)
# and each profile's kernel limits. (The HTML precision/performance page is a later issue.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build}
out=${OUT_DIR:-out/report}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
mkdir -p "$out"
for b in bench_emulator bench_reference bench_kernels; do
  if [ -x "$build/bench/$b" ]; then
    "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_out="$out/$b.json" --benchmark_out_format=json
  fi
done
if [ -x "$build/tools/pagedattn" ]; then
  for p in bi-v100 h200 a100; do
    "$build/tools/pagedattn" limits --profile "$p" > "$out/limits-$p.txt"
  done
fi
echo "report: wrote $(ls "$out" | wc -l) files to $out"
