#!/usr/bin/env bash
# libFuzzer over every reader of user files (.npy, profile JSON, audit config JSON, a
# replay folder) and the host API (fuzz/README.md). The targets come from the sanitizer
# build (scripts/sanitizer_build.sh: clang, ASan + UBSan, coverage), which the sanitizer
# stage has built already in a full run. Replays every kept regression input, then runs
# each target for FUZZ_SECONDS (default 30) from its seed corpus, JOBS (default the cores)
# targets at a time: each is one process, so two share two cores without taking any of
# the other's seconds. A crash, sanitizer report, leak of an unexpected exception or
# timeout fails the stage; libFuzzer writes the input to crash-*/timeout-* in
# $FUZZ_ARTIFACTS for fuzz/regressions/.
# Skipped (exit 0, with a note) where clang or libFuzzer is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v clang++ >/dev/null || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "30-fuzz: clang++ with libFuzzer not found (Debian: clang libclang-rt-14-dev): skipped"
  exit 0
fi
start=$SECONDS
build=$(bash scripts/sanitizer_build.sh "${FUZZ_BUILD_DIR:-${SAN_BUILD_DIR:-build-san}}")
echo "30-fuzz: build (or the sanitizer stage's, up to date) took $((SECONDS - start)) s"
export FUZZ_SECONDS=${FUZZ_SECONDS:-30}
export FUZZ_ARTIFACTS=${FUZZ_ARTIFACTS:-$build/artifacts}
export FUZZ_BUILD=$build
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
mkdir -p "$FUZZ_ARTIFACTS"
# The build links clang's shared ASan runtime (scripts/sanitizer_build.sh says why); libFuzzer
# puts libstdc++ ahead of it, so it is preloaded to come first, as ASan requires.
rt=$(ldd "$build/fuzz/fuzz_npy" | awk '/libclang_rt\.asan/ {print $3}')
if [ -n "$rt" ]; then export LD_PRELOAD=$rt; fi

fuzz_one() {
  local target=$1 bin="$FUZZ_BUILD/fuzz/fuzz_$1" art=$FUZZ_ARTIFACTS
  # Every input that once crashed, run once: they must pass now.
  if [ -d "fuzz/regressions/$target" ]; then
    "$bin" -runs=0 "fuzz/regressions/$target"/* >"$art/$target.regressions.log" 2>&1 ||
      { cat "$art/$target.regressions.log"; echo "30-fuzz: $target regression failed"; return 1; }
  fi
  # A scratch corpus seeded from the repository's, so the repository stays small.
  local work="$FUZZ_BUILD/corpus/$target" t0=$SECONDS
  mkdir -p "$work"
  if ! "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
      -artifact_prefix="$art/$target-" "$work" "fuzz/corpus/$target" >"$art/$target.log" 2>&1; then
    tail -n 60 "$art/$target.log"
    echo "30-fuzz: fuzz_$target found a failure; input saved under $art"
    return 1
  fi
  local runs
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$art/$target.log" | grep -o '[0-9]*$' || echo '?')
  echo "30-fuzz: fuzz_$target: $runs inputs in $((SECONDS - t0)) s, no failure"
}
export -f fuzz_one
printf '%s\n' npy profile audit_config replay host_api |
  xargs -P "${JOBS:-$(nproc)}" -I{} bash -c 'fuzz_one "$1"' _ {}
