#!/usr/bin/env bash
# Builds the GPU bundle: one folder that runs the whole GPU check on a bare NVIDIA machine
# with nothing but the driver (and, for the torch step, the machine's own python3 + torch).
# No GPU is needed here. The device tool carries the folder and runs its script:
#   run  carry: ["gpu_bundle"]  command: "bash gpu_bundle/run.sh"   (gpu_bundle/README.md)
#
#   gpu_bundle/run.sh          the check (prints the machine first, then unpacks and runs)
#   gpu_bundle/payload.tar.gz  bin/ (pagedattn with CUDA, pagedattn_gpu_check,
#                              pagedattn_gpu_bench, pagedattn_device_probe; RPATH
#                              $ORIGIN/../lib), lib/ (every non-system shared library
#                              they load, from ldd; lib/compat/ the C++ runtime, used only
#                              if the machine's is older), profiles/, torch/ (a CMake
#                              project that builds the torch operators against the
#                              machine's torch: the sources, the headers, and this build's
#                              static libraries merged into one archive)
#   gpu_bundle/MANIFEST.json   what is inside, the commit, sizes
#
# usage: scripts/gpu_bundle.sh [--out DIR] [--from-build BUILD_DIR]
#   default: configures (if needed) and builds the four programs in BUILD_DIR (default
#   build/, the project's defaults: nvcc for sm_80 and sm_90), then assembles into
#   gpu_bundle/. --from-build assembles from an already built BUILD_DIR without building
#   (ctest -L gpu_bundle does that).
set -euo pipefail
trap 'echo "gpu_bundle.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/gpu_bundle
build=${BUILD_DIR:-$root/build}
do_build=1
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --from-build) build=$2; do_build=0; shift 2 ;;
    *) echo "gpu_bundle.sh: unknown argument '$1' (allowed: --out DIR, --from-build BUILD_DIR)" >&2
       exit 2 ;;
  esac
done
programs=(tools/pagedattn gpu_bench/pagedattn_gpu_check gpu_bench/pagedattn_gpu_bench
  gpu_bench/pagedattn_device_probe)
start=$SECONDS
if ((do_build)); then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build "$build" -j "$(nproc)" --target pagedattn pagedattn_gpu_check \
    pagedattn_gpu_bench pagedattn_device_probe pagedattn_kernels_cuda
fi
build=$(cd "$build" && pwd)
for p in "${programs[@]}"; do
  if [ ! -x "$build/$p" ]; then
    echo "gpu_bundle.sh: $build/$p is missing: the bundle needs a build with nvcc" \
      "(pagedattn_kernels_cuda; -DPAGEDATTN_CUDA=ON and nvcc on PATH or in /usr/local/cuda)" >&2
    exit 1
  fi
done
# The architectures the CUDA objects were built for, from the build's own commands (the
# project sets CMAKE_CUDA_ARCHITECTURES as a plain variable, not in the cache).
archs=$(grep -rho 'generate-code=arch=compute_[0-9]*,code=\[[^]]*sm_[0-9]*' \
  "$build"/build.ninja "$build"/kernels/CMakeFiles/*/flags.make 2>/dev/null |
  grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ' || true)
case " $archs" in
  *" sm_80 "*) ;;
  *) echo "gpu_bundle.sh: $build builds CUDA for '$archs'; the bundle needs sm_80 and sm_90" >&2; exit 1 ;;
esac
case " $archs" in
  *" sm_90 "*) ;;
  *) echo "gpu_bundle.sh: $build builds CUDA for '$archs'; the bundle needs sm_80 and sm_90" >&2; exit 1 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/compat" "$stage/torch/lib"
for p in "${programs[@]}"; do
  objcopy --strip-debug "$build/$p" "$stage/bin/$(basename "$p")"
  # Into a variable first: with pipefail, grep -q closing the pipe early fails readelf.
  dyn=$(readelf -d "$stage/bin/$(basename "$p")")
  if ! grep -q '(RPATH).*\$ORIGIN/\.\./lib' <<<"$dyn"; then
    echo "gpu_bundle.sh: $p has no RPATH \$ORIGIN/../lib (gpu_bench/CMakeLists.txt sets it;" \
      "rebuild)" >&2
    exit 1
  fi
done

# The C/C++ runtime and the driver stay the machine's; every other library a program
# loads (ldd: Boost.Context, MPFR, GMP, the CUDA runtime, ...) is carried.
system_lib() {
  case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libutil.so.* | libcuda.so.* | libnvidia-*.so.*) return 0 ;;
  esac
  return 1
}
for f in "$stage"/bin/*; do
  while read -r name _ path _; do
    [ "$path" = "not" ] && { echo "gpu_bundle.sh: $f: $name not found here" >&2; exit 1; }
    [ -n "$path" ] && [ -e "$path" ] || continue
    system_lib "$name" && continue
    case $name in
      libstdc++.so.* | libgcc_s.so.*) dest=$stage/lib/compat ;;  # used only if needed
      *) dest=$stage/lib ;;
    esac
    [ -e "$dest/$name" ] || cp -L "$path" "$dest/$name"
  done < <(ldd "$f" | awk '/=>/ {print $1, $2, $3, $4}')
done
cp -r "$root/emulator/profiles" "$stage/profiles"
cp "$root/gpu_bench/bundle/torch_smoke.py" "$stage/torch_smoke.py"

# The torch operators' project: torch/ as it is in the tree (its CMakeLists.txt, sources
# and Python package), every part's public headers, and this build's static libraries
# merged into one archive that stand-in targets of the libraries' names link
# (gpu_bench/bundle/torch_project.cmake). pagedattn_kernels is left out: it defines the
# same API as pagedattn_kernels_cuda (CPU-only), which the archive has.
mkdir -p "$stage/torch/src" "$stage/torch/include"
cp -r "$root/torch/CMakeLists.txt" "$root/torch/src" "$root/torch/python" "$stage/torch/src/"
for inc in "$root"/*/include "$root"/*/*/include; do
  [ -d "$inc" ] && cp -r "$inc"/. "$stage/torch/include/"
done
[ -d /usr/include/nlohmann ] && cp -r /usr/include/nlohmann "$stage/torch/include/"
cp "$root/gpu_bench/bundle/torch_project.cmake" "$stage/torch/CMakeLists.txt"
cp -a "$root/emulator/link" "$stage/torch/link"
libs=()
targets=()
while read -r a; do
  n=$(basename "$a" .a)
  n=${n#lib}
  case $n in
    pagedattn_testing) ;;  # the judge's library (the torch operators' check links it)
    pagedattn_kernels | pagedattn_bundle | *test* | *mutant* | *fuzz* | *bench* | *properties* | *race*) continue ;;
  esac
  libs+=("$a")
  targets+=("$n")
