#!/usr/bin/env bash
# Checks the Coq proofs of proofs/coq/: compiles every .v listed in _CoqProject, in order,
# with coqc; refuses any Admitted/admit/Axiom/Parameter/Conjecture in them; and compares
# the axioms that `Print Assumptions` reports for each main theorem (Assumptions.v) with
# assumptions.expected, exactly; and compares the statements of the main theorems and of
# every definition of proofs/coq/ they are stated with (Statements.v) with
# statements.expected, exactly, after checking that Statements.v prints every such
# definition its output names. Usage: check.sh [WORKDIR] (the .vo files go there, not into
# the source tree). Exit 0: all checked; 77: coqc absent (skipped); else: failure.
set -euo pipefail
export LC_ALL=C # one collation for sort and comm
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
for f in "${files[@]}" Assumptions.v Statements.v; do cp "$src/$f" "$work/"; done
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
coqc -q -Q . PagedAttn Statements.v > statements.actual
# The closure: every definition of proofs/coq/ that a printed text names is printed too, so a
# statement cannot change through a definition the pin does not show.
grep -ohE "^[[:space:]]*(Definition|Fixpoint|Record|Inductive)[[:space:]]+[A-Za-z0-9_']+" \
  "${files[@]/#/$src/}" | awk '{print $2}' | sort -u > defined.txt
sed -nE "s/^(Check|Print) ([A-Za-z0-9_']+)\.$/\2/p" Statements.v | sort -u > shown.txt
grep -oE "[A-Za-z_][A-Za-z0-9_']*" statements.actual | sort -u | comm -12 - defined.txt |
  comm -23 - shown.txt > unshown.txt
if [ -s unshown.txt ]; then
  echo "proofs/coq: FAIL: the statements name definitions that Statements.v does not print:"
  cat unshown.txt
  exit 1
fi
if ! diff -u "$src/statements.expected" statements.actual; then
  echo "proofs/coq: FAIL: a statement differs from statements.expected (a theorem, the kernel model, a hypothesis or the bound changed; if on purpose, review the diff and update statements.expected)"
  exit 1
fi
echo "proofs/coq: ${#files[@]} files checked, no Admitted, assumptions as expected ($(cut -d' ' -f1 assumptions.actual | sort -u | wc -l) theorems), statements as expected ($(grep -c '^Check ' Statements.v) theorems, $(grep -c '^Print ' Statements.v) definitions), in $((SECONDS - start)) s"
