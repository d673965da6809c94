#!/usr/bin/env bash
# One call on a machine with an NVIDIA GPU (about 5 minutes on one H200): builds the CUDA
# kernels (for this GPU's architecture only) and
#   1. pagedattn_gpu_check: the native kernels, the emulated kernels and the double
#      reference on a few configurations;
#   2. `pagedattn audit --backend both` on a small grid (every numerics variant);
#   3. pagedattn_device_probe: this GPU's profile (emulator format) from
#      cudaGetDeviceProperties and a copy -> out/gpu/device_profile.json;
#   4. pagedattn_gpu_bench: V1, V2 and reduce time and bandwidth as a fraction of a
#      device-to-device copy, headline case and sweep -> out/gpu/gpu_bench.json.
# `pagedattn report` reads out/gpu/, and out/gpu/provenance.json (the commit and source
# digest built here, scripts/source_digest.py) to say whether the GPU results judged the
# checkout's kernels. Exit status 0 only if every step passes.
# GPU_BENCH_QUICK=1 runs a small sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu-check}
arch=${CUDA_ARCH:-native}  # CMake >= 3.24 detects the present GPU
jobs=${JOBS:-$(nproc)}
out=${GPU_OUT_DIR:-out/gpu}
start=$SECONDS
mkdir -p "$out"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDATTN_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPAGEDATTN_TESTS=OFF -DPAGEDATTN_BENCH=OFF >/dev/null
cmake --build "$build" --target pagedattn_gpu_check pagedattn pagedattn_gpu_bench \
  pagedattn_device_probe -j "$jobs"
echo "gpu_check.sh: built in $((SECONDS - start)) s"
/usr/bin/python3 scripts/source_digest.py > "$out/provenance.json"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$build/kernels/pagedattn_gpu_check"
# The precision audit natively and on the emulator on the same inputs (a small grid, every
# numerics variant): each cuda row carries gpu_vs_emulator_max_abs_diff.
"$build/tools/pagedattn" audit --backend both --profile h200 --dtype f16,bf16 \
  --num-heads 8 --num-kv-heads 2 --head-size 128 --seq-lens 1500 --partition-size 512 \
  --distribution normal,dominant --numerics ablation --json "$out/audit_both.json"
echo "gpu_check.sh: audit done at $((SECONDS - start)) s"
"$build/gpu_bench/pagedattn_device_probe" --out "$out/device_profile.json"
# The probed profile must load in the emulator and the model as it is written.
"$build/tools/pagedattn" limits --profile "$out/device_profile.json" >"$out/limits_probed.txt"
bench_args=(--out "$out/gpu_bench.json")
[ "${GPU_BENCH_QUICK:-0}" = 1 ] && bench_args+=(--quick)
"$build/gpu_bench/pagedattn_gpu_bench" "${bench_args[@]}"
echo "gpu_check.sh: done in $((SECONDS - start)) s; results in $out/"
