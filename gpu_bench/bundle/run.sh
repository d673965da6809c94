#!/usr/bin/env bash
# The whole GPU check from the bundle folder (scripts/gpu_bundle.sh builds it; README.md
# beside this says how to run it through the device tool in one call). Needs the NVIDIA
# driver and nothing else: the programs and their libraries are in payload.tar.gz; the
# torch step uses the machine's own python3, torch, cmake and C++ compiler when present.
#
#   1. machine    what is there (nvidia-smi, driver, nvcc, cmake, g++, python3, torch,
#                 compute-sanitizer), printed before anything depends on it
#   2. unpack     payload.tar.gz into $TMPDIR; loader check (lib/compat if the C++ runtime
#                 here is older than the one the programs were built with)
#   3. gpu_check  native V1/V2/reduce against the emulator and the reference
#                 (pagedattn_gpu_check: bitwise, bound and reduce classes)
#   4. memcheck, racecheck (and synccheck, initcheck in full and dry mode):
#                 compute-sanitizer on the check's small grid
#   5. audit      `pagedattn audit --backend both`: native and emulated against the exact
#                 reference and the proven bound on the same inputs
#   6. probe      the device's profile, loaded back by `pagedattn limits`
#   7. bench      V1, V2, reduce: time and bandwidth as a fraction of a copy (headline +
#                 sweep)
#   8. torch      the torch operators built against the machine's torch (CUDA key when it
#                 has CUDA), a smoke test (torch_smoke.py: the CUDA key bit for bit against
#                 the CPU key), then `python -m pagedattn_torch.check pagedattn --device
#                 cuda` when the bundle has that module
# Results in OUT_DIR ($GPU_OUT_DIR, else $OUT/gpu under the device tool, else out/gpu
# beside this script), at most 8 files: run.log, gpu_run.json (the machine, every step's
# status, time and output tail), gpu_check.json, audit_both.json, device_profile.json,
# gpu_bench.json, torch_check.json. `pagedattn report --gpu OUT_DIR` reads them.
#
# usage: bash run.sh [--quick]
#   --quick: the check's quick grid, two sanitizer tools, a small audit and sweep: under 3
#   minutes (full: under 8, each step's limit below, all under one deadline).
#   GPU_CHECK_DRY=1: every CUDA step replaced by the emulator (the programs' --dry, the
#   emulator's memcheck/racecheck for compute-sanitizer, the CPU for torch's CUDA): what
#   ctest -L gpu_bundle runs on a machine without a GPU.
#   GPU_STEPS=gpu_check,bench: only these steps (unpack and loader always run), e.g. to
#   rerun one step; GPU_CHECK_ARGS: more arguments for pagedattn_gpu_check (e.g.
#   --inject-wrong, which must make the step fail); GPU_TORCH_BUILD=direct: build the torch
#   operators without Torch's CMake package (the fallback when that fails).
# Exit status 0 only if no step failed (a skipped step, e.g. no torch, is not a failure).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=full
while (($#)); do
  case $1 in
    --quick) mode=quick; shift ;;
    *) echo "run.sh: unknown argument '$1' (allowed: --quick)" >&2; exit 2 ;;
  esac
done
dry=${GPU_CHECK_DRY:-0}
out=${GPU_OUT_DIR:-}
[ -z "$out" ] && [ -n "${OUT:-}" ] && out=$OUT/gpu
[ -z "$out" ] && out=$here/out/gpu
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.json "$out"/run.log
exec > >(tee "$out/run.log") 2>&1
t0=$SECONDS
# One deadline for every step: full 450 s, quick 160 s (the machine's start, the unpacking
# and the report add under a minute); a dry run on 2 shared cores gets more.
if [ "$dry" = 1 ]; then deadline=1500; elif [ "$mode" = quick ]; then deadline=160; else deadline=450; fi

# ---- JSON without python: strings escaped here, objects written as text ----
jstr() {
  printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037' |
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' |
    awk 'BEGIN { ORS = ""; print "\"" } NR > 1 { print "\\n" } { print } END { print "\"" }'
}
machine_json=""
note() {  # note KEY VALUE: print it and keep it for gpu_run.json
  printf 'machine: %-18s %s\n' "$1" "$2"
  machine_json+="${machine_json:+, }$(jstr "$1"): $(jstr "$2")"
}
first() { command -v "$1" 2>/dev/null || { [ -x "$2" ] && echo "$2"; } || true; }

