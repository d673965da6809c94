#!/usr/bin/env bash
# The one kernel source for every target this machine has a compiler for (issue 17 items
# 3-5): nvcc sm_80/sm_90, clang's CUDA front end sm_80 (warnings as errors; and
# __ILUVATAR__, CoreX's macro, warp 64), hipcc gfx90a (wave 64) and a wave-32 AMD target;
# every instantiation of kernels/src/cuda_*.cu (instantiate.inc, dispatch.cuh), each
# kernel's registers, shared memory / LDS, spills and occupancy into out/targets/
# targets.json, which `pagedattn report` reads. A missing compiler is skipped with a
# message (scripts/install_deps.sh installs them); a failed compile fails the stage.
# Measured at 7dc7150: 45 compiles, 588 CPU-s. It compiles only and writes only
# out/targets/, so test.sh runs it in the background, niced, beside the other stages:
# test.sh: background
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC_BUILD=${NVCC_BUILD-${BUILD_DIR:-build}} \
  bash scripts/targets/compile_targets.sh "${TARGETS_OUT:-out/targets}"
# Issue 18: no grouped kernel keeps registers in memory (stack, spills, scratch) on any target.
/usr/bin/python3 scripts/targets/check_grouped_resources.py "${TARGETS_OUT:-out/targets}"
