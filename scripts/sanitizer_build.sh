#!/usr/bin/env bash
# The one sanitizer build the sanitizer and fuzz stages share (scripts/test.d/20-sanitizers.sh,
# 30-fuzz.sh): clang at -O1 under AddressSanitizer + UndefinedBehaviorSanitizer, with
# libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link; not on the kernel
# instantiations: sanitizer_coverage_ignorelist.txt) and line tables only (-gline-tables-only:
# what a report's file:line needs), tests and fuzz targets in one folder, CUDA and the
# benchmarks off. One build instead of two (a gcc one for the tests and a clang one for
# the fuzzers) because the builds were most of both stages: clang
# -O1 compiles most files 2-2.5x faster than gcc -O2 under the sanitizers (the kernel
# instantiations about 1.4x slower), and the fuzzers need clang anyway.
# Where clang's libFuzzer is missing it falls back to gcc without the fuzz targets (the fuzz
# stage then says it skipped). The grouped kernel instantiations are compiled at -O0
# (kernels/CMakeLists.txt, PAGEDATTN_GROUPED_INSTANTIATION_OPTIONS): at -O1 the six files
# took most of this build once every shape was grouped (1,000 s of build on the 2-core
# VM beside the targets stage). Prints the folder it built on its last line.
# Usage: scripts/sanitizer_build.sh [FOLDER]   (default $SAN_BUILD_DIR or build-san)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-${SAN_BUILD_DIR:-build-san}}
jobs=${JOBS:-$(nproc)}
if command -v clang++ >/dev/null && echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  compilers=(CC=clang CXX=clang++)
  # No stack-depth coverage: its counter is an initial-exec TLS variable, which would put
  # the torch operators' whole TLS (the emulator's, 268 KB) in static TLS, and Python's
  # dlopen of them then fails ("cannot allocate memory in static TLS block").
  # No coverage on the kernel instantiations (sanitizer_coverage_ignorelist.txt says why).
  # -gline-tables-only: a sanitizer report needs file:line, not variables; full -g cost
  # about 10% of each file's compile time (emu_f16_w32.cpp 38 s against 34, config.cpp 15.3
  # against 13.7).
  flags="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-coverage=stack-depth -fsanitize-coverage-ignorelist=$PWD/scripts/sanitizer_coverage_ignorelist.txt -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -gline-tables-only"
  fuzz=ON
  # The shared ASan runtime, as gcc links it: the torch and check tests preload it into
  # Python, and the programs they start inherit the preload, which a program with clang's
  # default static runtime refuses ("incompatible ASan runtimes").
  rt=$(clang++ -print-resource-dir)/lib/linux
  link="-fsanitize=address,undefined -shared-libasan -Wl,-rpath,$rt"
else
  echo "sanitizer_build: clang++ with libFuzzer not found (Debian: clang libclang-rt-14-dev): gcc, no fuzz targets" >&2
  compilers=(CC=gcc CXX=g++)
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O2 -g1"
  fuzz=OFF
  link="-fsanitize=address,undefined"
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
env "${compilers[@]}" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG= -DCMAKE_C_FLAGS_DEBUG= -DPAGEDATTN_CUDA=OFF \
  -DPAGEDATTN_BENCH=OFF -DPAGEDATTN_FUZZ=$fuzz -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" "${launcher[@]}" \
  -DPAGEDATTN_GROUPED_INSTANTIATION_OPTIONS=-O0 >/dev/null
start=$SECONDS
cmake --build "$build" -j "$jobs" >&2
echo "sanitizer_build: $build built in $((SECONDS - start)) s" >&2
echo "$build"
