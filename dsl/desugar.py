"""The rule language's shorthands, written out at load as the constructs the back-ends evaluate.

A table lookup (`let: {x: {row_holding: KEY, in: TABLE, else: DEFAULT}}`) becomes an if-chain; a rule's `lock`
becomes a string `let` and the action that claims the producers; a shared check's parameters become the names
of the caller's bindings (:func:`rename`). Each written-out expression keeps, for every piece copied from the
file, where that piece was (:class:`.ast.ExprSource` `pieces`), so diagnostics still point at what the user
wrote. Nothing here knows the catalogue or a graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace

from . import ast

Piece = tuple[int, int, tuple[str | int, ...], int]


class Text:
    """An expression being written: its text and the pieces of it copied from YAML strings."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.pieces: list[Piece] = []

    def add(self, s: str) -> Text:
        """Append loader-written text."""
        self.parts.append(s)
        self.size += len(s)
        return self

    def copy(self, s: str, path: Sequence[str | int], offset: int = 0) -> Text:
        """Append `s`, the text of the YAML string at `path` from `offset` on."""
        self.pieces.append((self.size, self.size + len(s), tuple(path), offset))
        return self.add(s)

    @property
    def text(self) -> str:
        """The text written so far."""
        return "".join(self.parts)


def quoted(word: str) -> str:
    """`word` as a string literal (the schema keeps quotes, backslashes and line breaks out of table words)."""
    return f"'{word}'"


def lookup_text(
    kind: str,
    key: str,
    default: str,
    rows: Mapping[str, Sequence[str]],
    key_path: Sequence[str | int],
    default_path: Sequence[str | int],
) -> Text:
    """The if-chain of a table lookup. `row_holding`: the name of the first row listing the key's value;
    `first_in_row`: the first item of the row named by it; either way `default` when no row matches."""
    out = Text()
    seen: set[str] = set()
    for row, items in rows.items():
        if kind == "row_holding":
            words = [w for w in dict.fromkeys(items) if w not in seen]  # a word in two rows: the first one's
            seen.update(words)
            if not words:
                continue
            out.add("if (").copy(key, key_path).add(")")
            if len(words) == 1:
                out.add(f" == {quoted(words[0])}")
            else:
                out.add(" in [" + ", ".join(map(quoted, words)) + "]")
            out.add(f" then {quoted(row)} else ")
        else:
            out.add("if (").copy(key, key_path).add(f") == {quoted(row)} then {quoted(items[0])} else ")
    return out.add("(").copy(default, default_path).add(")")


def rename(node: ast.Node, names: Mapping[str, str]) -> ast.Node:
    """`node` with every variable of `names` read under its new name (the same object when none is read)."""
    if isinstance(node, ast.Name):
        return replace(node, id=names[node.id]) if node.id in names else node
    changed: dict[str, object] = {}
    for f in fields(node):
        v = getattr(node, f.name)
        if isinstance(v, ast.Node):
            nv: object = rename(v, names)
        elif isinstance(v, tuple) and v and isinstance(v[0], ast.Node):
            items = tuple(rename(x, names) for x in v)
            nv = items if any(a is not b for a, b in zip(items, v, strict=True)) else v
        else:
            continue
        if nv is not v:
            changed[f.name] = nv
    return replace(node, **changed) if changed else node  # type: ignore[arg-type]


def binders(node: ast.Node) -> set[str]:
    """The names `node` binds itself (quantifier and `for` variables)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Quant, ast.ForAction)):
            out.add(n.var)
        stack.extend(ast.children(n))
    return out
