#!/usr/bin/env python3
"""Reads bound_table's JSON (stdin) and checks the table's format independently of the C++:
every expression parses as Python, names only entries above it and the table's functions,
and the example's intervals hold every entry's value recomputed here with mpmath at 200
digits. Fails (exit 1) naming the entry. Wrong variants caught (run once): an entry
moved above one it uses ("names ... not defined above"); bound.cpp evaluating comb as
a + b ("value outside its interval" at g_dot)."""
import ast
import json
import sys

import mpmath

mpmath.mp.dps = 200
from table_functions import FUNCS  # noqa: E402 (beside this file)


def main():
    table = json.load(sys.stdin)
    if table.get("format") != "pagedattn-bound-table/2":
        sys.exit("check_table: unknown format %r" % table.get("format"))
    if set(table["functions"]) != set(FUNCS):
        sys.exit("check_table: functions %s, expected %s" % (sorted(table["functions"]), sorted(FUNCS)))
    for example in table["examples"]:
        check(table["entries"], example["values"])
    print("check_table: %d entries, every value of %d examples inside its interval"
          % (len(table["entries"]), len(table["examples"])))


def check(entries, example):
    env, seen = {}, set()
    for e in entries:
        name = e["name"]
        if name in seen:
            sys.exit("check_table: %s defined twice" % name)
        if e["kind"] != "input":
            tree = ast.parse(e["expr"], mode="eval")
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            undefined = used - seen - set(FUNCS)
            if undefined:
                sys.exit("check_table: %s names %s, not defined above" % (name, sorted(undefined)))
        if e["kind"] == "hypothesis":
            # "lhs < rhs" or "lhs <= rhs" is a Python comparison as it stands.
            if not eval(compile(tree, name, "eval"), dict(FUNCS), env):
                sys.exit("check_table: hypothesis %s fails on the example" % name)
            seen.add(name)
            continue
        lo, hi = (mpmath.mpf(x) for x in example[name])
        if e["kind"] == "input":
            value = lo
        else:
            value = eval(compile(tree, name, "eval"), dict(FUNCS), env)
        if not lo <= value <= hi:
            sys.exit("check_table: %s = %s, value outside its interval [%s, %s]"
                     % (name, mpmath.nstr(value, 20), lo, hi))
        env[name] = value
        seen.add(name)


main()
