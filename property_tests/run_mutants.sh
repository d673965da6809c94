#!/usr/bin/env bash
# The whole mutation catalogue on this machine, one command: SHARDS shards (default 2, one
# per core) run in parallel by GNU parallel, shard K in its own build folder
# ${BUILD_PREFIX}-K (one build folder runs one mutate.py at a time; a missing folder is
# configured here, CUDA off: mutants run on the emulator), then merged. Usage:
#   property_tests/run_mutants.sh [SHARDS] [MUTATE_ARGS...]
#   e.g. property_tests/run_mutants.sh 2                       # all 575, two shards
#        property_tests/run_mutants.sh 2 --ids ID1 ID2         # a selection, sharded alike
#        property_tests/run_mutants.sh 2 --resume              # go on where a stopped run left
# BUILD_PREFIX (default build-mutants), SHARDS_DIR (default out/properties/shards) receives
# mutants-K-of-N.json and log-K-of-N.txt, OUT (default out/properties/mutation.json) the
# merge (mutate.py merge: refuses shards of other sources or settings, and says whether
# every shard is there). Exit status: non-zero if a shard failed to run or the merge refused.
# Slurm: property_tests/slurm/mutants.sbatch runs the same shards as an array.
set -euo pipefail
shards=${1:-2}
shift || true
prefix=${BUILD_PREFIX:-build-mutants}
dir=${SHARDS_DIR:-out/properties/shards}
out=${OUT:-out/properties/mutation.json}
mkdir -p "$dir"
for k in $(seq 1 "$shards"); do
  if [ ! -f "$prefix-$k/build.ninja" ]; then
    cmake -S . -B "$prefix-$k" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGEDATTN_CUDA=OFF \
      > "$dir/configure-$k-of-$shards.txt"
  fi
done
case " $* " in
  *" --resume "*) ;;  # keep what a stopped run of these shards left (mutate.py --resume)
  *) rm -f "$dir"/mutants-*-of-"$shards".json ;;
esac
status=0
seq 1 "$shards" | parallel --line-buffer -j "$shards" \
  "/usr/bin/python3 property_tests/mutate.py --build $prefix-{} --shard {}/$shards $* \
     --out $dir/mutants-{}-of-$shards.json > $dir/log-{}-of-$shards.txt 2>&1" || status=$?
/usr/bin/python3 property_tests/mutate.py merge "$dir"/mutants-*-of-"$shards".json --out "$out" ||
  status=$?
exit $status
