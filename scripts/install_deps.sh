#!/usr/bin/env bash
# Installs the Debian packages pagedattn builds against. Idempotent: asks apt only
# for what is missing, so a second run is a no-op.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build git
  libboost-dev libboost-context-dev   # Boost.Context fibers (emulator), Boost.Multiprecision (reference)
  libmpfr-dev libgmp-dev              # correctly rounded arithmetic for the reference
  nlohmann-json3-dev                  # device profiles, audit JSON
  libgtest-dev libgmock-dev           # unit tests
  librapidcheck-dev                   # property tests
  libbenchmark-dev                    # Google Benchmark programs
  python3-matplotlib python3-numpy    # report plots (run with /usr/bin/python3)
  clang-format
  libcli11-dev                        # the one command-line parser (tools/)
  clang libclang-rt-14-dev            # libFuzzer targets and the sanitizer builds
  coq libcoq-flocq libcoq-coquelicot libcoq-interval gappa libcoq-gappa   # proofs/
  python3-torch libtorch-dev          # the PyTorch operators (torch/), with /usr/bin/python3
  python3-hypothesis python3-pytest   # python -m pagedattn_torch.check: cases with shrinking, its pytest plugin
  parallel                            # property campaigns spread over cores
  hipcc libamdhip64-dev rocm-device-libs   # the kernels through HIP for gfx90a (scripts/test.d/50-targets.sh)
  clang-19                            # clang's CUDA front end for CUDA 13's headers (same stage)
  binutils                            # readelf, objcopy, ar: the GPU bundle (scripts/gpu_bundle.sh)
  slurm-wlm munge                     # the one-node Slurm of ctest slurm.campaign_and_mutants
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install_deps: all ${#pkgs[@]} packages present"
