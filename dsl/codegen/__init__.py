"""Checked rules -> one generated Python function per rule that decides a candidate (the engine's fast path).

The closures of :mod:`..compile` call one Python function per AST node and keep every variable in a dict; that
costs ten times what the same checks cost written by hand. This package compiles the same typed AST into one
plain function per rule (statements, local variables, `for` loops with `break` for the quantifiers,
short-circuits as `if` blocks, statement-free parts fused into one expression, sub-expressions that repeat
memoised per scope) in three phases, all on Python's own syntax trees (`ast`), never on source text:

- **lower** (:mod:`.lower` its state and statements, :mod:`.lower_expr` expressions, :mod:`.lower_check`
  checks, groups and actions) builds the function's statements as `ast` nodes, optimising as it goes what it
  can see locally (memos, lets on first use, facts along a path, counted indexed lists);
- **optimise** (:mod:`.optimise`) resets the memo locals at the scope markers, and holds the peephole that
  skips a run of flag reads of an empty attribute dict (applied where the lowering joins an `or`);
- **render** (:mod:`.render`) wraps them in a factory binding the constants and passes the module's tree to
  `compile`; `ast.unparse` gives :attr:`FastRule.source` for reading and for tests only.

The closures stay the reference: the explainer uses them, and the engine falls back to them to reproduce an
error exactly.

**No user text is executed.** Every variable is a generated identifier (`v3`, `m7`, `t12`), and every value that
came from the rule file (literals, field readers, helpers, root names) reaches the function as an element of a
constant tuple (a `kN` local), never as code. The one other kind of word in it comes from the *catalogue*,
never from the rule: a field's attribute path (`o.op.type`) and the inline forms of field getters and helpers
(`h.op.attrs.get(name) is True` for `attr_bool` on a Node, `len(d.origin_shape)` for `origin_rank`), parsed once
into trees whose placeholders are substituted (:mod:`..templates`), and checked when registered to hold only
attribute names, operators, keywords, a temporary and a few builtins (`templates.check_template`). The
function's namespace holds only the handful of builtins the forms use.

**Same semantics as the closures**, decision for decision: the same evaluation order and short circuits, `let`
bindings evaluated lazily on first use and memoised for the same scope (rule lets for the candidate, a check's
lets for one evaluation of that check, a group's lets per element), the same step budget (every loop charges
its collection's length when it starts; a memoised value is computed at most once per scope, so charged
once). A runtime fault (a field of null, an index out of range, a helper
that raises) is not formatted here: the function reports *where* the candidate stopped, and the engine re-runs
that one check with the closures to obtain the exact :class:`~..compile.EvalError`.

The generated function takes the root bindings (a dict) and the steps already spent, and returns the steps
spent when every check passes, or a :data:`Miss` tuple `(site, how, steps, group_values)`: `site` indexes
:attr:`FastRule.sites`, `how` is :data:`FAILED`, :data:`FAULT` or :data:`OVER_BUDGET`, `group_values` are the
elements bound by the enclosing `for_each` groups, outermost first.
"""

from __future__ import annotations

import ast as py
from collections.abc import Callable
from typing import Any

from .. import ast
from ..backend import Backend, Miss
from ..check import Resolution
from ..compile import CompiledRule, EvalError
from .lower_check import _Gen
from .render import _BUILTINS, _build
from .support import MAX_LINES, _Declined, if_, load

__all__ = ["MAX_LINES", "_BUILTINS", "FastRule", "_generate", "generate_expr", "generate_rule"]

FastFn = Callable[[dict[str, Any], int], "int | Miss"]


