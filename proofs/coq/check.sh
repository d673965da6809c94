#!/usr/bin/env bash
# Checks the Coq proofs of proofs/coq/: compiles every .v listed in _CoqProject, in order,
# with coqc; refuses any Admitted/admit/Axiom/Parameter/Conjecture in them; and compares
# the axioms that `Print Assumptions` reports for each main theorem (Assumptions.v) with
# assumptions.expected, exactly. Usage: check.sh [WORKDIR] (the .vo files go there, not
# into the source tree). Exit 0: all checked; 77: coqc absent (skipped); else: failure.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
if ! command -v coqc >/dev/null 2>&1; then
  echo "proofs/coq: coqc not found, the Coq proofs were NOT checked (scripts/install_deps.sh installs coq)"
  exit 77
fi
start=$SECONDS
mkdir -p "$work"
mapfile -t files < <(grep -E '^[A-Za-z0-9_]+\.v$' "$src/_CoqProject")
if grep -nwE 'Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture' \
     "${files[@]/#/$src/}"; then
  echo "proofs/coq: FAIL: the lines above admit or postulate something"
  exit 1
fi
for f in "${files[@]}" Assumptions.v; do cp "$src/$f" "$work/"; done
cd "$work"
for f in "${files[@]}"; do
  echo "proofs/coq: coqc $f"
  coqc -q -Q . PagedAttn "$f"
done
coqc -q -Q . PagedAttn Assumptions.v > assumptions.log
# Each block is "THEOREM name" then "Axioms:" and one unindented line per axiom (its
# type, when long, continues on indented lines); "Closed under the global context"
# (no axiom) yields no line.
awk '/^THEOREM /{cur=$2; next} /^Axioms:/{next}
     /^[A-Za-z][A-Za-z0-9_.'"'"']*( :|$)/{print cur, $1}' assumptions.log | sort > assumptions.actual
if ! diff -u "$src/assumptions.expected" assumptions.actual; then
  echo "proofs/coq: FAIL: Print Assumptions differs from assumptions.expected (full output in $work/assumptions.log)"
  exit 1
fi
echo "proofs/coq: ${#files[@]} files checked, no Admitted, assumptions as expected ($(cut -d' ' -f1 assumptions.actual | sort -u | wc -l) theorems), in $((SECONDS - start)) s"
