"""Static analysis of a checked rule set, for `validate`: warnings about what the rules mean, not how they read.

- `constant-condition`: a condition that is always true or always false over the catalogue's types (a field
  measured by `len` is never negative, `x % 32` lies in 0..31, literals fold), so it never decides anything.
- `unreachable-check`: a check that can never be the one a candidate misses at, because an earlier check of the
  same list fails whenever it would (each way it can fail is a way an earlier one fails), or always fails.
- `write-conflict`: two rules that may act on the same node write the same attribute, and no `after`/`before`
  orders them, so which value stays depends on an order nobody declared.
- `order-hazard`: a rule's checks read an attribute another rule's actions write, and no `after`/`before`
  orders them, so its decisions depend on which runs first. When the rules are ordered (directly or through
  other passes; passes not defined by rule files count in the order they are given) the dependence is
  declared, hence intended, and nothing is reported.

Everything here reads the checker's resolution (types, fields, helpers, lets); nothing is evaluated on a graph.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

from ..base.diagnostics import Diagnostic
from . import ast
from .catalogue import ParamSpec
from .check import Resolution
from .rules import Check, Expr, Rule

Range = tuple[float, float]
_LEN_FORM = re.compile(r"len\([^()]*\)")  # a field whose inline form is a length: never negative
_POSITIONS = {"start", "end", "depth", "var_start", "name_start"}


@dataclass(frozen=True)
class Analysed:
    """A checked rule and what its names resolved to."""

    rule: Rule
    res: Resolution


class _Folder:
    """Ranges of int expressions and truth values of conditions, where the types alone decide them."""

    def __init__(self, res: Resolution) -> None:
        self.res = res
        self.active: set[int] = set()  # lets being followed (no let reads itself, but stay safe)

    def let_node(self, n: ast.Node) -> ast.Node | None:
        b = self.res.let_refs.get(id(n)) if isinstance(n, ast.Name) else None
        if b is None or id(b) in self.active:
            return None
        return b.expr.node

    def follow(self, n: ast.Node, fn: str) -> object:
        b = self.res.let_refs[id(n)]
        self.active.add(id(b))
        try:
            return self.rng(b.expr.node) if fn == "rng" else self.truth(b.expr.node)
        finally:
            self.active.discard(id(b))

    def rng(self, n: ast.Node) -> Range | None:
        """The values an int (or float) expression can take, when known to be narrower than everything."""
        if isinstance(n, ast.Lit):
            v = n.value
            return (v, v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if isinstance(n, ast.Name):
            return self.follow(n, "rng") if self.let_node(n) is not None else None  # type: ignore[return-value]
        if isinstance(n, ast.Attr):
            spec = self.res.fields.get(id(n))
            if spec is not None and spec.type.name == "int" and spec.inline and _LEN_FORM.fullmatch(spec.inline):
                return (0, math.inf)
            return None
        if isinstance(n, ast.Call):
            helper = self.res.helpers.get(id(n))
            return (0, math.inf) if helper is not None and helper.name == "len" else None
        if isinstance(n, ast.Quant):
            return (0, math.inf) if n.kind in ("count", "distinct") else None
        if isinstance(n, ast.Unary) and n.op == "-":
            r = self.rng(n.operand)
            return (-r[1], -r[0]) if r is not None else None
        if isinstance(n, ast.Arith):
            return self.arith(n)
        if isinstance(n, ast.IfElse):
            t = self.truth(n.cond)
            if t is not None:
                return self.rng(n.then if t else n.else_)
            a, b = self.rng(n.then), self.rng(n.else_)
            return (min(a[0], b[0]), max(a[1], b[1])) if a is not None and b is not None else None
        return None

    def arith(self, n: ast.Arith) -> Range | None:
        b = self.rng(n.right)
        if n.op == "%" and b is not None and b[0] == b[1] and b[0] > 0 and float(b[0]).is_integer():
            return (0, b[0] - 1)  # Python's % by a positive number: 0 <= x % k < k, whatever x
        a = self.rng(n.left)
        if a is None or b is None:
            return None
        if n.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if n.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if n.op == "*" and all(math.isfinite(x) for x in (*a, *b)):
            products = [x * y for x in a for y in b]
            return (min(products), max(products))
        return None

    def truth(self, n: ast.Node) -> bool | None:
        """True or False when the condition cannot be otherwise; None when a graph decides."""
        if isinstance(n, ast.Lit):
            return n.value if isinstance(n.value, bool) else None
        if isinstance(n, ast.Name):
            return self.follow(n, "truth") if self.let_node(n) is not None else None  # type: ignore[return-value]
        if isinstance(n, ast.Unary) and n.op == "not":
            t = self.truth(n.operand)
            return None if t is None else not t
        if isinstance(n, ast.BoolOp):
            values = [self.truth(o) for o in n.operands]
            stop = n.op == "or"  # `or` is decided by a true operand, `and` by a false one
            if stop in values:
                return stop
            return (not stop) if all(v is not None for v in values) else None
        if isinstance(n, ast.Compare):
            return self.compare(n)
        if isinstance(n, ast.IfElse):
            t = self.truth(n.cond)
            if t is not None:
                return self.truth(n.then if t else n.else_)
            a, b = self.truth(n.then), self.truth(n.else_)
            return a if a is not None and a == b else None
        return None

    def compare(self, n: ast.Compare) -> bool | None:
        if n.op in ("in", "not in"):
            items = n.right.items if isinstance(n.right, ast.ListLit) else ()
            if isinstance(n.left, ast.Lit) and items and all(isinstance(i, ast.Lit) for i in items):
                found = any(_same_value(n.left.value, i.value) for i in items)  # type: ignore[attr-defined]
                return found if n.op == "in" else not found
            return None
        if isinstance(n.left, ast.Lit) and isinstance(n.right, ast.Lit) and n.op in ("==", "!="):
            same = _same_value(n.left.value, n.right.value)
            return same if n.op == "==" else not same
        a, b = self.rng(n.left), self.rng(n.right)
        if a is None or b is None:
            return None
        lo, hi = a[0] - b[1], a[1] - b[0]  # the range of left - right
        sign = {
            "<": (hi < 0, lo >= 0),
            "<=": (hi <= 0, lo > 0),
            ">": (lo > 0, hi <= 0),
            ">=": (lo >= 0, hi < 0),
            "==": (lo == hi == 0, lo > 0 or hi < 0),
            "!=": (lo > 0 or hi < 0, lo == hi == 0),
        }
        always, never = sign[n.op]
        return True if always else False if never else None


def _same_value(a: object, b: object) -> bool:
    numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
    return (type(a) is type(b) or numbers) and a == b


def _key(n: ast.Node) -> object:
    """`n`'s structure without its positions: equal for the same expression written twice."""
    out: list[object] = [type(n).__name__]
    for f in fields(n):
        if f.name in _POSITIONS:
            continue
        v = getattr(n, f.name)
        if isinstance(v, ast.Node):
            out.append(_key(v))
        elif isinstance(v, tuple):
            out.append(tuple(_key(x) if isinstance(x, ast.Node) else x for x in v))
        else:
            out.append((type(v).__name__, v))
    return tuple(out)