class FastRule(Backend):
    """A rule's generated decision function (:meth:`Backend.decide`), its generated actions and skip conditions:
    the fast back-end; tracing, a fault's text and near misses are the closures' (inherited).

    `actions(bindings, steps, apply)` evaluates every action first (what each writes, and where) and then, when
    `apply`, makes the writes the closures' actions' effects make, in the same order (`container[name] = value`:
    the attribute dict itself where the catalogue declares it, else the setter behind a `_Setter`); it returns the
    steps spent. On any fault it raises before writing anything, and the closures' actions run instead.
    `skips(graph bindings, 0)` is the index of the first skip condition that holds, or -1 (one step budget for
    all, as the closures'); on any fault it raises, and the closures answer instead.
    """

    def __init__(
        self,
        rule: CompiledRule,
        fn: FastFn,
        module: py.Module,
        actions: Callable[[dict[str, Any], int, bool], int] | None = None,
        actions_module: py.Module | None = None,
        skips: Callable[[dict[str, Any], int], int] | None = None,
    ) -> None:
        super().__init__(rule)
        self.fn = fn
        self.decide = fn
        self.module = module  # the syntax tree `fn` was compiled from
        self.actions = actions
        self.actions_module = actions_module
        self.skips = skips

    @property
    def source(self) -> str:
        """The source of the decision function (`ast.unparse` of its tree), for reading and for tests."""
        return py.unparse(self.module)

    @property
    def actions_source(self) -> str:
        """The source of `actions` ("" when there are none), for reading and for tests."""
        return py.unparse(self.actions_module) if self.actions_module is not None else ""

    def act(self, roots: dict[str, Any], steps: int, apply: bool) -> EvalError | tuple[str, ...]:
        """:meth:`Backend.act` by the generated actions (the closures' on a fault, which give the error; and for a
        rule with structural actions, which are never generated)."""
        if self.actions is not None:
            try:
                self.actions(roots, steps, apply)
            except Exception:  # nothing was written
                pass
            else:
                return ()
        return super().act(roots, steps, apply)

    def skip(self, roots: dict[str, Any]) -> tuple[int, EvalError | None] | None:
        """:meth:`Backend.skip` by the generated skip conditions (the closures' on a fault)."""
        if self.skips is not None:
            try:
                k = self.skips(roots, 0)
            except Exception:
                pass
            else:
                return None if k < 0 else (k, None)
        return super().skip(roots)


def _generate(
    res: Resolution,
    step_limit: int,
    body: Callable[[_Gen], py.expr],
    *,
    params: tuple[str, ...] = ("R", "s"),
    init_lets: bool = False,
) -> tuple[Callable[..., Any], py.Module, _Gen] | None:
    """Generate a function whose statements `body` emits (returning what the function returns), in two passes:
    the first counts the sub-expressions, the second memoises those that repeat. None when it is too large."""
    hot: set[object] | None = None
    for _ in range(2):
        gen = _Gen(res, step_limit)
        gen.hot = hot
        try:
            gen.open_scope(0)
            returns = body(gen)
        except _Declined:
            return None
        hot = {k for k, c in gen.counts.items() if c > 1}
    try:
        fn, module = _build(gen, returns, init_lets=init_lets, params=params)
    except (SyntaxError, RecursionError, MemoryError):
        # beyond what Python compiles (more than 20 nested loops, 100 levels of indentation): the closures,
        # which have no such limit, run the rule
        return None
    return fn, module, gen


def generate_rule(rule: CompiledRule) -> FastRule | None:
    """The rule's generated decision function, or None when the rule is too large to generate."""

    def checks(gen: _Gen) -> py.expr:
        gen.reset_lets(rule.rule.lets, 0)
        gen.checks(rule.checks, (), ())
        return load("s")

    def actions(gen: _Gen) -> py.expr:
        gen.reset_lets(rule.rule.lets, 0)
        for a in rule.rule.actions:
            gen.action(a.node)
        gen.apply_writes()
        return load("s")

    def skips(gen: _Gen) -> py.expr:
        for k, skip in enumerate(rule.rule.skip_graph):
            gen.emit(if_(gen.expr(skip.when.node), [py.Return(py.Constant(k))]))
        return py.Constant(-1)

    got = _generate(rule.res, rule.step_limit, checks)
    if got is None:
        return None
    fn, module, gen = got
    acts = _generate(rule.res, rule.step_limit, actions, params=("R", "s", "apply")) if rule.rule.actions else None
    skip = _generate(rule.res, rule.step_limit, skips, init_lets=True) if rule.rule.skip_graph else None
    out = FastRule(
        rule,
        fn,
        module,
        acts[0] if acts is not None else None,
        acts[1] if acts is not None else None,
        skip[0] if skip is not None else None,
    )
    if [s.path for s in gen.sites] != [s.path for s in out.sites]:  # pragma: no cover - both number in order
        raise AssertionError(f"{rule.rule.name}: the generated code numbers its sites differently")
    return out


def generate_expr(node: ast.Node, res: Resolution, step_limit: int) -> Callable[[dict[str, Any], int], Any] | None:
    """One expression as a generated function of (bindings, steps) returning its value (for tests and tools).

    A fault raises :class:`_Fault`; the closures of :mod:`..compile` give the error its text.
    """
    got = _generate(res, step_limit, lambda gen: gen.expr(node), init_lets=True)
    return got[0] if got is not None else None
