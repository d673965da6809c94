#!/usr/bin/env python3
"""The C++ table is the Coq theorem's bound: reads bound_table's JSON (stdin) and the Coq
sources (argv[1], proofs/coq), evaluates Bound.v's definitions (b_*, bound_ok, logit_pre and
every helper of Fp.v ... PartK.v they unfold) by interpreting their Gallina text, and
coefficients.def's expressions, both in mpmath at 80 digits, and compares them:

  1. the constants: every constant input of the table (u, eta, eta_e, eta64, flt_max,
     eps32, us, etas) in each example of the JSON, as the C++ sets it (bound.cpp's
     row_inputs), equals Coq's value for that example's scalar format, exactly;
  2. the formula: on 1,000 random configurations (geometry, numerics, V1/V2, exp accuracy,
     scales, magnitudes over wide ranges), every b_NAME of Bound.v equals the table's NAME
     (the records b_pc* field by field), and bound_ok /\\ logit_pre holds exactly when every
     hypothesis of the table does;
  3. coverage: every definition of Bound.v is compared, and every coefficient of the table is
     either compared or an intermediate that a compared one uses (directly or not).

Fails (exit 1) naming the entry and the configuration. The tolerance is relative 1e-40:
both sides are exact real formulas evaluated at 80 digits, written differently in places
((1 + a)(1 + b) - 1 as comb(a, b), thv without its cancellation); the cancellations of
(1 + u)^k - 1 and thv's "- 1" lose at most 16 digits each (u = 2^-24 > 1e-8), nested at
most twice, so both sides agree to far better than 1e-40 when the formulas are equal, and a
changed constant moves a value by far more (the smallest, a changed u in one entry, by
about 1e-8 relative).

Wrong variants caught (each run once): alpha = 3 u a instead of 2 u a in coefficients.def
("b_alpha ... differs"); m0_2's "+ u" as "+ 2 u" in Weights.v ("b_m0 ... differs");
eps32 = 8796094 2^-43 in Model.v ("constant eps32 ... differs")."""
import json
import os
import random
import re
import sys

import mpmath

mpmath.mp.dps = 80
REL_TOL = mpmath.mpf("1e-40")

from table_functions import FUNCS  # noqa: E402 (beside this file)

COQ_FILES = ["Fp.v", "Sums.v", "Model.v", "Logit.v", "Weights.v", "Part.v", "PartK.v", "Bound.v"]


def fail(msg):
    sys.exit("check_coq: " + msg)


# ---------------------------------------------------------------- Gallina, the subset
class Nat(int):
    """A value of type nat: - truncates at 0, / rounds down."""


def strip_comments(s):
    out, depth, i = [], 0, 0
    while i < len(s):
        if s.startswith("(*", i):
            depth += 1
            i += 2
        elif s.startswith("*)", i) and depth:
            depth -= 1
            i += 2
        else:
            if not depth:
                out.append(s[i])
            i += 1
    return "".join(out)


TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9']*(?:\.[A-Za-z_][A-Za-z_0-9']*)*)|"
                   r"(:=|=>|->|<>|<=|>=|/\\|\\/|%|[-+*/^()<>=,:|]))")


