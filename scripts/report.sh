#!/usr/bin/env bash
# The main job: installs what is missing, builds only the `pagedattn` program, and runs
# `pagedattn report` (precision audit grid, emulator checks, limits, performance model;
# plots, out/report/index.html and out/report/summary.md). About 3 minutes after the build
# on 2 cores. Arguments go to `pagedattn report` (e.g. --quick, --full, --profile bi-v100).
# It reads out/properties/*.json and out/gpu/*.json when present (scripts/gpu_check.sh
# writes the latter on a GPU machine), and runs the check of the torch operators into
# out/check/ for the report's implementations-checked section. BENCH=1 also runs the Google Benchmark programs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build-release}  # its own folder: test.sh's build/ is RelWithDebInfo
out=${OUT_DIR:-out/report}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target pagedattn
# The report's "implementations checked" section: this project's operators judged by the
# check (python -m pagedattn_torch.check, default cases, about 30 s on 2 cores), where
# Torch's CMake package is found (torch/CMakeLists.txt); other implementations' --json files
# dropped into out/check/ show there too.
checks=${CHECKS_DIR:-out/check}
if grep -q '^pagedattn_torch:' <(cmake --build "$build" --target help 2>/dev/null); then
  cmake --build "$build" -j "$(nproc)" --target pagedattn_torch
  mkdir -p "$checks"
  PYTHONPATH=$PWD/torch/python PAGEDATTN_BUILD_DIR=$build \
    /usr/bin/python3 -m pagedattn_torch.check pagedattn --json "$checks/pagedattn-cpu.json"
fi
"$build/tools/pagedattn" report --out "$out" --checks "$checks" --threads "$(nproc)" "$@"
if [ "${BENCH:-0}" = 1 ]; then
  cmake --build "$build" -j "$(nproc)" --target bench_emulator bench_reference bench_audit
  for b in bench_emulator bench_reference bench_audit; do
    "$build/bench/$b" --benchmark_min_time=0.2 --benchmark_out="$out/$b.json" \
      --benchmark_out_format=json
  done
fi
