"""The table's functions over the reals (proofs/bound/README.md, "The table's format"), for
the checkers check_table.py and check_coq.py."""
import mpmath

FUNCS = {
    "grow": lambda u, k: (1 + u) ** int(k) - 1,
    "comb": lambda a, b: a + b + a * b,
    "exp": mpmath.exp,
    "abs": abs,
    "le": lambda a, b: mpmath.mpf(1) if a <= b else mpmath.mpf(0),
    "min": min,
    "max": max,
    "sel": lambda f, a, b: a if f != 0 else b,
    "step": lambda x: mpmath.mpf(1) if x > 0 else mpmath.mpf(0),
    "ceil_div": lambda a, b: mpmath.ceil(mpmath.mpf(a) / b) if b != 0 else mpmath.inf,
    "ceil_log2": lambda x: mpmath.mpf(next(k for k in range(2000) if 2 ** k >= x)),
}
