#!/bin/sh
# `pagedattn audit --backend cuda` where it cannot run natively (ctest, label audit).
#   cli_backend_cuda.sh PAGEDATTN no-device   a CUDA build on a machine without a GPU:
#       exit 1 and "no CUDA device: ..."; exits 77 (ctest: skipped) if a GPU answers.
#   cli_backend_cuda.sh PAGEDATTN no-build    a build without nvcc: the usage error, exit 2.
cli=$1
mode=$2
for backend in cuda both; do
  out=$("$cli" audit --backend "$backend" --num-heads 2 --num-kv-heads 1 --head-size 64 \
    --seq-lens 100 --quiet 2>&1)
  rc=$?
  echo "--backend $backend: exit $rc: $out"
  if [ "$mode" = no-device ]; then
    [ "$rc" -eq 0 ] && { echo "a CUDA device is present: nothing to test here"; exit 77; }
    [ "$rc" -eq 1 ] || exit 1
    echo "$out" | grep -q "pagedattn audit: no CUDA device: " || exit 1
  else
    [ "$rc" -eq 2 ] || exit 1
    echo "$out" | grep -q "this build has no CUDA backend" || exit 1
  fi
done
exit 0
