#!/usr/bin/env bash
# One call on a machine with an NVIDIA GPU: builds the CUDA kernels (for this GPU's
# architecture only, to stay well under 5 minutes) and runs pagedattn_gpu_check, which
# compares the native kernels, the emulated kernels and the double reference on a few
# configurations and prints a summary, then `pagedattn audit --backend both` on a small
# grid. Exit status 0 only if every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu-check}
arch=${CUDA_ARCH:-native}  # CMake >= 3.24 detects the present GPU
jobs=${JOBS:-$(nproc)}
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDATTN_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPAGEDATTN_TESTS=OFF -DPAGEDATTN_BENCH=OFF >/dev/null
cmake --build "$build" --target pagedattn_gpu_check pagedattn -j "$jobs"
echo "gpu_check.sh: built in $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$build/kernels/pagedattn_gpu_check"
# The precision audit natively and on the emulator on the same inputs (a small grid, every
# numerics variant): each cuda row carries gpu_vs_emulator_max_abs_diff.
"$build/tools/pagedattn" audit --backend both --profile h200 --dtype f16,bf16 \
  --num-heads 8 --num-kv-heads 2 --head-size 128 --seq-lens 1500 --partition-size 512 \
  --distribution normal,dominant --numerics ablation --json "$build/audit_both.json"
echo "gpu_check.sh: done in $((SECONDS - start)) s"
