#!/usr/bin/env bash
# The main job: installs what is missing, builds the `pagedattn` program (with the
# emulator-checks program, whose kernels carry the race instrumentation) and the property
# campaign program, runs a short property campaign on this checkout (REPORT_CASES cases per
# property, default 500, about a minute on 2 cores; 0 skips it), the check of the torch
# operators (python -m pagedattn_torch.check, about 30 s, where torch is found) into
# out/check/, and `pagedattn report` (precision audit grid, emulator checks, limits,
# performance model, implementations checked; plots, out/report/index.html and
# out/report/summary.md), which shows that campaign beside the committed one in
# out/properties. Arguments go to `pagedattn report` (e.g. --quick, --full, --profile
# bi-v100). It reads out/properties/*.json and out/gpu/*.json when present
# (scripts/gpu_check.sh writes the latter on a GPU machine); every section says which commit
# it judged and is marked stale when the kernels changed since.
# BENCH=1 also runs the Google Benchmark programs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build-release}  # its own folder: test.sh's build/ is RelWithDebInfo
out=${OUT_DIR:-out/report}
cases=${REPORT_CASES:-500}
# Release for a new folder; a folder already configured (BUILD_DIR=build: test.sh's
# RelWithDebInfo) keeps its build type instead of being rebuilt whole as Release.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
targets=(pagedattn)
[ "$cases" != 0 ] && targets+=(pagedattn_prop_campaign)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
fresh=()
if [ "$cases" != 0 ]; then
  start=$SECONDS
  rm -rf "$out/campaign"
  mkdir -p "$out"
  # A failing property is a verdict, not a reason to stop: the report shows it.
  OUT_DIR="$out/campaign" BUILD_DIR="$build" bash property_tests/run_campaign.sh "$cases" \
    "$(nproc)" 1 > "$out/campaign.log" 2>&1 || echo "report.sh: the campaign found a failure" \
    "(the report shows it; log: $out/campaign.log)"
  echo "report.sh: property campaign, $cases cases per property, in $((SECONDS - start)) s"
  fresh=(--campaign "$out/campaign/campaign.json")
fi
# The report's "implementations checked" section: this project's operators judged by the
# check (default cases), where Torch's CMake package is found (torch/CMakeLists.txt); other
# implementations' --json files dropped into out/check/ show there too.
checks=${CHECKS_DIR:-out/check}
if grep -q '^pagedattn_torch:' <(cmake --build "$build" --target help 2>/dev/null); then
  cmake --build "$build" -j "$(nproc)" --target pagedattn_torch
  mkdir -p "$checks"
  PYTHONPATH=$PWD/torch/python PAGEDATTN_BUILD_DIR=$build \
    /usr/bin/python3 -m pagedattn_torch.check pagedattn --json "$checks/pagedattn-cpu.json"
fi
"$build/tools/pagedattn" report --out "$out" --checks "$checks" --threads "$(nproc)" \
  "${fresh[@]}" "$@"
if [ "${BENCH:-0}" = 1 ]; then
  cmake --build "$build" -j "$(nproc)" --target bench_emulator bench_reference bench_audit
  for b in bench_emulator bench_reference bench_audit; do
    "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_out="$out/$b.json" \
      --benchmark_out_format=json
  done
fi
