"""What the generated code and its generator share: the exceptions it raises, the runtime helpers its
constants hold, the small facts the lowering reads (a local's name, a literal), and its limits."""

from __future__ import annotations

import ast as pyast
import re
from collections.abc import Callable, Iterator
from typing import Any

from .. import ast
from ..compile import _hashable
from ..rules import Check

# the generated code of one rule may not exceed this many lines (lazy `let`s are inlined at every use); a rule
# over it runs on the closures alone
MAX_LINES = 20_000


class _Fault(Exception):
    """Raised by generated code where the closures raise an EvalError (the engine re-runs them for the text)."""


class _Budget(Exception):
    """Raised by generated code when a loop would exceed the step budget."""


class _Declined(Exception):
    """The rule is too large to generate; it runs on the closures."""


class _Setter:
    """A generated action's write through the catalogue's setter, as `container[name] = value`."""

    __slots__ = ("set_attr", "target")

    def __init__(self, set_attr: Callable[[Any, str, Any], None], target: Any) -> None:
        self.set_attr = set_attr
        self.target = target

    def __setitem__(self, name: str, value: Any) -> None:
        self.set_attr(self.target, name, value)


def _truth(local: str) -> str:
    """The fact that `local` holds true (see `_Gen.known`)."""
    return f"{local} is true"


def _kept_local(value: str) -> str | None:
    """The local a value as emitted is, or is kept in (a walrus, or a memo's `(m if m is not _U else (m := v))`);
    None for any other expression."""
    if _LOCAL.fullmatch(value):
        return value
    try:
        e = pyast.parse(value, mode="eval").body
    except SyntaxError:  # pragma: no cover - the generator emits Python
        return None
    if isinstance(e, pyast.IfExp) and isinstance(e.body, pyast.Name):
        e = e.orelse  # the memo's compute branch (its test reads the same local)
    if isinstance(e, pyast.NamedExpr) and _LOCAL.fullmatch(e.target.id):
        return e.target.id
    return None


def _nodes(check: Check) -> Iterator[ast.Node]:
    """Every expression node of `check` and the checks inside it."""
    for e in (check.expr, check.coll, check.where, *(b.expr for b in check.lets)):
        if e is not None:
            stack = [e.node]
            while stack:
                n = stack.pop()
                yield n
                stack.extend(ast.children(n))
    for sub in check.checks:
        yield from _nodes(sub)


def _int_literal(n: ast.Node) -> int | None:
    """The value of an int literal (`3`, `-1`), else None."""
    neg = isinstance(n, ast.Unary) and n.op == "-"
    if neg:
        n = n.operand  # type: ignore[attr-defined]
    if isinstance(n, ast.Lit) and type(n.value) is int:
        return -n.value if neg else n.value
    return None


def _add(x: Any, y: Any) -> Any:
    return list(x) + list(y) if isinstance(x, (list, tuple)) else x + y


def _slice(o: Any, a: Any, b: Any) -> Any:
    if o is None:
        raise _Fault
    a = 0 if a is None else a
    b = len(o) if b is None else b
    if a < 0 or b < 0:
        raise _Fault
    return list(o[a:b]) if not isinstance(o, str) else o[a:b]


def _distinct_add(hashed: set[Any], seen: list[Any], v: Any) -> None:
    k = _hashable(v)
    try:
        hashed.add(k)
    except TypeError:
        if k not in seen:
            seen.append(k)


_NUMERIC = ("int", "float", "bool")
_ATOM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a local, a constant, None/True/False
# (comparison, int literal) of a length on the left -> whether it holds for an empty sequence exactly
_EMPTY_IF = {("==", 0): True, ("<=", 0): True, ("<", 1): True, ("!=", 0): False, (">", 0): False, (">=", 1): False}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}  # `a op b` is `b flipped[op] a`
_NESTED_OPERANDS = 8  # the longest chain a check tests nested (see `_Gen.chain_test`)
_SINGLE_READ = re.compile(r"\{0\}\.[A-Za-z_]\w*")  # a field form reading one attribute of the object
_LOCAL = re.compile(r"[a-z][0-9]+")  # a local of the generated function (or a constant's)
_ARITH = {"-": "-", "*": "*", "/": "/", "//": "//", "%": "%"}
_ORDER = ("<", "<=", ">", ">=")
_CONDITIONAL = re.compile(r"\b(?:if|and|or)\b")  # an inline form that may leave an argument unevaluated
# false for every key of an empty dict local: a bool attribute's read, or an int list attribute's non-emptiness
_FLAG_READ = re.compile(
    r"\((c\d+)\.get\(k\d+\) is True\)"
    r"|\(not \(not \(\[\] if (c\d+)\.get\(k\d+\) is None else k\d+\([a-z]\d+, k\d+\)\)\)\)"
)
