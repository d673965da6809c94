#!/usr/bin/env bash
# The main job: installs what is missing, builds, and writes what the project reports
# today into out/report/: the headline precision audit (JSON + CSV), the emulator,
# reference and audit benchmarks (Google Benchmark JSON) and each profile's kernel limits.
# (The HTML precision/performance page with plots is a later issue.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build}
out=${OUT_DIR:-out/report}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
mkdir -p "$out"
for b in bench_emulator bench_reference bench_audit; do
  if [ -x "$build/bench/$b" ]; then
    "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_out="$out/$b.json" --benchmark_out_format=json
  fi
done
if [ -x "$build/tools/pagedattn" ]; then
  "$build/tools/pagedattn" audit --profile bi-v100,h200 --num-seqs 1 --num-heads 32 --num-kv-heads 8 \
    --head-size 128 --seq-lens 100000 --dtype f16 --json "$out/audit-headline.json" \
    --csv "$out/audit-headline.csv" | tee "$out/audit-headline.txt"
  "$build/tools/pagedattn" audit --profile bi-v100 --num-heads 8 --num-kv-heads 2 --seq-lens 2000 \
    --dtype f16,bf16 --distribution all --exp-ulp 0,4 --json "$out/audit-adversarial.json" \
    --csv "$out/audit-adversarial.csv" --quiet
  for p in bi-v100 h200 a100; do
    "$build/tools/pagedattn" limits --profile "$p" > "$out/limits-$p.txt"
  done
fi
echo "report: wrote $(ls "$out" | wc -l) files to $out"
