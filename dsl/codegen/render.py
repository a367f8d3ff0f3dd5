"""Rendering: the lowered lines -> the source of one function (a factory binding the constants as its
defaults), compiled with Python's `compile` in a namespace holding only the builtins the templates use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .lower import _Gen
from .support import _Budget, _Fault

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


def _build(gen: _Gen, returns: str, init_lets: bool = False, params: str = "R, s") -> tuple[Callable[..., Any], str]:
    """Wrap the body in a factory binding the constants, compile it and return the function and its source."""
    load = [f"        {local} = R[{gen.const(name)}]" for name, local in gen.roots.items()]
    if init_lets:
        load += [f"        {m} = _U" for m in gen.memo.values()]
    load += [f"        {m} = {{}}" for m in gen.memo_dicts.values()]
    # the constants and `_U` (a parameter of the factory) become defaults of `fast`: read as its own locals,
    # which is cheaper than closure cells (let alone globals); positional, since keyword-only defaults cost a
    # dict lookup each per call
    consts = "".join(f", k{i}=k{i}" for i in range(len(gen.consts)))
    body: list[str] = []
    unset: list[str] = []  # reset before any statement: parameters defaulting to `_U`, set by the call itself
    never = {f for f in gen.flags if f not in gen.faulting}
    dropped = {f"{f} = False" for f in never} | {f"if {f}: raise _F" for f in never}
    dropped |= {line for h, append in gen.unread_visited.items() for line in (f"{h} = []", append)}
    for line in gen.lines:
        text = line.lstrip(" ")
        if text in dropped:
            continue
        if text.startswith("\0"):  # a scope marker: the resets of the sub-expressions memoised in it, at once
            tested = [m for m in gen.resets[text] if m in gen.tested]  # the others are assigned before any read
            if tested and not body:
                unset += [m for m in tested if m not in unset]
            elif tested:
                pad = line[: len(line) - len(text)]
                body.append(f"    {pad}{' = '.join(tested)} = _U")
        else:
            body.append("    " + line)
    head = [
        "def _factory(K, _U):",
        *(f"    k{i} = K[{i}]" for i in range(len(gen.consts))),
        f"    def fast({params}{consts}, _U=_U{''.join(f', {m}=_U' for m in unset)}):",
    ]
    src = "\n".join([*head, *load, *body, f"        return {returns}", "    return fast", ""])
    namespace: dict[str, Any] = {"__builtins__": dict(_BUILTINS), "_F": _Fault, "_B": _Budget}
    exec(compile(src, "<rulepass generated rule>", "exec"), namespace)  # generated from templates only (see above)
    return namespace["_factory"](tuple(gen.consts), _UNSET), src
