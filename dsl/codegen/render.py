"""Rendering: the optimised statements -> one Python module (a factory binding the constants as defaults of the
function it returns), compiled from its syntax tree with `compile` in a namespace holding only the builtins the
inline forms use; `ast.unparse` gives its source, for reading and for tests only."""

from __future__ import annotations

import ast as py
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .lower_check import _Gen
from .optimise import optimise
from .support import _Budget, _Fault, assign, load

_UNSET: Any = object()
_BUILTINS: dict[str, Any] = {
    "len": len,
    "list": list,
    "min": min,
    "range": range,
    "bool": bool,
    "isinstance": isinstance,
    "int": int,
    "set": set,
    "id": id,
    "Exception": Exception,
}


def _function(name: str, params: Sequence[str], defaults: Sequence[py.expr], body: list[py.stmt]) -> py.FunctionDef:
    """`def name(params): body`, the last parameters defaulting to `defaults`."""
    args = py.arguments(
        posonlyargs=[], args=[py.arg(p) for p in params], kwonlyargs=[], kw_defaults=[], defaults=list(defaults)
    )
    extra: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
    return py.FunctionDef(name, args, body, [], None, **extra)


def _locate(tree: py.AST) -> None:
    """Give every node the position `compile` requires (line 1: the code has no source lines to point to); what
    `ast.fix_missing_locations` does, at a fraction of its cost: a node that has one (a read shared by every use
    of a local, a subtree used twice) was reached before, with all below it."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node._attributes:
            if hasattr(node, "lineno"):
                continue
            node.lineno = node.end_lineno = 1  # type: ignore[attr-defined]
            node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
        for name in node._fields:
            value = getattr(node, name)
            if isinstance(value, list):
                stack += [v for v in value if isinstance(v, py.AST)]
            elif isinstance(value, py.AST):
                stack.append(value)


def _build(
    gen: _Gen, returns: py.expr, init_lets: bool = False, params: Sequence[str] = ("R", "s")
) -> tuple[Callable[..., Any], py.Module]:
    """Wrap the body in a factory binding the constants, compile it and return the function and its module."""
    loads: list[py.stmt] = [
        assign(local, py.Subscript(load("R"), gen.const(name), py.Load())) for name, local in gen.roots.items()
    ]
    if init_lets:
        loads += [assign(m, load("_U")) for m in gen.memo.values()]
    loads += [assign(m, py.Dict([], [])) for m in gen.memo_dicts.values()]
    body = optimise(gen)
    # the constants and `_U` (a parameter of the factory) become defaults of `fast`: read as its own locals,
    # which is cheaper than closure cells (let alone globals); positional, since keyword-only defaults cost a
    # dict lookup each per call
    consts = [f"k{i}" for i in range(len(gen.consts))]
    defaults = [load(k) for k in (*consts, "_U")]
    fast = _function("fast", [*params, *consts, "_U"], defaults, [*loads, *body, py.Return(returns)])
    bind = [assign(k, py.Subscript(load("K"), py.Constant(i), py.Load())) for i, k in enumerate(consts)]
    module = py.Module([_function("_factory", ["K", "_U"], [], [*bind, fast, py.Return(load("fast"))])], [])
    _locate(module)
    code = compile(module, "<rulepass generated rule>", "exec")
    namespace: dict[str, Any] = {"__builtins__": dict(_BUILTINS), "_F": _Fault, "_B": _Budget}
    exec(code, namespace)  # built from the catalogue's forms and fixed constructors only (see the package)
    return namespace["_factory"](tuple(gen.consts), _UNSET), module
