"""Inline forms: the catalogue's Python expressions standing for a field's getter or a helper's call.

A form is text written by the domain (never by a rule): `{0}`, `{1}`.. its arguments, `{t}` a fresh temporary
and, in a helper's form or a field's view, `{f}` the helper (or the field's getter) itself. It is parsed once
(:func:`parse_template`, cached) with those placeholders replaced by sentinel names, checked on that tree
(:func:`check_template`), and every use substitutes the sentinels in a copy of the tree (:func:`instantiate`),
so the generated code is built from trees, never from text.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

# the builtins an inline form may call (the generated code's namespace holds them)
INLINE_BUILTINS = frozenset({"len", "list", "isinstance", "int", "min"})
MAX_ARGS = 8  # the most arguments a form may read
ARGS = tuple(f"_arg{i}" for i in range(MAX_ARGS))  # the sentinels of `{0}`, `{1}`, ..
TEMP = "_tmp"  # `{t}`
FN = "_fn"  # `{f}`
_ATTR_NAME = re.compile(r"[a-z][a-z0-9_]*")  # a public attribute name (no dunders, nothing to import)
_ALLOWED = (
    ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Name, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.expr_context,
)  # fmt: skip


@functools.cache
def parse_template(template: str) -> ast.expr:
    """The tree of `template` with its placeholders as sentinel names (shared: copy it before changing it).
    Raises ValueError for a placeholder beyond :data:`MAX_ARGS` or an unknown one, SyntaxError for bad Python."""
    try:
        text = template.format(*ARGS, t=TEMP, f=FN)
    except (IndexError, KeyError) as exc:
        raise ValueError(str(exc)) from None
    return ast.parse(text, mode="eval").body


def check_template(what: str, template: str, nargs: int, helper: bool = False) -> None:
    """An inline form (Python text standing for a call, `{0}`.. its arguments, `{t}` a fresh temporary, and with
    `helper` `{f}`: a helper itself, or a field's getter in its view) may hold only those, attribute names after
    a dot, operators, keywords, non-negative integer literals, plain string literals and :data:`INLINE_BUILTINS`;
    checked on the tree :func:`parse_template` makes, the one generated code is built from."""
    try:
        template.format(*ARGS[:nargs], t=TEMP, **({"f": FN} if helper else {}))  # only the placeholders allowed
        tree = parse_template(template)
    except (IndexError, KeyError, ValueError, SyntaxError) as exc:
        raise ValueError(f"{what}: inline form '{template}' is malformed ({exc})") from None
    text = template.format(*ARGS, t=TEMP, f=FN)  # the text the tree's positions refer to
    names = {*ARGS[:nargs], TEMP, *((FN,) if helper else ()), *INLINE_BUILTINS}
    for node in ast.walk(tree):
        word = _refused(node, names, text)
        if word is not None:
            raise ValueError(f"{what}: inline form '{template}' may not contain '{word}'")


def _refused(node: ast.AST, names: set[str], text: str) -> str | None:
    """What of `node` (parsed from `text`) an inline form may not hold (see `check_template`), or None."""
    if not isinstance(node, _ALLOWED):
        return type(node).__name__
    if isinstance(node, ast.Name) and node.id not in names:
        return node.id
    if isinstance(node, ast.Attribute) and _ATTR_NAME.fullmatch(node.attr) is None:
        return node.attr
    if isinstance(node, ast.Constant):
        written = ast.get_source_segment(text, node) or ""
        plain = (
            node.value is None
            or isinstance(node.value, bool)
            or (isinstance(node.value, str) and written[:1] in ("'", '"'))  # no prefix: r'..', b'..', f'..'
            or (type(node.value) is int and written.isdigit())  # decimal digits only
        )
        return None if plain else written
    if isinstance(node, ast.NamedExpr) and node.target.id != TEMP:
        return node.target.id
    return None


def _rebuilt(node: ast.AST, values: Mapping[str, ast.expr]) -> ast.AST:
    """A copy of `node` with the names `values` maps replaced by their values (shared, not copied: a value used
    twice is a local or a constant, see `_Exprs.inline`); a walrus target `{t}` becomes a write of its local."""
    if isinstance(node, ast.Name) and node.id in values:
        value = values[node.id]
        if isinstance(node.ctx, ast.Store):  # the temporary's walrus target
            assert isinstance(value, ast.Name)
            return ast.Name(value.id, ast.Store())
        return value
    if isinstance(node, (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)):
        return node  # a singleton with no fields
    fields: dict[str, Any] = {}
    for name, v in ast.iter_fields(node):
        if isinstance(v, list):
            fields[name] = [_rebuilt(x, values) if isinstance(x, ast.AST) else x for x in v]
        else:
            fields[name] = _rebuilt(v, values) if isinstance(v, ast.AST) else v
    return type(node)(**fields)


def instantiate(
    template: str | ast.expr, args: Sequence[ast.expr], temp: str = "tmp", fn: ast.expr | None = None
) -> ast.expr:
    """The expression `template` (a form, or a tree of one) stands for with `args` for `{0}`.., a local named
    `temp` for `{t}` and `fn` for `{f}`."""
    values: dict[str, ast.expr] = dict(zip(ARGS, args, strict=False))
    values[TEMP] = ast.Name(temp, ast.Load())
    if fn is not None:
        values[FN] = fn
    return substitute(template, values)


def substitute(template: str | ast.expr, values: Mapping[str, ast.expr]) -> ast.expr:
    """A copy of the form's tree with the names `values` maps replaced by their values; the other names stay."""
    tree = parse_template(template) if isinstance(template, str) else template
    out = _rebuilt(tree, values)
    assert isinstance(out, ast.expr)
    return out


def uses(template: str | ast.expr) -> dict[str, int]:
    """How often each sentinel name occurs in the form."""
    tree = parse_template(template) if isinstance(template, str) else template
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def replace_reads(template: str, reads: Mapping[str, str]) -> ast.expr:
    """The tree of `template` with every sub-expression that is the form `reads` maps (e.g. `{0}.op.attrs`)
    replaced by the name it maps it to (copied: the parsed form stays as it is)."""
    patterns = {ast.dump(parse_template(form)): name for form, name in reads.items()}

    class _Replace(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            name = patterns.get(ast.dump(node)) if isinstance(node, ast.expr) else None
            return ast.Name(name, ast.Load()) if name is not None else self.generic_visit(node)

    out = _Replace().visit(copy.deepcopy(parse_template(template)))
    assert isinstance(out, ast.expr)
    return out