# ---- 1. the machine, before anything depends on it ----
echo "run.sh: mode $mode$([ "$dry" = 1 ] && echo ', DRY (emulator in place of CUDA)'), results in $out"
note date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
note uname "$(uname -srm)"
note cpus "$(nproc)"
note memory "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
note glibc "$(ldd --version 2>&1 | sed -n 1,1p)"
smi=$(first nvidia-smi /usr/bin/nvidia-smi)
if [ -n "$smi" ]; then
  note gpu "$(timeout 20 "$smi" --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | sed -n 1,4p)"
  timeout 20 "$smi" 2>&1 | sed -n 1,20p
else
  note gpu "no nvidia-smi"
fi
nvcc=$(first nvcc /usr/local/cuda/bin/nvcc)
note nvcc "${nvcc:-none}${nvcc:+ $(timeout 20 "$nvcc" --version 2>&1 | grep -o 'release.*' | sed -n 1,1p)}"
note cmake "$(timeout 20 cmake --version 2>/dev/null | sed -n 1,1p || echo none)"
note ninja "$(timeout 20 ninja --version 2>/dev/null || echo none)"
note "c++" "$(timeout 20 c++ --version 2>/dev/null | sed -n 1,1p || echo none)"
sanitizer=$(first compute-sanitizer /usr/local/cuda/bin/compute-sanitizer)
note compute-sanitizer "${sanitizer:-none}${sanitizer:+ $(timeout 30 "$sanitizer" --version 2>&1 | grep -io 'version.*' | sed -n 1,1p)}"
py=python3
[ "$dry" = 1 ] && [ -x /usr/bin/python3 ] && py=/usr/bin/python3  # Debian's, with its torch
note python3 "$(command -v $py) $($py --version 2>&1)"
torch_info=$(timeout 90 $py -c '
import torch
cuda = torch.cuda.is_available()
print(torch.__version__, "cuda", torch.version.cuda, "available", cuda,
      "device", torch.cuda.get_device_name(0) if cuda else "-",
      "cxx11_abi", torch._C._GLIBCXX_USE_CXX11_ABI)' 2>&1 | tail -1)
note torch "$torch_info"
echo "run.sh: machine described in $((SECONDS - t0)) s"

# ---- steps ----
steps_json=""
failed=0
work=${TMPDIR:-/tmp}/pagedattn_gpu_bundle
logs=$work/logs
step() {  # step NAME LIMIT_S NOTE COMMAND... : runs it under the deadline, records it
  local name=$1 limit=$2 what=$3
  shift 3
  local left=$((deadline - (SECONDS - t0)))
  ((limit > left)) && limit=$left
  local status rc=0 s0=$SECONDS
  mkdir -p "$logs"
  if [ -n "${GPU_STEPS:-}" ] && [[ ",unpack,loader,$GPU_STEPS," != *",$name,"* ]]; then
    status=skipped
    what="not in GPU_STEPS=$GPU_STEPS"
    echo "run.sh: step $name skipped: $what"
    : >"$logs/$name.log"
  elif ((limit < 5)); then
    status=skipped
    what="no time left under the ${deadline} s deadline"
    echo "run.sh: step $name skipped: $what"
    : >"$logs/$name.log"
  else
    echo "run.sh: step $name (limit $limit s): $*"
    # bash -c: a step may be one of the functions below (exported); timeout ends it and
    # everything it started.
    timeout -k 10 "$limit" bash -c '"$@"' step "$@" 2>&1 | tee "$logs/$name.log"
    rc=${PIPESTATUS[0]}
    if ((rc == 0)); then status=pass; elif ((rc == 124 || rc == 137)); then status=timeout; else status=fail; fi
    [ "$status" = pass ] || failed=$((failed + 1))
  fi
  local secs=$((SECONDS - s0))
  echo "run.sh: step $name: $status (rc $rc, $secs s)"
  steps_json+="${steps_json:+,
  }{\"name\": $(jstr "$name"), \"status\": \"$status\", \"rc\": $rc, \"seconds\": $secs, \"limit_s\": $limit, \"note\": $(jstr "$what"), \"command\": $(jstr "$*"), \"output_tail\": $(jstr "$(tail -c 2500 "$logs/$name.log")")}"
}
skip() {  # skip NAME WHY
  echo "run.sh: step $1 skipped: $2"
  steps_json+="${steps_json:+,
  }{\"name\": $(jstr "$1"), \"status\": \"skipped\", \"rc\": 0, \"seconds\": 0, \"note\": $(jstr "$2")}"
}

# ---- 2. unpack ----
rm -rf "$work"
mkdir -p "$work"
unpack() {
  tar -xzf "$here/payload.tar.gz" -C "$work" 2>/dev/null ||
    $py -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$here/payload.tar.gz" "$work"
}
export here work py dry mode out nvcc logs
export -f unpack
step unpack 60 "payload.tar.gz into $work" unpack
bin=$work/bin
export bin EMU_PROFILE_PATH=$work/profiles
loader() {
  if "$bin/pagedattn" limits --profile h200 >/dev/null 2>"$work/loader.err"; then
    echo "loader: the machine's C++ runtime serves the programs"
  else
    cat "$work/loader.err"
    export LD_LIBRARY_PATH=$work/lib/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    "$bin/pagedattn" limits --profile h200 >/dev/null || return 1
    echo "loader: using the bundle's C++ runtime (lib/compat)"
  fi
  for b in "$bin"/*; do
    if ldd "$b" | grep 'not found'; then return 1; fi
  done
}
export -f loader
step loader 30 "every program loads; ldd finds every library" loader
grep -q "lib/compat" "$logs/loader.log" && export LD_LIBRARY_PATH=$work/lib/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

d=()
[ "$dry" = 1 ] && d=(--dry)
quick=()
[ "$mode" = quick ] && quick=(--quick)

# ---- 3. the check ----
grid=full
[ "$mode" = quick ] && grid=quick
step gpu_check $([ "$mode" = quick ] && echo 60 || echo 150) "grid $grid" \
  "$bin/pagedattn_gpu_check" --grid "$grid" --json "$out/gpu_check.json" "${d[@]}" \
  ${GPU_CHECK_ARGS:-}

# ---- 4. sanitizers on the small grid ----
tools=(memcheck racecheck)
# All four in full mode, and in a dry run (the emulator's are seconds on this grid), so the
# dry test goes through every step.
[ "$mode" = full ] || [ "$dry" = 1 ] && tools+=(synccheck initcheck)
for tool in "${tools[@]}"; do
  if [ "$dry" = 1 ]; then
    step "$tool" 300 "the emulator's $tool (EMU_CHECKS) in place of compute-sanitizer" \
      env EMU_CHECKS="$tool" "$bin/pagedattn_gpu_check" --grid sanitizer --dry
  elif [ -n "$sanitizer" ]; then
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check no)
    [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    step "$tool" $([ "$tool" = racecheck ] && echo 120 || echo 90) "compute-sanitizer --tool $tool" \
      "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 3 \
      "$bin/pagedattn_gpu_check" --grid sanitizer
  else
    skip "$tool" "compute-sanitizer not found"
  fi
done

# ---- 5. the audit: exact reference and proven bound, native and emulated ----
backend=both
[ "$dry" = 1 ] && backend=emulator
if [ "$mode" = quick ]; then
  audit_grid=(--dtype f16 --seq-lens 1500 --distribution normal --numerics both)
else
  audit_grid=(--dtype f16,bf16 --seq-lens 1500,20000 --distribution normal,dominant
    --numerics ablation)
fi
step audit 150 "audit --backend $backend" "$bin/pagedattn" audit --backend "$backend" \
  --profile h200 --num-heads 8 --num-kv-heads 2 --head-size 128 --partition-size 512 \
  "${audit_grid[@]}" --json "$out/audit_both.json"

# ---- 6. the device's profile, loaded back ----
step probe 60 "device profile" "$bin/pagedattn_device_probe" --out "$out/device_profile.json" "${d[@]}"
step limits 30 "the probed profile loads in the emulator and the model" \
  "$bin/pagedattn" limits --profile "$out/device_profile.json"

# ---- 7. the benchmark ----
step bench $([ "$mode" = quick ] && echo 60 || echo 150) "headline and sweep" \
  "$bin/pagedattn_gpu_bench" --out "$out/gpu_bench.json" "${quick[@]}" "${d[@]}"

# ---- 8. torch: the operators against the machine's torch, then the check ----
torch_build_cmake() {
  local tdir
  tdir=$($py -c 'import torch, os; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')
  local args=(-S "$work/torch" -B "$work/torch_build" -DCMAKE_BUILD_TYPE=Release)
  [ -f "$tdir/TorchConfig.cmake" ] && args+=(-DTorch_DIR="$tdir")
  command -v ninja >/dev/null && args+=(-G Ninja)
  if [ -n "$nvcc" ]; then
    local cuda_root
    cuda_root=$(dirname "$(dirname "$nvcc")")
    args+=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root"
      -DCUDA_TOOLKIT_ROOT_DIR="$cuda_root")
  fi
  cmake "${args[@]}" && cmake --build "$work/torch_build" -j "$(nproc)" &&
    [ -f "$work/torch_build/src/libpagedattn_torch.so" ]
}
# The same library without Torch's CMake package (which may want more of CUDA than the
# machine has, e.g. cuDNN's CMake files): torch/CMakeLists.txt's sources and flags, with the
# include and library paths torch.utils.cpp_extension reports.
torch_build_direct() {
  local o=$work/torch_build/src
  mkdir -p "$o"
  local info
  info=$($py - <<'PY'
import torch, torch.utils.cpp_extension as e
cuda = torch.version.cuda is not None and torch.cuda.is_available()
try:
    inc = e.include_paths(device_type="cuda" if cuda else "cpu")
except TypeError:
    inc = e.include_paths(cuda)
print(int(cuda), int(torch._C._GLIBCXX_USE_CXX11_ABI), ":".join(inc), ":".join(e.library_paths()))
PY
) || return 1
  local cuda abi incs libdirs
  read -r cuda abi incs libdirs <<<"$info"
  # The archive's CUDA library needs the CUDA runtime either way.
  local cuda_root
  cuda_root=$(dirname "$(dirname "${nvcc:-/usr/local/cuda/bin/nvcc}")")
  local srcs=("$work"/torch/src/src/*.cpp) flags=()
  local links=(-ltorch -ltorch_cpu -lc10) d
  for d in "$cuda_root/lib64" "$cuda_root"/targets/*/lib; do
    [ -e "$d/libcudart.so" ] && links+=(-L"$d" -Wl,-rpath,"$d")
  done
  links+=(-lcudart)
  if [ "$cuda" = 1 ]; then
    flags+=(-DPAGEDATTN_TORCH_CUDA=1 -I"$cuda_root/include")
    links=(-ltorch_cuda -lc10_cuda "${links[@]}")
  else
    srcs=($(printf '%s\n' "${srcs[@]}" | grep -v '_cuda\.cpp$'))
  fi
  local i
  for i in ${incs//:/ }; do flags+=(-isystem "$i"); done
  for i in ${libdirs//:/ }; do links=(-L"$i" -Wl,-rpath,"$i" "${links[@]}"); done
  c++ -std=c++17 -O2 -fPIC -shared -ffp-contract=off -D_GLIBCXX_USE_CXX11_ABI="$abi" \
    -Wall -Wextra -Wno-unused-parameter -I"$work/torch/include" "${flags[@]}" "${srcs[@]}" \
    -o "$o/libpagedattn_torch.so" -Wl,-Bsymbolic -rdynamic -B"$work/torch/link/" \
    "$work/torch/lib/libpagedattn_bundle.a" "$work"/torch/lib/lib*.so* "${links[@]}" -ldl -lpthread
}
torch_build() {
  if [ "${GPU_TORCH_BUILD:-cmake}" = cmake ] && torch_build_cmake; then return 0; fi
  echo "torch_build: building without Torch's CMake package"
  rm -rf "$work/torch_build"
  torch_build_direct
}
torch_env() {
  # torch/lib: the operators' own runtime libraries (Boost.Context, MPFR, GMP), which the
  # machine may lack.
  export PYTHONPATH=$work/torch/src/python PAGEDATTN_TORCH_LIB=$work/torch_build/src/libpagedattn_torch.so
  export LD_LIBRARY_PATH=$work/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
torch_dev=cuda
[ "$dry" = 1 ] && torch_dev=cpu
export torch_dev
torch_smoke() {
  torch_env
  $py "$work/torch_smoke.py" "$torch_dev"
}
torch_check() {
  torch_env
  local args=(pagedattn --device "$torch_dev" --json "$out/torch_check.json")
  [ "$mode" = quick ] && args+=(--cases 100)
  $py -m pagedattn_torch.check "${args[@]}"
}
export -f torch_build_cmake torch_build_direct torch_build torch_env torch_smoke torch_check
# (Pattern matches, not pipes into grep -q: with pipefail an early-closing grep can fail
# the pipe.)
if [[ $torch_info != *cxx11_abi* ]]; then
  skip torch_build "no torch for $py: $torch_info"
  skip torch_smoke "no operators"
  skip torch_check "no torch"
elif [[ $torch_info == *"cxx11_abi False"* ]]; then
  skip torch_build "torch uses the pre-C++11 string ABI; the bundle's archive was built with the C++11 one"
  skip torch_smoke "no operators"
  skip torch_check "no operators"
elif ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
  skip torch_build "no cmake or c++ on this machine"
  skip torch_smoke "no operators"
  skip torch_check "no operators"
else
  step torch_build 180 "the torch operators against $py's torch" torch_build
  if [ ! -f "$work/torch_build/src/libpagedattn_torch.so" ]; then
    skip torch_smoke "the operators did not build"
    skip torch_check "the operators did not build"
    continue_torch=0
  elif [ "$dry" != 1 ] && [[ $torch_info != *"available True"* ]]; then
    skip torch_smoke "torch here has no CUDA device"
    skip torch_check "torch here has no CUDA device"
    continue_torch=0
  else
    step torch_smoke 90 "V1 and V2 through torch.ops.pagedattn on $torch_dev, bit for bit against the CPU key" torch_smoke
    continue_torch=1
  fi
  if [ "$continue_torch" = 0 ]; then
    :
  elif [ ! -e "$work/torch/src/python/pagedattn_torch/check.py" ] &&
    [ ! -e "$work/torch/src/python/pagedattn_torch/check/__init__.py" ]; then
    skip torch_check "this bundle's pagedattn_torch has no check module (issue 16): rebuild the bundle once it is merged"
  else
    step torch_check 150 "python -m pagedattn_torch.check pagedattn" torch_check
  fi
fi

# ---- summary: gpu_run.json (and the bundle's provenance.json), at most 8 files in $out ----
[ -f "$here/provenance.json" ] && cp "$here/provenance.json" "$out/provenance.json"
total=$((SECONDS - t0))
manifest=$(tr -d '\n' <"$here/MANIFEST.json" 2>/dev/null | grep -o '"commit": "[^"]*"' | sed -n 1,1p)
cat >"$out/gpu_run.json" <<EOF
{"tool": "gpu_bundle/run.sh", "mode": "$mode", "dry": $([ "$dry" = 1 ] && echo true || echo false),
 "bundle": {${manifest}}, "seconds": $total, "deadline_s": $deadline,
 "pass": $([ "$failed" = 0 ] && echo true || echo false), "failed_steps": $failed,
 "machine": {$machine_json},
 "steps": [
  $steps_json
 ]}
EOF
n=$(find "$out" -maxdepth 1 -type f | wc -l)
if ((n > 8)); then  # the device tool returns at most 8 files: pack the rest
  (cd "$out" && ls | grep -v -x -e run.log -e gpu_run.json -e gpu_check.json -e gpu_bench.json \
    -e audit_both.json -e device_profile.json -e extra.tar.gz | tar -czf extra.tar.gz -T - --remove-files)
fi
echo "run.sh: $([ "$failed" = 0 ] && echo PASS || echo "FAIL ($failed steps)") in $total s; results in $out:"
ls -la "$out"
exit $((failed > 0))
