#!/bin/sh
# `pagedattn report` usage errors: each names the argument and the allowed values, exits 2
# and writes nothing. Catches a usage error that runs anyway or creates the output folder.
pagedattn=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect PATTERN ARGS...: exit 2, PATTERN on stderr, nothing under $tmp/out
  pattern=$1
  shift
  "$pagedattn" report --out "$tmp/out" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ $rc -ne 2 ]; then echo "report $*: exit $rc, want 2"; fail=1; fi
  if ! grep -q -- "$pattern" "$tmp/stderr"; then
    echo "report $*: stderr lacks '$pattern':"; cat "$tmp/stderr"; fail=1
  fi
  if [ -e "$tmp/out" ]; then echo "report $*: wrote $tmp/out"; fail=1; fi
}
expect "--quick excludes --full" --quick --full
expect "known: a100, bi-v100, h200" --profile nope
expect "1..256" --threads 0
expect "unknown flag" --bogus
expect "unexpected argument .extra. (allowed: {--help, --out" extra
"$pagedattn" report --help | grep -q -- "--quick" || { echo "report --help"; fail=1; }
exit $fail
