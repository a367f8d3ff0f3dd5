"""The typed AST of rule expressions and actions: frozen dataclasses that remember where they came from.

Every node carries the character range [start, end) inside its expression string; the expression's
:class:`ExprSource` maps that range to a file span, so the checker's errors and the engine's decision records
point at the exact sub-expression in the rule file. `depth` is kept so deep nesting is refused before anything
recurses over the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..base.diagnostics import Span
from ..base.yaml_source import YamlDoc


@dataclass(frozen=True)
class ExprSource:
    """Where an expression string lives: its text and the YAML value it came from."""

    text: str
    doc: YamlDoc | None = None
    path: tuple[str | int, ...] = ()
    file: str = "<expr>"
    offset: int = 0  # where the expression starts inside its YAML string (a part of a longer value)
    # an expression written by the loader (a table, a lock): the pieces of its text copied from YAML strings,
    # (start, end, path of the string, offset in it), and the span every other character maps to
    pieces: tuple[tuple[int, int, tuple[str | int, ...], int], ...] = ()
    at: Span | None = None
    _spans: dict[tuple[int, int], Span] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def span(self, start: int, end: int) -> Span:
        """The file span of characters [start, end) of the expression (computed once per range)."""
        got = self._spans.get((start, end))
        if got is None:
            if self.at is not None:
                # a piece's node may take in the parentheses written around it: one character either side
                piece = next((p for p in self.pieces if p[0] - 1 <= start and end <= p[1] + 1), None)
                if piece is None or self.doc is None:
                    got = self.at
                else:
                    lo, hi = max(start, piece[0]), min(end, piece[1])
                    got = self.doc.span_in_scalar(piece[2], piece[3] + lo - piece[0], max(hi - lo, 1))
            elif self.doc is not None:
                got = self.doc.span_in_scalar(self.path, start + self.offset, max(end - start, 1))
            else:
                got = Span(self.file, 1, start + 1, 1, max(end, start + 1))
            self._spans[(start, end)] = got
        return got


@dataclass(frozen=True, eq=False)
class Node:
    """Base of every AST node: its character range in the expression and its nesting depth."""

    start: int
    end: int
    depth: int


@dataclass(frozen=True, eq=False)
class Lit(Node):
    """A literal: int, float, string, bool or null."""

    value: object


@dataclass(frozen=True, eq=False)
class Name(Node):
    """A variable: a root binding (node, graph), a `let` binding or a loop variable."""

    id: str


@dataclass(frozen=True, eq=False)
class Attr(Node):
    """Field access `obj.name`."""

    obj: Node
    name: str


@dataclass(frozen=True, eq=False)
class Index(Node):
    """Indexed access `obj[index]`."""

    obj: Node
    index: Node


@dataclass(frozen=True, eq=False)
class Slice(Node):
    """Slice `obj[lo:hi]` (either bound may be omitted)."""

    obj: Node
    lo: Node | None
    hi: Node | None


@dataclass(frozen=True, eq=False)
class Call(Node):
    """A helper call `f(args)`, or `recv.f(args)` (then `recv` is passed as the first argument)."""

    func: str
    args: tuple[Node, ...]
    receiver: Node | None = None
    name_start: int = 0


@dataclass(frozen=True, eq=False)
class Unary(Node):
    """`not x` or `-x`."""

    op: str
    operand: Node


@dataclass(frozen=True, eq=False)
class BoolOp(Node):
    """`a and b and ...` or `a or b or ...`, evaluated left to right with short circuit."""

    op: str
    operands: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Compare(Node):
    """A comparison: == != < <= > >= in, not in."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, eq=False)
