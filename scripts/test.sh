#!/usr/bin/env bash
# Configures, builds and runs every test with ctest, then each stage in scripts/test.d/
# (sanitizer builds, fuzzing, ...) in name order. The README's test command.
# Arguments go to ctest; STAGES=0 skips the stages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
# With the stages, the slurm label runs in 40-mutants.sh instead (it builds the mutant
# baseline that stage reuses, so it runs there, alone, at about 30 s of its own).
skip=()
if [ "${STAGES:-1}" != 0 ] && [ -e scripts/test.d/40-mutants.sh ]; then skip=(-LE '^slurm$'); fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "${skip[@]}" "$@"
if [ "${STAGES:-1}" != 0 ] && [ -d scripts/test.d ]; then
  for stage in scripts/test.d/*.sh; do
    [ -e "$stage" ] || continue
    echo "test.sh: stage $stage"
    start=$SECONDS
    BUILD_DIR="$build" bash "$stage"
    echo "test.sh: stage $stage passed in $((SECONDS - start)) s"
  done
fi