done < <(find "$build" -name 'libpagedattn_*.a' -not -path '*/CMakeFiles/*' \
  -not -path "$build/gpu_bundle*" -not -path "$build/torch/*" | sort)
# Not a bundle unpacked by its own test, and not torch/'s own libraries (the payload's
# torch project builds those from source; a stand-in of the same name would collide).
{
  echo "CREATE $stage/torch/lib/libpagedattn_bundle.a"
  for a in "${libs[@]}"; do echo "ADDLIB $a"; done
  echo "SAVE"
  echo "END"
} | ar -M
objcopy --strip-debug "$stage/torch/lib/libpagedattn_bundle.a"
printf '%s\n' "${targets[@]}" >"$stage/torch/lib/targets.txt"
for l in "$stage"/lib/libboost_context* "$stage"/lib/libmpfr* "$stage"/lib/libgmp*; do
  [ -e "$l" ] && cp "$l" "$stage/torch/lib/"
done
# The CUDA kernels' shared library (kernels/CMakeLists.txt, pagedattn_cuda_kernels), which
# the archive's CUDA executor calls: a link to lib/'s copy, debug sections stripped there
# (its fatbins are most of the bundle; two copies would not fit the device tool's 64 MB).
for l in "$stage"/lib/libpagedattn_*.so*; do
  [ -e "$l" ] || continue
  objcopy --strip-debug "$l"
  ln -s "../../lib/$(basename "$l")" "$stage/torch/lib/$(basename "$l")"
done
# The runtime libraries the archive's objects need besides torch's own (found by soname
# on the machine if the folder lacks them).
for n in boost_context mpfr gmp; do
  f=$(ldconfig -p | awk -v n="lib$n.so" '$1 ~ "^"n && !found {print $NF; found = 1}')
  [ -n "$f" ] && [ ! -e "$stage/torch/lib/$(basename "$f")" ] && cp -L "$f" "$stage/torch/lib/" || true
done

commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain 2>/dev/null | { grep -v '^??' || true; } | wc -l)
nvcc_v=$("$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")" --version |
  grep -o 'release [0-9.]*, V[0-9.]*' || echo unknown)
rm -rf "$out"
mkdir -p "$out"
tar -C "$stage" -czf "$out/payload.tar.gz" .
cp "$root/gpu_bench/bundle/run.sh" "$out/run.sh"
readme=gpu_bench/bundle/README.md  # the bundle's README, as its own top file
cp "$root/$readme" "$out/${readme##*/}"
chmod +x "$out/run.sh"
# The commit and source digest this bundle's kernels were built from (scripts/source_digest.py):
# run.sh passes it on beside its results, so the report can say whether they judged the
# checkout's kernels.
(cd "$root" && /usr/bin/python3 scripts/source_digest.py) >"$out/provenance.json"
/usr/bin/python3 - "$stage" "$out" "$commit" "$dirty" "$nvcc_v" "$archs" \
  "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")" <<'EOF'
import json, os, sys, datetime
stage, out, commit, dirty, nvcc, archs, btype = sys.argv[1:8]
files = []
for d, _, fs in os.walk(stage):
    for f in fs:
        p = os.path.join(d, f)
        files.append({"path": os.path.relpath(p, stage), "bytes": os.path.getsize(p)})
files.sort(key=lambda f: f["path"])
folder = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
m = {"built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
     "commit": commit, "uncommitted_changes": int(dirty), "nvcc": nvcc,
     "cuda_architectures": archs, "build_type": btype,
     "unpacked_bytes": sum(f["bytes"] for f in files), "folder_bytes": folder,
     "files": files}
json.dump(m, open(os.path.join(out, "MANIFEST.json"), "w"), indent=1)
print(f"gpu_bundle.sh: {out}: {folder / 2**20:.1f} MiB "
      f"({m['unpacked_bytes'] / 2**20:.1f} MiB unpacked), commit {commit[:12]}"
      + (f" + {dirty} uncommitted changes" if int(dirty) else ""))
EOF
size=$(du -sb "$out" | cut -f1)
# The device tool carries the working tree too (about 2 MiB): 60 MiB leaves room for it.
if ((size > 60 * 1024 * 1024)); then
  echo "gpu_bundle.sh: the bundle is $((size >> 20)) MiB, over the 60 MiB it may take" >&2
  exit 1
fi
echo "gpu_bundle.sh: done in $((SECONDS - start)) s"