# ---- constant conditions ----------------------------------------------------------------------------------------
def _exprs(rule: Rule) -> Iterator[Expr]:
    yield from (s.when for s in rule.skip_graph)
    yield from (b.expr for b in rule.lets)

    def of(checks: Sequence[Check]) -> Iterator[Expr]:
        for c in checks:
            yield from (b.expr for b in c.lets)
            yield from (e for e in (c.coll, c.where, c.expr) if e is not None)
            yield from of(c.checks)

    yield from of(rule.checks)
    yield from rule.actions


_CONDITIONS = (ast.Compare, ast.BoolOp, ast.Unary)


def _constant_conditions(a: Analysed, checks_at: dict[int, Check]) -> list[Diagnostic]:
    """`checks_at`: the check whose condition each expression is (by the expression's identity)."""
    folder = _Folder(a.res)
    out: list[Diagnostic] = []
    for e in _exprs(a.rule):
        stack = [e.node]
        while stack:
            n = stack.pop()
            whole = checks_at.get(id(e)) if n is e.node else None
            # a condition that reads as if a graph decided it; a literal written as a condition says what it means
            t = folder.truth(n) if isinstance(n, _CONDITIONS) or (whole is not None and not _literal_node(n)) else None
            if isinstance(n, ast.Unary) and n.op != "not":
                t = None
            if t is None:
                stack.extend(ast.children(n))
                continue
            text = _short(e.text[n.start : n.end])
            what = f"`{text}` is always {'true' if t else 'false'} over the catalogue's types"
            if whole is not None:
                fails = t == (whole.kind == "reject_if")
                what += f": check '{whole.name}' {'always fails' if fails else 'never fails'}"
            out.append(
                Diagnostic(
                    "constant-condition",
                    what,
                    e.span(n),
                    severity="warning",
                    hint=_why(folder, n, e.text) or "a condition no graph can change decides nothing",
                )
            )
    return out


