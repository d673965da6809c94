#!/usr/bin/env bash
# The GPU check on a machine that has both this project's build dependencies and an NVIDIA
# GPU: builds the GPU bundle (scripts/gpu_bundle.sh) and runs it (gpu_bundle/run.sh: the
# machine, native V1/V2/reduce against the emulator and the reference, compute-sanitizer,
# `pagedattn audit --backend both`, the device probe, the benchmark, the torch operators
# and their check) into out/gpu/, which `pagedattn report` reads. A bare GPU machine (the
# device tool's) gets the bundle carried instead: gpu_bundle/README.md.
# Arguments go to run.sh (--quick). Exit status: run.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/gpu_bundle.sh
GPU_OUT_DIR=${GPU_OUT_DIR:-out/gpu} exec bash gpu_bundle/run.sh "$@"
