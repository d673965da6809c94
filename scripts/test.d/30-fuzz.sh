#!/usr/bin/env bash
# libFuzzer over every reader of user files (.npy, profile JSON, audit config JSON, a
# replay folder) and the host API (fuzz/README.md). Builds the targets with clang under
# ASan + UBSan in their own folder, replays every kept regression input, then runs each
# target for FUZZ_SECONDS (default 30) from its seed corpus. A crash, sanitizer report,
# leak of an unexpected exception or timeout fails the stage; libFuzzer writes the input
# to crash-*/timeout-* in $FUZZ_ARTIFACTS for fuzz/regressions/.
# Skipped (exit 0, with a note) where clang or libFuzzer is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v clang++ >/dev/null || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "30-fuzz: clang++ with libFuzzer not found (Debian: clang libclang-rt-14-dev): skipped"
  exit 0
fi
build=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-30}
artifacts=${FUZZ_ARTIFACTS:-$build/artifacts}
flags="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
start=$SECONDS
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPAGEDATTN_CUDA=OFF \
  -DPAGEDATTN_TESTS=OFF -DPAGEDATTN_BENCH=OFF -DPAGEDATTN_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" "${launcher[@]}" >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target fuzz
echo "30-fuzz: build took $((SECONDS - start)) s"

export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
mkdir -p "$artifacts"
for target in npy profile audit_config replay host_api; do
  bin="$build/fuzz/fuzz_$target"
  # Every input that once crashed, run once: they must pass now.
  if [ -d "fuzz/regressions/$target" ]; then
    "$bin" -runs=0 "fuzz/regressions/$target"/* >"$artifacts/$target.regressions.log" 2>&1 ||
      { cat "$artifacts/$target.regressions.log"; echo "30-fuzz: $target regression failed"; exit 1; }
  fi
  # A scratch corpus seeded from the repository's, so the repository stays small.
  work="$build/corpus/$target"
  mkdir -p "$work"
  start=$SECONDS
  if ! "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$target-" "$work" "fuzz/corpus/$target" \
      >"$artifacts/$target.log" 2>&1; then
    tail -n 60 "$artifacts/$target.log"
    echo "30-fuzz: fuzz_$target found a failure; input saved under $artifacts"
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$artifacts/$target.log" | grep -o '[0-9]*$' || echo '?')
  echo "30-fuzz: fuzz_$target: $runs inputs in $((SECONDS - start)) s, no failure"
done