def _why(folder: _Folder, n: ast.Node, text: str = "") -> str | None:
    if isinstance(n, ast.BoolOp):  # the operand that decides it, and why
        t = folder.truth(n)
        part = next((o for o in n.operands if folder.truth(o) == t), None)
        if part is None or not text:
            return None
        why = _why(folder, part, text)
        said = f"`{_short(text[part.start : part.end])}` is always {'true' if t else 'false'}"
        return f"{said}: {why}" if why else said
    if not isinstance(n, ast.Compare):
        return None
    a, b = folder.rng(n.left), folder.rng(n.right)
    if a is None or b is None:
        return None
    return f"the left side lies in {_fmt(a)}, the right side in {_fmt(b)}"


def _literal_node(n: ast.Node) -> bool:
    return isinstance(n, ast.Lit)


def _short(text: str, limit: int = 60) -> str:
    """An expression's text for a message: on one line, cut in the middle past `limit` characters."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit // 2 - 2] + " ... " + one[-(limit // 2 - 3) :]


def _fmt(r: Range) -> str:
    lo = "-inf" if r[0] == -math.inf else str(int(r[0]) if float(r[0]).is_integer() else r[0])
    hi = "inf" if r[1] == math.inf else str(int(r[1]) if float(r[1]).is_integer() else r[1])
    return f"[{lo}, {hi}]"


# ---- unreachable checks -----------------------------------------------------------------------------------------
def _failures(folder: _Folder, c: Check) -> frozenset[object] | None:
    """The ways `c` fails, as (polarity, structure) atoms whose disjunction is its failure; None for a group or
    a check with lets of its own (names may then mean other things than in its neighbours)."""
    if c.kind not in ("require", "reject_if") or c.lets or c.expr is None:
        return None
    n = c.expr.node
    negate = c.kind == "require"
    while isinstance(n, ast.Unary) and n.op == "not":
        n, negate = n.operand, not negate
    # not (a and b) = not a or not b; (a or b) fails on either
    parts = n.operands if isinstance(n, ast.BoolOp) and n.op == ("and" if negate else "or") else (n,)
    atoms = set()
    for p in parts:
        neg = negate
        while isinstance(p, ast.Unary) and p.op == "not":
            p, neg = p.operand, not neg
        atoms.add((neg, _key(p)))
    return frozenset(atoms)


def _unreachable(a: Analysed) -> list[Diagnostic]:
    folder = _Folder(a.res)
    out: list[Diagnostic] = []

    def walk(checks: Sequence[Check]) -> None:
        seen: dict[object, Check] = {}
        always: Check | None = None
        for c in checks:
            ways = _failures(folder, c)
            if always is not None:
                out.append(
                    Diagnostic(
                        "unreachable-check",
                        f"check '{c.name}' is never reached: check '{always.name}' before it always fails",
                        c.span,
                        severity="warning",
                    )
                )
            elif ways is not None and all(w in seen for w in ways):
                by = sorted({seen[w].name for w in ways})
                out.append(
                    Diagnostic(
                        "unreachable-check",
                        f"check '{c.name}' can never decide: whenever it fails, {', '.join(map(repr, by))} "
                        "before it has failed already",
                        c.span,
                        severity="warning",
                        hint="remove it, or move it before the check that covers it",
                    )
                )
            if c.expr is not None and c.kind in ("require", "reject_if") and not c.lets:
                t = folder.truth(c.expr.node)
                if t is not None and t == (c.kind == "reject_if"):
                    always = always or c
            for w in ways or ():
                seen.setdefault(w, c)
            walk(c.checks)

    walk(a.rule.checks)
    return out


# ---- writes and reads across rules ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Access:
    attr: str
    on_candidate: bool  # the matched node itself (`node.x`), so two rules collide only if their matches overlap
    expr: Expr
    node: ast.Node


def _literal(folder: _Folder, n: ast.Node) -> str | None:
    """The string `n` always is (a literal, or a let bound to one), else None."""
    while isinstance(n, ast.Name):
        nxt = folder.let_node(n)
        if nxt is None:
            return None
        n = nxt
    return n.value if isinstance(n, ast.Lit) and isinstance(n.value, str) else None


def _accesses(a: Analysed) -> tuple[list[_Access], list[_Access]]:
    """(writes of the actions, reads of everything else) of attributes and settable fields, by name."""
    folder = _Folder(a.res)
    writes: list[_Access] = []
    reads: list[_Access] = []
    actions = {id(e) for e in a.rule.actions}
    for e in _exprs(a.rule):
        stack = [e.node]
        while stack:
            n = stack.pop()
            stack.extend(ast.children(n))
            if isinstance(n, ast.SetAction) and id(e) in actions:
                on_node = isinstance(n.target, ast.Name) and n.target.id == "node"
                writes.append(_Access(n.attr, on_node, e, n))
            elif isinstance(n, ast.Attr):
                spec = a.res.fields.get(id(n))
                if spec is not None and spec.settable:
                    reads.append(_Access(n.name, False, e, n))
            elif isinstance(n, ast.Call):
                helper = a.res.helpers.get(id(n))
                args = ((n.receiver,) if n.receiver is not None else ()) + n.args
                if helper is not None and _reads_attribute(helper.params) and len(args) >= 2:
                    name = _literal(folder, args[1])
                    if name is not None:
                        reads.append(_Access(name, False, e, n))
    return writes, reads


def _reads_attribute(params: Sequence[ParamSpec]) -> bool:
    """Whether a helper of these parameters reads an attribute: (AttrHolder, name, ...), as attr_bool does."""
    return len(params) >= 2 and params[0].type.name == "AttrHolder" and params[1].name == "name"


def _ordered(rules: Sequence[Rule], known_passes: Sequence[str]) -> dict[str, set[str]]:
    """Pass -> every pass that runs after it by the after/before constraints (transitively); the passes rule files
    do not define run in the order given, one after the other."""
    succ: dict[str, set[str]] = {}
    for r in rules:
        for x in r.after:
            succ.setdefault(x, set()).add(r.name)
        for x in r.before:
            succ.setdefault(r.name, set()).add(x)
    for x, y in itertools.pairwise(known_passes):
        succ.setdefault(x, set()).add(y)
    later: dict[str, set[str]] = {}
    for start in sorted({*succ, *(r.name for r in rules)}):
        seen: set[str] = set()
        todo = sorted(succ.get(start, ()))
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(sorted(succ.get(x, ())))
        later[start] = seen
    return later


def _overlap(a: Rule, b: Rule) -> bool:
    return "*" in a.match or "*" in b.match or bool(set(a.match) & set(b.match))


def _across(analysed: Sequence[Analysed], known_passes: Sequence[str]) -> list[Diagnostic]:
    rules = [a.rule for a in analysed]
    later = _ordered(rules, known_passes)
    acc = {a.rule.name: _accesses(a) for a in analysed}
    out: list[Diagnostic] = []
    for i, a in enumerate(rules):
        for b in rules[i + 1 :]:
            if b.name in later.get(a.name, ()) or a.name in later.get(b.name, ()):
                continue  # ordered: the order says which effect the other sees, or which write stays
            out.extend(_conflicts(a, b, acc[a.name][0], acc[b.name][0]))
            for reader, writer in ((a, b), (b, a)):
                out.extend(_hazards(reader, writer, acc[reader.name][1], acc[writer.name][0]))
    return out


def _conflicts(a: Rule, b: Rule, wa: list[_Access], wb: list[_Access]) -> list[Diagnostic]:
    out = []
    for y in wb:
        x = next((x for x in wa if x.attr == y.attr and (x.on_candidate == y.on_candidate)), None)
        if x is None or (x.on_candidate and not _overlap(a, b)):
            continue
        out.append(
            Diagnostic(
                "write-conflict",
                f"rules '{a.name}' and '{b.name}' both write '{y.attr}' and no after/before orders them",
                y.expr.span(y.node),
                severity="warning",
                hint=f"'{a.name}' writes it at {x.expr.span(x.node)}; order the rules (after/before) to say which "
                "value stays, or write different attributes",
            )
        )
    return out


def _hazards(reader: Rule, writer: Rule, reads: list[_Access], writes: list[_Access]) -> list[Diagnostic]:
    out = []
    written = {w.attr: w for w in writes}
    for r in reads:
        w = written.get(r.attr)
        if w is None:
            continue
        out.append(
            Diagnostic(
                "order-hazard",
                f"rule '{reader.name}' reads '{r.attr}', which rule '{writer.name}' writes, and no after/before "
                "orders them: its decisions depend on which runs first",
                r.expr.span(r.node),
                severity="warning",
                hint=f"'{writer.name}' writes it at {w.expr.span(w.node)}; add `after: [{writer.name}]` or "
                f"`before: [{writer.name}]` to '{reader.name}'",
            )
        )
    return out


def analyse(analysed: Sequence[Analysed], known_passes: Sequence[str] = ()) -> list[Diagnostic]:
    """Every warning of the analysis over the checked rules, each once (shared checks are analysed in every rule
    that uses them)."""
    out: list[Diagnostic] = []
    for a in analysed:
        checks_at = {id(c.expr): c for c in _all_checks(a.rule.checks) if c.expr is not None}
        out.extend(_constant_conditions(a, checks_at))
        out.extend(_unreachable(a))
    out.extend(_across(analysed, known_passes))
    return list(dict.fromkeys(out))


def _all_checks(checks: Sequence[Check]) -> Iterator[Check]:
    for c in checks:
        yield c
        yield from _all_checks(c.checks)
