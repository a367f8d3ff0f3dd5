"""Optimising a lowered function, on its Python syntax tree: what can be decided only once all of it is known.

- **Memo resets at scope markers**: where a scope starts, its memo locals that some path tests (`is _U`) before
  assigning are reset, in one chained assignment (`m1 = c2 = _U`); the others are assigned before any read.
- **Flag runs** (a peephole the lowering applies where it joins an `or`'s operands, :func:`flag_runs`): a run of
  flag reads of one attribute dict (`D.get(k) is True`, and the non-emptiness of an int list attribute,
  `not not ([] if D.get(k) is None else f(x, k))`: false for every key of an empty dict) is skipped as a whole
  when the dict is empty, the usual case for a GE op. It saves 2.5-7.3% of the concat pass's instructions
  (4.8% geometric mean over the fixtures, split and llm cases of `benchmarks/instructions.py`).

Optimisations that saved less than 3% of those instructions were removed: dropping the fault flags and visited
lists nothing sets or reads (0.0-0.1%), and resetting the memo locals of the scopes starting before any statement
through the function's parameters (0.2-0.3%).
"""

from __future__ import annotations

import ast as py
import re

from .lower import _Core
from .support import assign, load

_CONST = re.compile(r"k\d+")  # a constant's local
_DICT = re.compile(r"c\d+")  # a common sub-expression's local (an attribute dict's, see `_Gen.attrs_dict`)
_LOCAL = re.compile(r"[a-z]\d+")


def optimise(gen: _Core) -> list[py.stmt]:
    """The function's statements with each scope marker replaced, in place, by the reset of its tested memo
    locals (the lowering recorded each marker with its block, so nothing walks the whole tree)."""
    for block, marker in gen.markers:
        tested = [m for m in gen.resets[marker.key] if m in gen.tested]  # the others are assigned before any read
        at = next(i for i, s in enumerate(block) if s is marker)
        block[at : at + 1] = [assign(tested, load("_U"))] if tested else []
        if not block:
            block.append(py.Pass())
    return gen.body


def _flag_dict(e: py.expr) -> str | None:
    """The dict local `e` reads a flag of (`D.get(k) is True`, or `not not ([] if D.get(k) is None else f(x, k))`),
    or None."""
    if isinstance(e, py.Compare) and isinstance(e.ops[0], py.Is) and len(e.ops) == 1:
        c = e.comparators[0]
        if isinstance(c, py.Constant) and c.value is True:
            return _get(e.left)
        return None
    if not (isinstance(e, py.UnaryOp) and isinstance(e.op, py.Not)):
        return None
    e = e.operand
    if not (isinstance(e, py.UnaryOp) and isinstance(e.op, py.Not) and isinstance(e.operand, py.IfExp)):
        return None
    x = e.operand
    test, other = x.test, x.orelse
    if not (isinstance(x.body, py.List) and not x.body.elts and isinstance(test, py.Compare)):
        return None
    none = test.comparators[0]
    if not (isinstance(test.ops[0], py.Is) and isinstance(none, py.Constant) and none.value is None):
        return None
    if not (isinstance(other, py.Call) and isinstance(other.func, py.Name) and _CONST.fullmatch(other.func.id)):
        return None
    args = other.args
    if not (len(args) == 2 and all(isinstance(a, py.Name) for a in args) and not other.keywords):
        return None
    first, second = args[0], args[1]
    assert isinstance(first, py.Name) and isinstance(second, py.Name)
    return _get(test.left) if _LOCAL.fullmatch(first.id) and _CONST.fullmatch(second.id) else None


def _get(e: py.expr) -> str | None:
    """`D` for `D.get(k)` (a dict local, a constant key), else None."""
    if not (isinstance(e, py.Call) and isinstance(e.func, py.Attribute) and e.func.attr == "get"):
        return None
    d, args = e.func.value, e.args
    if not (isinstance(d, py.Name) and _DICT.fullmatch(d.id) and len(args) == 1 and not e.keywords):
        return None
    key = args[0]
    return d.id if isinstance(key, py.Name) and _CONST.fullmatch(key.id) else None


def flag_runs(values: list[py.expr], attr_locals: set[str]) -> list[py.expr]:
    """The operands of an `or` with each run of flag reads of one attribute dict (one of `attr_locals`) as
    `((run) if D else False)`; applied by the lowering where it joins an `or`'s operands (see `_Exprs.fuse`)."""
    runs: list[tuple[str | None, list[py.expr]]] = []
    for v in values:
        d = _flag_dict(v)
        d = d if d in attr_locals else None
        if d is not None and runs and runs[-1][0] == d:
            runs[-1][1].append(v)
        else:
            runs.append((d, [v]))
    out: list[py.expr] = []
    for d, vs in runs:
        if d is not None and len(vs) > 1:
            out.append(py.IfExp(load(d), py.BoolOp(py.Or(), vs), py.Constant(False)))
        else:
            out += vs
    return out
