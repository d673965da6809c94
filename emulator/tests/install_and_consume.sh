#!/usr/bin/env bash
# Installs this build into a scratch prefix, then builds and runs an outside project
# that finds it with find_package(pagedattn CONFIG REQUIRED).
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/outside_kernel"
"$work/build/third_party"
"$work/build/vllm_v1_unpadded"
