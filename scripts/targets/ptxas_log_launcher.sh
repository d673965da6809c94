#!/usr/bin/env bash
# CUDA_COMPILER_LAUNCHER of the library's CUDA instantiations (kernels/CMakeLists.txt): runs
# the compile as given plus `-Xptxas=-v` and keeps ptxas's resource report beside the object
# (OBJECT.ptxas.log), so every build records each kernel's registers, stack frame and spills
# on every shape and architecture it compiles, at no extra compile. check_build_spills.py
# reads the logs. What ptxas says besides its -v report (warnings, errors) still goes to
# stderr, and the compile's exit status is the launcher's.
# usage (by CMake): ptxas_log_launcher.sh NVCC ARGS...
out=
prev=
for a in "$@"; do
  [ "$prev" = -o ] && out=$a
  prev=$a
done
log=${out:-ptxas}.ptxas.log
"$@" -Xptxas=-v 2>"$log.tmp"
rc=$?
grep -v -E "^ptxas info +:|^ +[0-9]+ bytes stack frame" "$log.tmp" >&2
mv -f "$log.tmp" "$log"
exit $rc
