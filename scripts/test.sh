#!/usr/bin/env bash
# Configures, builds and runs every test with ctest, then each stage in scripts/test.d/
# (sanitizer builds, fuzzing, ...) in name order. The README's test command.
# Arguments go to ctest; STAGES=0 skips the stages.
#
# A stage that marks itself `# test.sh: background` (it only compiles, and reads nothing
# the others write) starts niced beside the others when the stages begin, so it fills the
# cores they leave idle (the mutant stage and the fuzzers run one process at a time) instead
# of adding its own wall time; its output is printed, and its status checked, at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build}
t0=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
echo "test.sh: configure and build took $((SECONDS - t0)) s"
# With the stages, the slurm label runs in 40-mutants.sh instead (it builds the mutant
# baseline that stage reuses, so it runs there, alone, at about 30 s of its own).
skip=()
if [ "${STAGES:-1}" != 0 ] && [ -e scripts/test.d/40-mutants.sh ]; then skip=(-LE '^slurm$'); fi
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "${skip[@]}" "$@"
echo "test.sh: ctest passed in $((SECONDS - start)) s"
[ "${STAGES:-1}" != 0 ] && [ -d scripts/test.d ] || exit 0

background=()
# A foreground stage that fails ends the run: its background stages (and their compilers)
# end with it.
kill_tree() {
  local c
  for c in $(pgrep -P "$1" || true); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
trap 'for b in "${background[@]}"; do kill_tree "${b%%:*}"; done' EXIT
for stage in scripts/test.d/*.sh; do
  [ -e "$stage" ] && grep -q '^# test.sh: background' "$stage" || continue
  log="$build/$(basename "$stage" .sh).log"
  echo "test.sh: stage $stage started in the background (log $log)"
  (
    start=$SECONDS
    if BUILD_DIR="$build" nice -n 10 bash "$stage" >"$log" 2>&1; then rc=0; else rc=$?; fi
    echo "test.sh: stage $stage ended with status $rc in $((SECONDS - start)) s" >>"$log"
    exit $rc
  ) &
  background+=("$!:$stage:$log")
done
for stage in scripts/test.d/*.sh; do
  [ -e "$stage" ] || continue
  grep -q '^# test.sh: background' "$stage" && continue
  echo "test.sh: stage $stage"
  start=$SECONDS
  BUILD_DIR="$build" bash "$stage"
  echo "test.sh: stage $stage passed in $((SECONDS - start)) s"
done
status=0
for b in "${background[@]}"; do
  IFS=: read -r pid stage log <<<"$b"
  if wait "$pid"; then rc=0; else rc=$?; fi
  echo "test.sh: background stage $stage:"
  cat "$log"
  [ "$rc" = 0 ] || { echo "test.sh: background stage $stage failed (status $rc)"; status=1; }
done
background=()
echo "test.sh: everything took $SECONDS s (install_deps.sh included)"
exit $status
