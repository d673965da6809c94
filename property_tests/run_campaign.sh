#!/usr/bin/env bash
# A property campaign on this machine: for each property, N shards in parallel (GNU
# parallel), then every shard summary merged into out/properties/campaign.json. One
# property at a time, so an interrupted campaign keeps the properties it finished. Usage:
#   property_tests/run_campaign.sh [CASES_PER_PROPERTY] [SHARDS] [SEED]
# BUILD_DIR (default build) must hold pagedattn_prop_campaign. OUT_DIR (default
# out/properties) receives campaign.json, its shard summaries shards/. PROPERTIES
# (comma-separated names) runs only those; default: every property. Exit status:
# non-zero if any shard found a failure. Each summary records the commit and source digest
# it judged; the merge refuses shards of other sources.
set -euo pipefail
cases=${1:-10000}
shards=${2:-2}
seed=${3:-1}
build=${BUILD_DIR:-build}
bin=$build/property_tests/pagedattn_prop_campaign
out=${OUT_DIR:-out/properties}
mkdir -p "$out/shards"
# Only this script's own shard files: the folder may hold others (run_mutants.sh writes its
# mutants-K-of-N.json there, committed), which a bare *-of-N.json once deleted.
rm -f "$out"/shards/prop_*-shard-*-of-"$shards".json
status=0
props=${PROPERTIES:-$("$bin" --list)}
for prop in ${props//,/ }; do
  seq 1 "$shards" | parallel --line-buffer -j "$shards" \
    "$bin" --cases "$cases" --seed "$seed" --shard {}/"$shards" --properties "$prop" \
    --out "$out/shards/$prop-shard-{}-of-$shards.json" || status=$?
  "$bin" --merge "$out"/shards/prop_*-shard-*-of-"$shards".json --out "$out/campaign.json"
done
echo "merged into $out/campaign.json"
exit $status
