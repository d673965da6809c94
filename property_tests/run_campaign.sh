#!/usr/bin/env bash
# A property campaign on this machine: N shards in parallel (GNU parallel), merged into
# out/properties/campaign.json. Usage:
#   property_tests/run_campaign.sh [CASES_PER_PROPERTY] [SHARDS] [SEED]
# BUILD_DIR (default build) must hold pagedattn_prop_campaign. Shard summaries go to
# out/properties/shards/. Exit status: non-zero if any shard found a failure.
set -euo pipefail
cases=${1:-10000}
shards=${2:-2}
seed=${3:-1}
build=${BUILD_DIR:-build}
bin=$build/property_tests/pagedattn_prop_campaign
out=out/properties
mkdir -p "$out/shards"
rm -f "$out"/shards/shard-*-of-"$shards".json
status=0
seq 1 "$shards" | parallel --line-buffer -j "$shards" \
  "$bin" --cases "$cases" --seed "$seed" --shard {}/"$shards" \
  --out "$out/shards/shard-{}-of-$shards.json" || status=$?
"$bin" --merge "$out"/shards/shard-*-of-"$shards".json --out "$out/campaign.json"
echo "merged $shards shards into $out/campaign.json"
exit $status
