#!/usr/bin/env bash
# Issue 7, item 3b in CI: a fixed sample of source mutants (property_tests/mutate.py,
# every (total/4)-th mutant, 15 cases per property, the CI seed, memcheck and synccheck)
# against the property suite, and the known-wrong reductions' verdicts, into
# out/properties/mutation.json. Fails if a known-wrong reduction survives or the
# unmutated build fails the suite; surviving source mutants are reported (printed and in
# the JSON), not fatal: the score is a measurement. About 4 minutes on 2 cores.
# The whole catalogue: /usr/bin/python3 property_tests/mutate.py --build build.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
mkdir -p out/properties
PAGEDATTN_PROP_OUT=out/properties "$build/property_tests/pagedattn_property_tests" \
  --gtest_filter='MutationScore.*' --gtest_brief=1
/usr/bin/python3 property_tests/mutate.py --build "$build" --sample 4 --cases 15 \
  --known-wrong out/properties/known_wrong.json --out out/properties/mutation.json
