#!/usr/bin/env bash
# ctest slurm.campaign_and_mutants (label slurm): a property campaign and a mutation shard
# set as job arrays on a real scheduler. Starts a one-node Slurm (local_slurm.sh), submits
# campaign.sbatch as --array=1-3 and mutants.sbatch as --array=1-2 (the job scripts the
# README's recipe names), merge.sbatch after both (--dependency=afterok), then checks the
# merged summaries (check_merged.py: total cases = the sum over the shards, disjoint seeds
# and mutants, no failure, every shard present, the checkout's source digest, and equal but
# for timing to the same campaign and mutants run locally without Slurm) and shuts Slurm
# down, on failure too. Exit 77 (ctest: skipped) with the reason where munge or
# slurm-wlm is not installed or the cluster cannot start.
#   usage: slurm_test.sh BUILD_DIR WORK_DIR
# Knobs (environment): SLURM_TEST_CASES (cases per property, default 6), SLURM_TEST_WAIT
# (seconds for everything submitted, default 900).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: slurm_test.sh BUILD_DIR WORK_DIR}" && pwd)
work=${2:?usage: slurm_test.sh BUILD_DIR WORK_DIR}
# shellcheck source=local_slurm.sh
source "$here/local_slurm.sh"
missing=$(slurm_missing)
if [ -n "$missing" ]; then
  echo "SKIPPED: not installed: $missing (scripts/install_deps.sh installs slurm-wlm and munge)"
  exit 77
fi
if ! command -v parallel >/dev/null 2>&1; then
  echo "SKIPPED: GNU parallel is not installed (the local run compared against; install_deps.sh installs it)"
  exit 77
fi
campaign=$build/property_tests/pagedattn_prop_campaign
[ -x "$campaign" ] || { echo "FAIL: $campaign not built"; exit 1; }
rm -rf "$work"
mkdir -p "$work/logs"
work=$(cd "$work" && pwd)
# The cluster's folder: short (munge's socket path must fit a sockaddr_un), private.
cluster=$(mktemp -d /tmp/pagedattn-slurm.XXXXXX)
finish() {
  local rc=$?
  slurm_stop "$cluster"
  cp -r "$cluster/log" "$work/logs/daemons" 2>/dev/null || true
  rm -rf "$cluster"
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    for f in "$work"/logs/*.log; do
      [ -e "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
    done
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
start=$SECONDS
if ! slurm_start "$cluster"; then
  echo "SKIPPED: a one-node Slurm cannot start on this machine (logs above)"
  exit 77
fi
echo "slurm: one-node cluster up in $((SECONDS - start)) s ($SLURM_CONF)"

cd "$root"
# Two mutants the first stage kills, found by what they change (not by line number, which
# moves with the kernels): group_sum's += made -=, group_max's fmaxf made fminf
# (warp_reduce.cuh). Each shard runs one; merge.sbatch folds both.
mapfile -t ids < <(/usr/bin/python3 property_tests/mutate.py --list 2>/dev/null |
  sed -n -e 's/^\(kernels\/src\/warp_reduce.cuh:[0-9]*:[0-9]*:aor\) | v += __shfl.*/\1/p' \
         -e 's/^\(kernels\/src\/warp_reduce.cuh:[0-9]*:[0-9]*:minmax\) | v = fmaxf.*/\1/p')
if [ "${#ids[@]}" != 2 ]; then
  echo "FAIL: expected 2 warp_reduce.cuh mutants (group_sum +=, group_max fmaxf), found: ${ids[*]}"
  exit 1
fi
export CAMPAIGN=$campaign CASES=${SLURM_TEST_CASES:-6} SEED=11 BUILD=$build
export SHARDS_DIR=$work/shards OUT_DIR=$work/merged
# mutate.py's default settings (25 cases, racecheck for survivors): the baseline this run
# records in the build folder is the one scripts/test.d/40-mutants.sh then reuses.
export MUTATE_ARGS="--ids ${ids[*]}"
# --time: the scripts' own limits are for real campaigns; the test's cluster allows 30 min.
sb() { timeout 30 sbatch --parsable --chdir="$root" "$@"; }
a=$(sb --array=1-3 --time=10 --output="$work/logs/campaign-%a.log" property_tests/slurm/campaign.sbatch)
m=$(sb --array=1-2 --time=25 --output="$work/logs/mutants-%a.log" property_tests/slurm/mutants.sbatch)
echo "slurm: submitted campaign array $a (3 tasks), mutants array $m (2 tasks)"
# The merge runs after both arrays succeed; a failed task cancels it (invalid dependency).
# The test waits for everything through this one job, polling its state each second
# (sbatch --wait polls at growing intervals: it reported ~20 s after the merge ended).
mj=$(sb --time=5 --dependency="afterok:$a:$m" --kill-on-invalid-dep=yes \
  --output="$work/logs/merge.log" property_tests/slurm/merge.sbatch)
deadline=$((SECONDS + ${SLURM_TEST_WAIT:-900}))
while :; do
  state=$(timeout 10 scontrol show job -o "$mj" 2>/dev/null |
    sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case $state in
    COMPLETED) break ;;
    PENDING | CONFIGURING | RUNNING | COMPLETING | "") ;;
    *) echo "FAIL: merge job $mj ended $state (an array task failed, or the merge did)"
       timeout 10 scontrol show job "$a" "$m" 2>/dev/null | grep -E 'JobId|JobState' || true
       exit 1 ;;
  esac
  if ((SECONDS >= deadline)); then
    echo "FAIL: the arrays and the merge took over ${SLURM_TEST_WAIT:-900} s"
    timeout 10 squeue || true
    exit 1
  fi
  sleep 1
done
echo "slurm: arrays and merge done at $((SECONDS - start)) s"
# The same campaign and mutants without the scheduler: the local default (run_campaign.sh,
# GNU parallel, the same cases, shards and seed) and one unsharded mutate.py run of the same
# ids (whose builds ccache or the mutant folder mostly has by now). check_merged.py wants
# the merged summaries equal to these but for timing.
mkdir -p "$work/local"
if ! OUT_DIR=$work/local BUILD_DIR=$build bash property_tests/run_campaign.sh "$CASES" 3 "$SEED" \
    > "$work/logs/local-campaign.log" 2>&1; then
  echo "FAIL: the local campaign (run_campaign.sh $CASES 3 $SEED) failed"; exit 1
fi
# shellcheck disable=SC2086  # MUTATE_ARGS is a list of options
if ! /usr/bin/python3 property_tests/mutate.py --build "$build" $MUTATE_ARGS \
    --out "$work/local/mutation.json" > "$work/logs/local-mutants.log" 2>&1; then
  echo "FAIL: the local mutate.py run failed"; exit 1
fi
echo "slurm: the same campaign and mutants run locally at $((SECONDS - start)) s"
/usr/bin/python3 "$here/check_merged.py" --work "$work" --shards 3 --cases "$CASES" \
  --seed "$SEED" "${ids[@]}"
echo "slurm: passed in $((SECONDS - start)) s"
