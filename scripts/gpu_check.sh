#!/usr/bin/env bash
# One call on a machine with an NVIDIA GPU: builds the CUDA kernels (for this GPU's
# architecture only, to stay well under 5 minutes) and runs pagedattn_gpu_check, which
# compares the native kernels, the emulated kernels and the double reference on a few
# configurations and prints a summary. Exit status 0 only if every check passes.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu-check}
arch=${CUDA_ARCH:-native}  # CMake >= 3.24 detects the present GPU
jobs=${JOBS:-$(nproc)}
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGEDATTN_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPAGEDATTN_TESTS=OFF -DPAGEDATTN_BENCH=OFF >/dev/null
cmake --build "$build" --target pagedattn_gpu_check -j "$jobs"
echo "gpu_check.sh: built in $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$build/kernels/pagedattn_gpu_check"
echo "gpu_check.sh: done in $((SECONDS - start)) s"