def tokenize(s):
    toks, i = [], 0
    s = s.rstrip()
    while i < len(s):
        m = TOKEN.match(s, i)
        if not m or m.end() == i:
            if s[i:].strip() == "":
                break
            fail("cannot read Coq text near %r" % s[i:i + 30])
        i = m.end()
        if m.group(1):
            toks.append(("num", int(m.group(1))))
        elif m.group(2):
            toks.append(("id", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    return toks


KEYWORDS = {"if", "then", "else", "let", "in", "match", "with", "end", "fun"}


class Parser:
    """Terms as tuples: ('num', n), ('var', name), ('app', f, [args]), ('bin', op, a, b),
    ('neg', a), ('if', c, a, b), ('let', name, e, body), ('match', e, [(ctor, body)]),
    ('scope', name, a)."""

    def __init__(self, toks):
        self.t, self.i = toks, 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", None)

    def take(self, want=None):
        tok = self.peek()
        if want is not None and tok[1] != want:
            fail("expected %r, got %r in %s" % (want, tok, self.t))
        self.i += 1
        return tok

    def term(self):
        tok = self.peek()
        if tok == ("id", "if"):
            self.take()
            c = self.term()
            self.take("then")
            a = self.term()
            self.take("else")
            return ("if", c, a, self.term())
        if tok == ("id", "let"):
            self.take()
            name = self.take()[1]
            self.take(":=")
            e = self.term()
            self.take("in")
            return ("let", name, e, self.term())
        return self.binary(0)

    # (precedence, right associative) as Coq's notations
    OPS = {"->": (1, True), "\\/": (2, True), "/\\": (3, True), "=": (4, False), "<>": (4, False),
           "<": (4, False), "<=": (4, False), ">": (4, False), ">=": (4, False),
           "+": (5, False), "-": (5, False), "*": (6, False), "/": (6, False), "^": (8, True)}

    def binary(self, min_prec):
        left = self.unary()
        while True:
            tok = self.peek()
            if tok[0] != "op" or tok[1] not in self.OPS:
                return left
            prec, right = self.OPS[tok[1]]
            if prec < min_prec:
                return left
            self.take()
            if tok[1] in ("if", "let"):
                rhs = self.term()
            elif self.peek() in (("id", "if"), ("id", "let")):
                rhs = self.term()
            else:
                rhs = self.binary(prec if right else prec + 1)
            if prec == 4 and left[0] == "bin" and left[1] in ("<", "<=") and tok[1] in ("<", "<="):
                # x <= y <= z is x <= y /\ y <= z
                left = ("bin", "/\\", left, ("bin", tok[1], left[3], rhs))
            else:
                left = ("bin", tok[1], left, rhs)

    def unary(self):
        if self.peek() == ("op", "-"):
            self.take()
            return ("neg", self.binary(7))
        return self.application()

    def application(self):
        head = self.atom()
        args = []
        while self.starts_atom():
            args.append(self.atom())
        return ("app", head, args) if args else head

    def starts_atom(self):
        tok = self.peek()
        return tok[0] == "num" or (tok[0] == "id" and tok[1] not in KEYWORDS) or tok == ("op", "(")

    def atom(self):
        tok = self.take()
        if tok[0] == "num":
            a = ("num", tok[1])
        elif tok[0] == "id" and tok[1] == "match":
            e = self.term()
            self.take("with")
            arms = []
            if self.peek() == ("op", "|"):
                self.take()
            while True:
                ctor = self.take()[1]
                self.take("=>")
                arms.append((ctor, self.term()))
                if self.peek() == ("op", "|"):
                    self.take()
                    continue
                self.take("end")
                break
            a = ("match", e, arms)
        elif tok[0] == "id":
            a = ("var", tok[1])
        elif tok == ("op", "("):
            a = self.term()
            self.take(")")
        else:
            fail("unexpected %r" % (tok,))
        while self.peek() == ("op", "%"):
            self.take()
            a = ("scope", self.take()[1], a)
        return a


def free_names(t, acc):
    kind = t[0]
    if kind == "var":
        acc.add(t[1])
    elif kind == "app":
        free_names(t[1], acc)
        for x in t[2]:
            free_names(x, acc)
    elif kind == "bin":
        free_names(t[2], acc)
        free_names(t[3], acc)
    elif kind in ("neg",):
        free_names(t[1], acc)
    elif kind == "scope":
        free_names(t[2], acc)
    elif kind == "if":
        for x in t[1:]:
            free_names(x, acc)
    elif kind == "let":
        free_names(t[2], acc)
        inner = set()
        free_names(t[3], inner)
        acc |= inner - {t[1]}
    elif kind == "match":
        free_names(t[1], acc)
        for _, b in t[2]:
            free_names(b, acc)
    return acc


def parse_definition(s):
    """'Definition name (binders) : type := body' as (name, binders text, body text)."""
    m = re.match(r"Definition\s+([\w']+)", s)
    if not m:
        return None
    i, depth, start = m.end(), 0, m.end()
    while i < len(s):
        ch = s[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and (ch == ":" or ch == ";"):
            break
        elif depth == 0 and not ch.isspace():
            return None
        i += 1
    binders = s[start:i]
    j = i
    depth = 0
    while j < len(s) - 1:
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
        elif depth == 0 and s[j:j + 2] == ":=":
            return m.group(1), binders, s[j + 2:]
        j += 1
    return None


def binder_names(text):
    """Names of '(a b : T) (c : U)' binders, in order."""
    names, depth, group = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
            if depth == 1:
                group = ""
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                names += group.split(":")[0].split()
                continue
        if depth >= 1:
            group += ch
    return names


class Coq:
    """The definitions and records of the Coq files, closed over their sections' variables
    as Coq closes them (each definition over the variables it uses, directly or through
    definitions of the same section)."""

    def __init__(self, directory):
        self.defs = {}  # name -> (params, body text, file, section variables or None)
        self.records = {}  # constructor -> field names; field -> (record, index)
        self.fields = {}
        self.ctors = set()
        self.section_vars = {}  # Bound.v's section B: the variables c r el
        for f in COQ_FILES:
            self.read(os.path.join(directory, f), f[:-2])
        self.parsed = {}

    def read(self, path, module):
        text = strip_comments(open(path).read())
        sentences = re.split(r"\.(?=\s|$)", text)
        section, svars = None, []
        for s in sentences:
            s = s.strip()
            if not s:
                continue
            m = re.match(r"Section\s+(\w+)$", s)
            if m:
                section, svars = m.group(1), []
                continue
            if re.match(r"End\s+\w+$", s):
                section, svars = None, []
                continue
            m = re.match(r"Variables?\s+(.*)$", s, re.S)
            if m and section:
                body = m.group(1)
                svars += binder_names(body) if body.lstrip().startswith("(") else body.split(":")[0].split()
                continue
            m = re.match(r"Inductive\s+(\w+)\s*:=\s*(.*)$", s, re.S)
            if m and "->" not in m.group(2) and "(" not in m.group(2):
                self.ctors |= {c.strip() for c in m.group(2).split("|") if c.strip()}
                continue
            m = re.match(r"Record\s+(\w+)\s*:=\s*(\w+)\s*\{(.*)\}$", s, re.S)
            if m:
                fields = [f.split(":")[0].strip() for f in m.group(3).split(";") if f.strip()]
                self.records[m.group(2)] = fields
                for k, fl in enumerate(fields):
                    self.fields[fl] = k
                continue
            d = parse_definition(s)
            if d is None:
                continue
            name, binders, body = d
            key = module + "." + name
            self.defs[key] = (binder_names(binders), body, module, list(svars) if section else None)
            if name not in self.defs or self.defs[name][2] == module:
                self.defs[name] = self.defs[key]
            else:
                self.defs[name] = "ambiguous"
            if module == "Bound" and section:
                self.section_vars[name] = list(svars)

    def term(self, name):
        if name not in self.parsed:
            d = self.defs[name]
            self.parsed[name] = Parser(tokenize(d[1])).term()
        return self.parsed[name]

    def closure_vars(self, name, seen=None):
        """The section variables `name` is abstracted over when its section closes."""
        d = self.defs[name]
        if d[3] is None:
            return []
        seen = seen or set()
        if name in seen:
            return []
        seen.add(name)
        used = free_names(self.term(name), set()) - set(d[0])
        out = set(v for v in d[3] if v in used)
        for n in used:
            if n in self.defs and self.defs[n] != "ambiguous" and self.defs[n][2] == d[2] \
                    and self.defs[n][3] == d[3] and n not in d[3]:
                out |= set(self.closure_vars(n, seen))
        return [v for v in d[3] if v in out]


def div(a, b):
    """Real division; x / 0 (an unspecified real in Coq, inf or NaN in the C++) is NaN
    here on both sides, and two NaNs agree."""
    return a / b if b != 0 else mpmath.nan


class Real(mpmath.mpf):
    """The table's numbers: x / 0 is NaN (check_table.py's table has none at its examples)."""

    def __new__(cls, x):
        return mpmath.mpf.__new__(cls, x)

    def __truediv__(self, other):
        return div(mpmath.mpf(self), other)

    def __rtruediv__(self, other):
        return div(other, mpmath.mpf(self))


def to_real(x):
    if isinstance(x, bool):
        fail("a bool used as a number")
    return mpmath.mpf(int(x)) if isinstance(x, int) else x


class Record(tuple):
    pass


class Eval:
    """Evaluates Coq terms: R as mpmath numbers, nat as Nat, Z as int, bool, records as
    tuples, sfmt's constructors as strings."""

    def __init__(self, coq, section_env):
        self.coq = coq
        self.section_env = section_env  # Bound.v's c, r, el
        self.cache = {}

    def builtin(self, name):
        b = {
            "Rabs": lambda x: abs(to_real(x)),
            "Rmin": lambda a, b: min(to_real(a), to_real(b)),
            "Rmax": lambda a, b: max(to_real(a), to_real(b)),
            "exp": lambda x: mpmath.exp(to_real(x)),
            "INR": lambda n: mpmath.mpf(int(n)),
            "IZR": lambda z: mpmath.mpf(int(z)),
            "bpow": lambda radix, e: mpmath.mpf(2) ** int(e),
            "radix2": 2,
            "u_ro": lambda radix, p: mpmath.mpf(2) ** (1 - int(p)) / 2,
            "Rle_dec": lambda a, b: to_real(a) <= to_real(b),
            "Rlt_dec": lambda a, b: to_real(a) < to_real(b),
            "Req_EM_T": lambda a, b: to_real(a) == to_real(b),
            "andb": lambda a, b: a and b,
            "orb": lambda a, b: a or b,
            "negb": lambda a: not a,
            "true": True,
            "false": False,
            "Nat.max": lambda a, b: Nat(max(a, b)),
            "FLT_exp": None,
        }
        return b.get(name, KeyError)

    def lookup(self, name, env):
        if name in env:
            return env[name]
        if name in self.coq.ctors:
            return name
        if name in self.coq.records:
            n = len(self.coq.records[name])
            return curry(n, lambda *a: Record(a))
        if name in self.coq.fields:
            k = self.coq.fields[name]
            return lambda rec: rec[k]
        b = self.builtin(name)
        if b is not KeyError:
            return curry(b.__code__.co_argcount, b) if callable(b) else b
        if name in self.coq.defs:
            if self.coq.defs[name] == "ambiguous":
                fail("%s is defined in two Coq files: qualify it" % name)
            return self.definition(name)
        fail("unknown Coq name %s" % name)

    def definition(self, name):
        params, _, _, svars = self.coq.defs[name]
        cvars = self.coq.closure_vars(name)
        if name in self.coq.section_vars:  # Bound.v's section: evaluated inside it
            cvars = []
            env0 = dict(self.section_env)
        else:
            env0 = {}
        allp = cvars + params
        if not allp:
            if name not in self.cache:
                self.cache[name] = self.eval(self.coq.term(name), env0)
            return self.cache[name]

        def f(*args):
            env = dict(env0)
            env.update(zip(allp, args))
            return self.eval(self.coq.term(name), env)
        return curry(len(allp), f)

    def eval(self, t, env, scope=None):
        kind = t[0]
        if kind == "num":
            return Nat(t[1]) if scope == "nat" else t[1]
        if kind == "var":
            return self.lookup(t[1], env)
        if kind == "scope":
            return self.eval(t[2], env, {"nat": "nat", "Z": "Z", "R": None}[t[1]])
        if kind == "app":
            f = self.eval(t[1], env, scope)
            for a in t[2]:
                f = f(self.eval(a, env, scope))
            return f
        if kind == "neg":
            x = self.eval(t[1], env, scope)
            return -x
        if kind == "if":
            c = self.eval(t[1], env, scope)
            if not isinstance(c, bool):
                fail("if on a non-bool")
            return self.eval(t[2] if c else t[3], env, scope)
        if kind == "let":
            env = dict(env)
            env[t[1]] = self.eval(t[2], env, scope)
            return self.eval(t[3], env, scope)
        if kind == "match":
            v = self.eval(t[1], env, scope)
            for ctor, body in t[2]:
                if ctor == v or ctor == "_":
                    return self.eval(body, env, scope)
            fail("no match arm for %r" % v)
        if kind == "bin":
            op = t[1]
            if op == "/\\":
                return self.eval(t[2], env, scope) and self.eval(t[3], env, scope)
            if op == "\\/":
                return self.eval(t[2], env, scope) or self.eval(t[3], env, scope)
            if op == "->":
                return (not self.eval(t[2], env, scope)) or self.eval(t[3], env, scope)
            a, b = self.eval(t[2], env, scope), self.eval(t[3], env, scope)
            if op == "=":
                return a == b
            if op == "<>":
                return a != b
            if op in ("<", "<=", ">", ">="):
                a, b = (x if isinstance(x, int) else to_real(x) for x in (a, b))
                return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
            if op == "^":
                return Nat(a ** b) if isinstance(a, Nat) or scope == "nat" else to_real(a) ** int(b)
            nat = (isinstance(a, Nat) or isinstance(b, Nat) or scope == "nat") and \
                isinstance(a, int) and isinstance(b, int)
            if scope == "Z" and isinstance(a, int) and isinstance(b, int) and op != "/":
                return a + b if op == "+" else a - b if op == "-" else a * b
            if nat:  # Coq's nat: truncated subtraction, floor division, x / 0 = 0
                if op == "-":
                    return Nat(max(0, a - b))
                if op == "/":
                    return Nat(a // b if b else 0)
                return Nat(a + b if op == "+" else a * b)
            a, b = to_real(a), to_real(b)
            if op == "/":
                return div(a, b)
            return a + b if op == "+" else a - b if op == "-" else a * b
        fail("cannot evaluate %r" % (t,))


def curry(n, f, got=()):
    if n == 0:
        return f(*got)
    return lambda x: curry(n - 1, f, got + (x,))


# ---------------------------------------------------------------- the table
def table_eval(entries, inputs):
    env, hyps = {k: Real(v) for k, v in inputs.items()}, {}
    for e in entries:
        if e["kind"] == "input":
            continue
        value = eval(e["expr"], dict(FUNCS), env)
        if isinstance(value, mpmath.mpf) and not isinstance(value, Real):
            value = Real(value)
        if e["kind"] == "hypothesis":
            hyps[e["name"]] = bool(value)
        else:
            env[e["name"]] = value
    return env, hyps


# ---------------------------------------------------------------- one configuration
FORMATS = {"f32": "F32", "f16": "F16", "bf16": "BF16"}


def log2(x):
    k = x.bit_length() - 1
    assert 2 ** k == x
    return k


def random_config(rnd):
    """A launch and magnitudes in the C++ terms, and the same as Coq's records."""
    W = rnd.choice([32, 64])
    B = rnd.choice([8, 16, 32])
    B = min(B, W)
    NW = rnd.choice([1, 2, 4])
    G = W // B
    D = G * rnd.choice([8, 10, 14, 16, 32])
    vt = min(B, 8)
    fmt = rnd.choice(list(FORMATS))
    fp8, vl = rnd.random() < 0.5, rnd.random() < 0.5
    ps = rnd.choice([0, 0, 256, 512])
    n = rnd.choice([1, 2, 17, 300, 1000, 4096, 100000, 1 << 21])
    P = -(-n // ps) if ps else 1
    L = min(n, ps) if ps else n
    ln = lambda lo, hi: mpmath.mpf(10) ** rnd.uniform(lo, hi)
    sc = mpmath.mpf(rnd.choice([0.088, 0.125, -0.5, 1.0, 3e-20]))
    ks = mpmath.mpf(rnd.choice([0.25, 1.5, 1e-30])) if fp8 else mpmath.mpf(1)
    vs = mpmath.mpf(rnd.choice([0.5, 2.0, 0.0, 1e30])) if fp8 else mpmath.mpf(1)
    spread = ln(-6, 3)
    X = spread + ln(-6, 3)
    Qm = ln(-6, 40 if rnd.random() < 0.1 else 3)
    V = ln(-40, 38.5) if rnd.random() < 0.2 else ln(-6, 5)
    el_A = ln(-6, 1) * V
    cpp = {"a_exp": mpmath.mpf(rnd.choice([0.5, 2, 4.001])), "b_exp": mpmath.mpf(rnd.choice([0, 1.173])),
           "sc": sc, "ks": ks, "vs": vs, "D": D, "B": B, "W": W, "T": NW * W,
           "fp8": int(fp8), "vl": int(vl), "n": n, "P": P, "L": L,
           "spread": spread, "X": X, "Qm": Qm, "V": V, "Sq": ln(-3, 3),
           "pgap": spread * rnd.random(), "pqk": Qm * rnd.random(), "px": X * rnd.random(),
           "Y": el_A * rnd.random(), "A": el_A, "dev": 2 * el_A * rnd.random(),
           "dgap": 2 * el_A * spread * rnd.random(), "dqk": 2 * el_A * Qm * rnd.random(),
           "dx": 2 * el_A * X * rnd.random()}
    geom = Record((Nat(log2(G)), Nat(1), Nat(D // G), Nat(log2(W)), Nat(NW), Nat(log2(B // vt)),
                   Nat(vt)))
    nm = Record((FORMATS[fmt], fp8, vl))
    c = Record((geom, nm, P >= 2, cpp["a_exp"], cpp["b_exp"], sc, ks, vs))
    r = Record((Nat(n), Nat(P), Nat(L), spread, X, Qm, V, cpp["Sq"], cpp["pgap"], cpp["pqk"],
                cpp["px"]))
    el = Record((cpp["Y"], cpp["A"], cpp["dev"], cpp["dgap"], cpp["dqk"], cpp["dx"]))
    return fmt, cpp, (c, r, el)


CONSTANTS = {"u": "u", "eta": "eta", "eta_e": "eta_e", "eta64": "eta64", "flt_max": "flt_max",
             "eps32": "eps32"}
# Bound.v's records, field by field: b_NAME -> table names of (aN, bN, eN, th, ze)
RECORDS = {"b_pcF": ["f_aN", "f_bN", "f_eN", "f_th", "f_ze"],
           "b_pcR0": ["r0_aN", "r0_bN", "r0_eN", "r0_th", "r0_ze"],
           "b_pcR": ["r0_aN", "r0_bN", "r0_eN", "r_th", "r0_ze"],
           "b_pcU": ["pu_aN", "pu_bN", "pu_eN", "pu_th", "pu_ze"],
           "b_pcP": ["pu_aN", "pu_bN", "pu_eN", "pp_th", "pp_ze"]}
RENAMED = {"b_Y": "Yb", "b_pre": "pre"}
# Helpers of the other files the table names too (their value at Bound.v's arguments).
HELPERS = {"hdot": "hdot (k_g c)", "hs": "hs (k_g c) (r_L r)", "ho": "ho (k_g c) (r_L r)",
           "lg_c": "lg_c (k_nm c) (k_sc c) (k_ks c)", "lg_uq": "lg_uq (k_nm c) (k_sc c) (k_ks c)",
           "lg_rk": "lg_rk (k_nm c)", "lg_ek": "lg_ek (k_nm c)",
           "etaq0": "eta_q0 (k_g c) (k_nm c) (k_sc c) (k_ks c) (r_Sq r)",
           "thv_s": "thv b_smin", "thv_t": "thv b_totmin", "Zlam": "Zlam eta_e b_smin",
           "rw_fast": "rw_fast (k_nm c)", "zw_fast": "zw_fast (k_nm c)",
           "rw_rare": "rw_rare (k_nm c)", "zw_rare": "zw_rare (k_nm c) (k_vs c)",
           "sgm": "sgm (k_nm c) (k_vs c)", "rp": "rp (n_s (k_nm c))", "zp": "zp (n_s (k_nm c))",
           "ob": "b_ob", "smx": "smax (r_L r) b_gs b_emax", "NW": "INR (g_nw (k_g c))",
           "G": "INR (2 ^ g_lg (k_g c))%nat", "V_T": "INR (g_vt (k_g c))",
           "R": "INR (2 ^ g_lr (k_g c))%nat", "v2": "if k_v2 c then 1 else 0"}


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    a, b = to_real(a), to_real(b)
    if mpmath.isnan(a) or mpmath.isnan(b):
        return mpmath.isnan(a) and mpmath.isnan(b)
    if mpmath.isinf(a) or mpmath.isinf(b):
        return a == b
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) or a == b


def main():
    table = json.load(sys.stdin)
    coq = Coq(sys.argv[1])
    entries = table["entries"]
    names = [e["name"] for e in entries]
    bound_defs = [n for n, v in coq.section_vars.items()]
    compared = set()

    # 1. the constants the C++ puts in the table, per example
    for ex in table["examples"]:
        fmt = ex.get("scalar")
        if fmt not in FORMATS:
            fail("example %r names no scalar format" % ex["config"])
        ev = Eval(coq, {})
        want = {k: ev.eval(Parser(tokenize(v)).term(), {}) for k, v in CONSTANTS.items()}
        want["us"] = ev.eval(Parser(tokenize("us " + FORMATS[fmt])).term(), {})
        want["etas"] = ev.eval(Parser(tokenize("etas " + FORMATS[fmt])).term(), {})
        for k, w in want.items():
            lo, hi = (mpmath.mpf(x) for x in ex["values"][k])
            if not (lo == hi == to_real(w)):
                fail("constant %s of example %r: C++ [%s, %s], Coq %s differs"
                     % (k, ex["config"], lo, hi, mpmath.nstr(to_real(w), 25)))
        compared |= set(want)

    # 2. the formula on random configurations
    rnd = random.Random(20261201)
    count = int(os.environ.get("CHECK_COQ_CASES", "1000"))
    checked_hyp = 0
    for case in range(count):
        fmt, cpp, (c, r, el) = random_config(rnd)
        ev = Eval(coq, {"c": c, "r": r, "el": el})
        consts = {k: to_real(ev.eval(Parser(tokenize(v)).term(), {})) for k, v in CONSTANTS.items()}
        consts["us"] = to_real(ev.eval(Parser(tokenize("us " + FORMATS[fmt])).term(), {}))
        consts["etas"] = to_real(ev.eval(Parser(tokenize("etas " + FORMATS[fmt])).term(), {}))
        inputs = dict(consts)
        inputs.update({k: (mpmath.mpf(v) if not isinstance(v, mpmath.mpf) else v) for k, v in cpp.items()})
        try:
            tv, hyps = table_eval(entries, inputs)
        except ZeroDivisionError:
            tv, hyps = None, None
        where = "case %d (%s, %s)" % (case, fmt, {k: mpmath.nstr(v, 6) for k, v in cpp.items()})

        def coq_value(text):
            try:
                return ev.eval(Parser(tokenize(text)).term(), {"c": c, "r": r, "el": el})
            except ZeroDivisionError:
                return None

        ok = coq_value("bound_ok")
        pre = coq_value("logit_pre")
        if tv is None:
            if ok:
                fail("the table divides by zero where bound_ok holds, %s" % where)
            continue
        for d in bound_defs:
            if d in ("bound_ok", "logit_pre"):
                continue
            v = coq_value(d)
            if d in RECORDS:
                for k, tn in enumerate(RECORDS[d]):
                    if v is not None and not close(v[k], tv[tn]):
                        fail("%s.%d = %s, table %s = %s: differs, %s" % (d, k, mpmath.nstr(v[k], 20), tn,
                                                                      mpmath.nstr(tv[tn], 20), where))
                    compared.add(tn)
                compared.add(d)
                continue
            tn = RENAMED.get(d, d[2:] if d.startswith("b_") else d)
            if tn not in tv:
                fail("Bound.v's %s has no entry %s in the table" % (d, tn))
            if v is not None and not close(v, tv[tn]):
                fail("%s = %s, table %s = %s: differs, %s" % (d, mpmath.nstr(to_real(v) if not isinstance(v, bool) else v, 20),
                                                             tn, mpmath.nstr(tv[tn], 20), where))
            compared |= {tn, d}
        for tn, text in HELPERS.items():
            v = coq_value(text)
            if v is not None and not close(v, tv[tn]):
                fail("%s = %s, table %s = %s: differs, %s" % (text, mpmath.nstr(to_real(v), 20), tn,
                                                             mpmath.nstr(tv[tn], 20), where))
            compared.add(tn)
        if ok is not None and pre is not None:
            if bool(ok and pre) != all(hyps.values()):
                failed = sorted(k for k, h in hyps.items() if not h)
                fail("bound_ok /\\ logit_pre is %s, the table's hypotheses %s (failing: %s), %s"
                     % (bool(ok and pre), all(hyps.values()), failed, where))
            checked_hyp += 1

    # 3. coverage: every table coefficient compared or used by one that is
    missing = [d for d in bound_defs if d not in compared and d not in ("bound_ok", "logit_pre")]
    if missing:
        fail("Bound.v definitions never compared: %s" % missing)
    coefs = [e for e in entries if e["kind"] == "coef"]
    uncompared = [e["name"] for e in coefs if e["name"] not in compared]
    uses = {e["name"]: set(re.findall(r"[A-Za-z_]\w*", e["expr"])) for e in coefs}
    used, todo = set(), [n for n in compared if n in uses]
    while todo:
        for m in uses.get(todo.pop(), ()):
            if m not in used:
                used.add(m)
                todo.append(m)
    lonely = [n for n in uncompared if n not in used]
    if lonely:
        fail("table coefficients neither compared with Coq nor used by one that is: %s" % lonely)
    print("check_coq: %d Bound.v definitions and %d table entries agree on %d configurations "
          "(hypotheses on %d), the constants of %d examples equal"
          % (len(bound_defs), len(compared & set(names)), count, checked_hyp, len(table["examples"])))


main()
