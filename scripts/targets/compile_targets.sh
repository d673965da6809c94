#!/usr/bin/env bash
# Compiles every kernel instantiation for every target this machine has a compiler for and
# records each kernel's resources (registers, shared memory / LDS, spills, occupancy) from
# the compiler's own report into OUT_DIR/targets.json (`pagedattn report` reads it):
#   nvcc      sm_80, sm_90            ptxas -v                    (the library's flags)
#   clang     sm_80, warnings as errors, device (ptxas -v) and host side; and __ILUVATAR__
#             (CoreX's macro: warp 64) for sm_80, since CoreX itself is not available here
#   hipcc     gfx90a (wave 64) and a wave-32 target (gfx1100 where the ROCm device
#             libraries know it, else gfx1030: Debian 12's ROCm 5.2 has none for gfx11),
#             device (-Rpass-analysis=kernel-resource-usage) and host side
# The instantiations are the CUDA executor's per-type files, kernels/src/cuda_*.cu: each
# includes instantiate.inc, which instantiates launch_attention/launch_reduce, whose
# dispatch (dispatch.cuh) names every kernel template instance. A kernel added there is
# compiled here with no edit. A compiler that is absent is skipped with a message; one
# that fails fails the script (exit 1), its log under OUT_DIR/logs/.
# The grouped kernels are built for every shape (kernels/include/pagedattn/supported.h),
# 5x a per-head kernel's compile each: here they are compiled for supported.h's
# PAGEDATTN_GROUPED_SAMPLE (head sizes 80, 128, 256 at block size 16, every dtype and
# cache: 18 grouped instantiations, against 12 before every shape was grouped; with every
# block size, 54, the stage would take about three times as long) unless TARGETS_ALL=1, which compiles every shape (the library's own nvcc build,
# kernels/CMakeLists.txt, always compiles every shape). hipcc, whose device compile is quick,
# takes every grouped shape either way (below). targets.json says which.
# ONLY, an extended regex, keeps the compiles whose name (TARGET__FILE, e.g.
# hip_gfx90a__cuda_grouped_f32) it matches: ONLY='^hip_gfx90a__cuda_grouped' TARGETS_ALL=1
# checks one compiler on every grouped shape (the library's nvcc build keeps ptxas's report
# of every shape itself: scripts/targets/check_build_spills.py).
# NVCC_BUILD=DIR, a CMake build of this checkout with nvcc (50-targets.sh passes test.sh's):
# its library compiled every instantiation for sm_80 and sm_90 (the same device code as the
# nvcc lines below; the library adds host-side flags and PAGEDATTN_HAVE_CUDA) and kept
# ptxas's report beside each object (ptxas_log_launcher.sh). Those reports are taken instead
# of compiling the six files twice more: on 56da568 every kernel both compiled had the same
# registers, stack, spills and shared memory (348 of 348); the build's hold every grouped
# shape, not the sample; and 1,258 of the stage's 4,163 compile-seconds there are spared.
# Taken only if the build's nvcc is this one and every report is newer than every file
# under kernels/src, kernels/include, emulator/include and perfmodel/include (the compile's
# sources and include paths); otherwise nvcc compiles here, and the script says why. "This
# one": the same file, or one whose `--version` (release and build id) is the same text: CI's
# PATH finds a wrapper script, /usr/local/bin/nvcc, that execs the CUDA install's nvcc, while
# CMake's cache names the install's own.
# usage: [TARGETS_ALL=1] [HIP_GROUPED_SAMPLE=1] [ONLY=REGEX] [NVCC_BUILD=DIR] scripts/targets/compile_targets.sh [OUT_DIR (default out/targets)]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-out/targets}
mkdir -p "$out/logs" "$out/obj"
out=$(cd "$out" && pwd)
rm -f "$out"/logs/*.log "$out"/logs/*.rc "$out"/obj/* "$out/nvcc_from_build.txt"
jobs_file="$out/jobs.txt"
: >"$jobs_file"
inc=(-I"$root/kernels/include" -I"$root/emulator/include")
# hipcc compiles every grouped shape whatever TARGETS_ALL says (about 1 s a kernel on one
# core, 51 a file): at block size 32 the sample hid scratch on the wave-32 target, and the
# register hints (kernels/src/platform.cuh) are held on every shape by
# check_grouped_resources.py. HIP_GROUPED_SAMPLE=1 compiles the sample there too.
hip_inc=("${inc[@]}")
shapes=all
if [ "${TARGETS_ALL:-0}" != 1 ]; then
  inc+=(-DPAGEDATTN_GROUPED_SAMPLE)
  shapes=sample
  if [ "${HIP_GROUPED_SAMPLE:-0}" = 1 ]; then
    hip_inc+=(-DPAGEDATTN_GROUPED_SAMPLE)
  else
    shapes_hip="; hipcc: all"
  fi
fi
srcs=("$root"/kernels/src/cuda_*.cu)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x "$cuda_home/bin/nvcc" ] && nvcc=$cuda_home/bin/nvcc
# clang's CUDA front end: the newest Debian clang that takes CUDA 13's headers with the
# one-header shim (clang 14 and 15 also need CUDA 12's removed texture references).
clang=${CLANG_CUDA:-}
if [ -z "$clang" ]; then
  for c in clang++-21 clang++-20 clang++-19; do
    if command -v "$c" >/dev/null; then clang=$(command -v "$c"); break; fi
  done
fi
hipcc=$(command -v hipcc || true)
wave32=gfx1100
devlibs=$(dirname "$(find /usr/lib /opt/rocm -name 'oclc_isa_version_90a.bc' 2>/dev/null | head -1)" 2>/dev/null || true)
if [ -n "$hipcc" ] && [ ! -e "$devlibs/oclc_isa_version_1100.bc" ]; then
  echo "compile_targets: no ROCm device library for gfx1100 in '$devlibs': wave-32 target is gfx1030"
  wave32=gfx1030
fi

# same_compiler A B: one file, or two that print the same non-empty `--version`.
same_compiler() {
  [ "$(readlink -f "$1")" = "$(readlink -f "$2")" ] && return 0
  local a b
  a=$("$1" --version 2>/dev/null) || return 1
  b=$("$2" --version 2>/dev/null) || return 1
  [ -n "$a" ] && [ "$a" = "$b" ]
}

nvcc_logs=
if [ -n "$nvcc" ] && [ -n "${NVCC_BUILD:-}" ]; then
  reports="$NVCC_BUILD/kernels/CMakeFiles/pagedattn_cuda_kernels.dir/src"
  built=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$NVCC_BUILD/CMakeCache.txt" 2>/dev/null || true)
  why=
  if [ -z "$built" ] || ! same_compiler "$built" "$nvcc"; then
    why="its CUDA compiler is '${built:-none}', not $nvcc or one with its --version"
  fi
  for src in "${srcs[@]}"; do
    [ -n "$why" ] && break
    log="$reports/$(basename "$src").o.ptxas.log"
    if [ ! -s "$log" ]; then
      why="no $log"
    else
      newer=$(find "$root/kernels/src" "$root/kernels/include" "$root/emulator/include" \
        "$root/perfmodel/include" -type f -newer "$log" -print -quit)
      [ -n "$newer" ] && why="$newer is newer than $log"
    fi
  done
  if [ -z "$why" ]; then
    nvcc_logs=$reports
    echo "$NVCC_BUILD" >"$out/nvcc_from_build.txt"
    [ "$shapes" = all ] || shapes="$shapes; nvcc: all (the library build's)"
    echo "compile_targets: nvcc's reports taken from the library build's compile in $NVCC_BUILD"
  else
    echo "compile_targets: NVCC_BUILD=$NVCC_BUILD not taken ($why): nvcc compiles here"
  fi
fi

echo "$shapes${shapes_hip:-}" >"$out/grouped_shapes.txt"

# One line per compile: NAME<TAB>command. NAME = target__file.
add() {
  local name=$1
  shift
  [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || return 0
  printf '%s\t%s\n' "$name" "$*" >>"$jobs_file"
}
# A report the library build made: the log of a compile that ran there (status 0, 0 s here).
take() {
  [[ -z "${ONLY:-}" || "$1" =~ $ONLY ]] || return 0
  cp "$2" "$out/logs/$1.log"
  echo "0 0" >"$out/logs/$1.rc"
}
for src in "${srcs[@]}"; do
  f=$(basename "$src" .cu)
  if [ -n "$nvcc_logs" ]; then
    for a in 80 90; do
      take "nvcc_sm${a}__$f" "$nvcc_logs/$f.cu.o.ptxas.log"
    done
  elif [ -n "$nvcc" ]; then
    for a in 80 90; do
      add "nvcc_sm${a}__$f" "$nvcc" -std=c++17 -O3 --fmad=false -arch=sm_$a -cubin -Xptxas -v \
        "${inc[@]}" "$src" -o "$out/obj/nvcc_sm${a}_$f.cubin"
    done
  fi
  if [ -n "$clang" ]; then
    cl=("$clang" -x cuda --cuda-path="$cuda_home" --cuda-gpu-arch=sm_80 -std=c++17 -O3
      -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-cuda-version
      -I"$root/scripts/targets/clang_cuda_shim" "${inc[@]}")
    add "clang_sm80__$f" "${cl[@]}" --cuda-device-only -Xcuda-ptxas -v -c "$src" \
      -o "$out/obj/clang_sm80_$f.o"
    add "clanghost_sm80__$f" "${cl[@]}" --cuda-host-only -c "$src" -o "$out/obj/clanghost_$f.o"
    add "clang_iluvatar__$f" "${cl[@]}" -D__ILUVATAR__ --cuda-device-only -Xcuda-ptxas -v -c \
      "$src" -o "$out/obj/clang_iluvatar_$f.o"
  fi
  if [ -n "$hipcc" ]; then
    for aw in "gfx90a 64" "$wave32 32"; do
      set -- $aw
      hc=("$hipcc" -x hip --offload-arch="$1" -DPAGEDATTN_HIP_WARP="$2" -std=c++17 -O3
        -ffp-contract=off -Wall -Wextra -Werror "${hip_inc[@]}")
      add "hip_${1}__$f" "${hc[@]}" --cuda-device-only -Rpass-analysis=kernel-resource-usage -c \
        "$src" -o "$out/obj/hip_$1_$f.o"
      add "hiphost_${1}__$f" "${hc[@]}" --cuda-host-only -c "$src" -o "$out/obj/hiphost_$1_$f.o"
    done
  fi
done
# Each compiler's version, for the table: NAME<TAB>version line.
{
  [ -n "$nvcc" ] && printf 'nvcc\t%s\n' "$("$nvcc" --version | grep -o 'release.*' | head -1)"
  [ -n "$clang" ] && printf 'clang\t%s\n' "$("$clang" --version | head -1)"
  [ -n "$hipcc" ] && printf 'hipcc\t%s\n' "HIP $("$hipcc" --version 2>/dev/null | grep -o 'HIP version: [0-9.]*' | cut -d' ' -f3), $("$hipcc" --version 2>/dev/null | grep -i 'clang version' | head -1)"
} >"$out/versions.txt" || true
[ -z "$nvcc" ] && echo "compile_targets: nvcc not found: sm_80/sm_90 (nvcc) skipped"
[ -z "$clang" ] && echo "compile_targets: no clang++-19 or newer: clang CUDA targets skipped (scripts/install_deps.sh installs clang-19)"
[ -z "$hipcc" ] && echo "compile_targets: hipcc not found: gfx90a/$wave32 skipped (scripts/install_deps.sh installs hipcc)"

run_one() {
  local name=$1 cmd=$2 log="$out/logs/$1.log"
  local t0=$SECONDS
  set +e
  eval "$cmd" >"$log" 2>&1
  local rc=$?
  set -e
  echo "$rc $((SECONDS - t0))" >"$out/logs/$name.rc"
  [ "$rc" = 0 ] || echo "compile_targets: FAILED $name (log $log)"
}
export -f run_one
export out
start=$SECONDS
# Quote each command for eval: the job lines hold plain words (paths without spaces).
awk -F'\t' '{print $1 "\t" $2}' "$jobs_file" |
  tr '\t' '\n' | xargs -r -d '\n' -n 2 -P "${JOBS:-$(nproc)}" bash -c 'run_one "$0" "$1"'
echo "compile_targets: $(wc -l <"$jobs_file") compiles in $((SECONDS - start)) s"
"$py" "$root/scripts/targets/parse_resources.py" "$out" --wave32 "$wave32"
