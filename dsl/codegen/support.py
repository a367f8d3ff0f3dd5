"""What the generated code and its generator share: the exceptions it raises, the runtime helpers its
constants hold, the constructors of the Python syntax trees the lowering builds, the small facts it reads (a
local's name, a literal), and its limits."""

from __future__ import annotations

import ast as py
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import ast
from ..compile import _hashable
from ..rules import Check

# the generated code of one rule may not exceed this many statements (lazy `let`s are inlined at every use); a rule
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


# ---- Python syntax trees: the few constructors the lowering builds its code with -------------------------------
_READS: dict[str, py.Name] = {}


def load(name: str) -> py.Name:
    """A read of local `name` (one node for every read: no pass changes an expression in place)."""
    node = _READS.get(name)
    if node is None:
        node = _READS[name] = py.Name(name, py.Load())
    return node


def store(name: str) -> py.Name:
    """A write of local `name`."""
    return py.Name(name, py.Store())


def assign(name: str | Sequence[str], value: py.expr) -> py.Assign:
    """`name = value` (`a = b = value` for several names)."""
    names = [name] if isinstance(name, str) else list(name)
    return py.Assign([store(n) for n in names], value)


def if_(test: py.expr, body: list[py.stmt] | None = None, orelse: list[py.stmt] | None = None) -> py.If:
    """`if test: body else: orelse`."""
    return py.If(test, body if body is not None else [], orelse if orelse is not None else [])


def raise_(name: str) -> py.Raise:
    """`raise name` (`_F` a fault, `_B` over budget)."""
    return py.Raise(load(name), None)


def call(fn: py.expr | str, *args: py.expr) -> py.Call:
    """`fn(args)`."""
    return py.Call(load(fn) if isinstance(fn, str) else fn, list(args), [])


def method(obj: py.expr, name: str, *args: py.expr) -> py.Call:
    """`obj.name(args)`."""
    return py.Call(py.Attribute(obj, name, py.Load()), list(args), [])


def path(obj: py.expr, dotted: str) -> py.expr:
    """`obj.a.b` for the catalogue's attribute path `a.b`."""
    for part in dotted.split("."):
        obj = py.Attribute(obj, part, py.Load())
    return obj


_CMP: dict[str, type[py.cmpop]] = {
    "==": py.Eq, "!=": py.NotEq, "<": py.Lt, "<=": py.LtE, ">": py.Gt, ">=": py.GtE,
    "in": py.In, "not in": py.NotIn, "is": py.Is, "is not": py.IsNot,
}  # fmt: skip
_BIN: dict[str, type[py.operator]] = {
    "+": py.Add, "-": py.Sub, "*": py.Mult, "/": py.Div, "//": py.FloorDiv, "%": py.Mod,
}  # fmt: skip


def compare(a: py.expr, op: str, b: py.expr) -> py.Compare:
    """`a op b` for a comparison operator's text."""
    return py.Compare(a, [_CMP[op]()], [b])


def binop(a: py.expr, op: str, b: py.expr) -> py.BinOp:
    """`a op b` for an arithmetic operator's text."""
    return py.BinOp(a, _BIN[op](), b)


def not_(e: py.expr) -> py.UnaryOp:
    """`not e`."""
    return py.UnaryOp(py.Not(), e)


def bool_op(op: str, values: Sequence[py.expr]) -> py.expr:
    """`values` joined by `op` (`and`/`or`): the one value itself, and for none the value of an empty chain."""
    if not values:
        return py.Constant(op == "and")
    if len(values) == 1:
        return values[0]
    return py.BoolOp(py.And() if op == "and" else py.Or(), list(values))


def tuple_(items: Sequence[py.expr]) -> py.Tuple:
    """`(items,)`."""
    return py.Tuple(list(items), py.Load())


def is_atom(e: py.expr) -> bool:
    """Whether `e` is a local, a constant's local or None/True/False (read again at no cost)."""
    return isinstance(e, (py.Name, py.Constant))


def atom_key(e: py.expr) -> str:
    """A local's name (a constant's text) as the facts about it are kept."""
    return e.id if isinstance(e, py.Name) else repr(e.value) if isinstance(e, py.Constant) else py.dump(e)


def has_walrus(e: py.expr) -> bool:
    """Whether `e` assigns a local where it is evaluated."""
    return any(isinstance(x, py.NamedExpr) for x in py.walk(e))


def _kept_local(e: py.expr) -> str | None:
    """The local a value as emitted is, or is kept in (a walrus, or a memo's `(m if m is not _U else (m := v))`);
    None for any other expression."""
    if isinstance(e, py.Name):
        return e.id if _LOCAL.fullmatch(e.id) else None
    if isinstance(e, py.IfExp) and isinstance(e.body, py.Name):
        e = e.orelse  # the memo's compute branch (its test reads the same local)
    if isinstance(e, py.NamedExpr) and _LOCAL.fullmatch(e.target.id):
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
# (comparison, int literal) of a length on the left -> whether it holds for an empty sequence exactly
_EMPTY_IF = {("==", 0): True, ("<=", 0): True, ("<", 1): True, ("!=", 0): False, (">", 0): False, (">=", 1): False}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}  # `a op b` is `b flipped[op] a`
_NESTED_OPERANDS = 8  # the longest chain a check tests nested (see `_Gen.chain_test`)
_LOCAL = re.compile(r"[a-z][0-9]+")  # a local of the generated function (or a constant's)
_ORDER = ("<", "<=", ">", ">=")


class Marker(py.Pass):
    """Where a scope starts: the optimiser puts there the resets of the memo locals of scope `key` that are read
    before being assigned (see `optimise.optimise`)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