class Arith(Node):
    """Arithmetic: + - * / // %."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, eq=False)
class IfElse(Node):
    """`if cond then a else b`."""

    cond: Node
    then: Node
    else_: Node


@dataclass(frozen=True, eq=False)
class Quant(Node):
    """`all|any|none|count|distinct(var in coll [where filter]: body)`."""

    kind: str
    var: str
    coll: Node
    where: Node | None
    body: Node
    var_start: int = 0


@dataclass(frozen=True, eq=False)
class ListLit(Node):
    """A list literal `[a, b, ...]`."""

    items: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class SetAction(Node):
    """`set target.attr = value` (or `set target["attr"] = value`)."""

    target: Node
    attr: str
    value: Node


@dataclass(frozen=True, eq=False)
class ForAction(Node):
    """`for var in coll [where filter]: action`."""

    var: str
    coll: Node
    where: Node | None
    body: Node
    var_start: int = 0


@dataclass(frozen=True, eq=False)
class EditAction(Node):
    """A structural action: `insert OP before target`, `insert OP after target` (kind insert_before /
    insert_after, `op_type` OP) or `bypass target` (kind bypass, `op_type` empty)."""

    kind: str
    op_type: str
    target: Node


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of `node`, in source order."""
    if isinstance(node, Attr):
        return (node.obj,)
    if isinstance(node, Index):
        return (node.obj, node.index)
    if isinstance(node, Slice):
        return tuple(n for n in (node.obj, node.lo, node.hi) if n is not None)
    if isinstance(node, Call):
        return ((node.receiver,) if node.receiver is not None else ()) + node.args
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, BoolOp):
        return node.operands
    if isinstance(node, (Compare, Arith)):
        return (node.left, node.right)
    if isinstance(node, IfElse):
        return (node.cond, node.then, node.else_)
    if isinstance(node, (Quant, ForAction)):
        return tuple(n for n in (node.coll, node.where, node.body) if n is not None)
    if isinstance(node, ListLit):
        return node.items
    if isinstance(node, SetAction):
        return (node.target, node.value)
    if isinstance(node, EditAction):
        return (node.target,)
    return ()


_NODE_TYPES: dict[str, type[Node]] = {
    t.__name__: t
    for t in (Lit, Name, Attr, Index, Slice, Call, Unary, BoolOp, Compare, Arith, IfElse, Quant, ListLit, SetAction)
}
_NODE_TYPES["ForAction"] = ForAction
_NODE_TYPES["EditAction"] = EditAction


def to_data(node: Node) -> list[object]:
    """`node` as plain JSON data: `[type name, field values in declaration order]`, sub-nodes nested alike and
    tuples of them as lists (a literal's value is a scalar, so it is never mistaken for either)."""

    def value(v: object) -> object:
        if isinstance(v, Node):
            return to_data(v)
        if isinstance(v, tuple):
            return [value(x) for x in v]
        return v

    return [type(node).__name__, *(value(getattr(node, f.name)) for f in fields(node))]


def from_data(data: object) -> Node:
    """The node `to_data` gave `data` for; ValueError when `data` is not such a node (it is not trusted)."""
    if not isinstance(data, list) or not data or not isinstance(data[0], str) or data[0] not in _NODE_TYPES:
        raise ValueError(f"not an AST node: {str(data)[:80]}")
    cls = _NODE_TYPES[data[0]]
    fs = fields(cls)
    if len(data) != len(fs) + 1:
        raise ValueError(f"{cls.__name__} takes {len(fs)} fields, not {len(data) - 1}")
    args: list[Any] = []
    for f, v in zip(fs, data[1:], strict=True):
        kind = str(f.type)
        if kind.startswith("tuple"):
            if not isinstance(v, list):
                raise ValueError(f"{cls.__name__}.{f.name}: expected a list")
            args.append(tuple(from_data(x) for x in v))
        elif "Node" in kind:
            args.append(None if v is None and "None" in kind else from_data(v))
        elif kind == "object":
            if not isinstance(v, (str, int, float, bool)) and v is not None:
                raise ValueError(f"{cls.__name__}.{f.name}: expected a scalar")
            args.append(v)
        elif not isinstance(v, int if kind == "int" else str) or isinstance(v, bool):
            raise ValueError(f"{cls.__name__}.{f.name}: expected {kind}")
        else:
            args.append(v)
    return cls(*args)
