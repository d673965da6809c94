#!/usr/bin/env bash
# Configures, builds and runs every test with ctest. The README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
