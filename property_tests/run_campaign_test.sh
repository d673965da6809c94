#!/usr/bin/env bash
# ctest properties.run_campaign_keeps_other_files: run_campaign.sh on two properties, two
# shards, into a folder that already holds another tool's shard file (run_mutants.sh's
# mutants-1-of-2.json, committed in out/properties/shards). Fails unless that file is left
# as it was, the merged campaign.json has exactly the two properties, and a shard file of an
# earlier campaign is replaced. The wrong variant it catches: the script's bare
# `*-of-N.json` globs, which deleted the committed mutation shards once (rm) and would
# feed them to the merge.
set -euo pipefail
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work/shards"
echo '{"not": "a campaign shard"}' >"$work/shards/mutants-1-of-2.json"
echo '{"stale": true}' >"$work/shards/prop_merge_assoc-shard-1-of-2.json"
cd "$(dirname "$0")/.."
BUILD_DIR=$build OUT_DIR=$work PROPERTIES=prop_merge_comm,prop_one_token_exact \
  bash property_tests/run_campaign.sh 4 2 7
grep -qx '{"not": "a campaign shard"}' "$work/shards/mutants-1-of-2.json" ||
  { echo "FAIL: the mutation shard file was removed or changed"; exit 1; }
[ ! -e "$work/shards/prop_merge_assoc-shard-1-of-2.json" ] ||
  { echo "FAIL: an earlier campaign's shard file was kept"; exit 1; }
names=$(/usr/bin/python3 -c 'import json,sys; print(",".join(sorted(p["name"] for p in json.load(open(sys.argv[1]))["properties"])))' "$work/campaign.json")
[ "$names" = "prop_merge_comm,prop_one_token_exact" ] ||
  { echo "FAIL: merged properties: $names"; exit 1; }
echo "run_campaign.sh left the other shard file alone and merged its own two properties"
