"""One rule's decision procedure behind one interface, whichever back-end runs it.

The engine decides a candidate through a :class:`Backend` only: ``decide(roots, steps)`` takes the candidate's
root bindings (a dict, which the closures may memoise `let`s into) and the steps already spent, and returns
either the steps spent when every check passed (:data:`Fired`, an int) or a :data:`Miss`,
``(site, how, steps, values)``: `site` indexes :attr:`Backend.sites` (the failing check, its check path and the
`for_each` groups around it), `how` is :data:`FAILED` (the condition did not hold), :data:`FAULT` (evaluating
it raised; :meth:`Backend.fault` gives the exact error) or :data:`OVER_BUDGET`, and `values` holds the elements
the enclosing groups had bound, outermost first (each followed by the group's visited elements when it keeps
them). :meth:`Backend.act` then evaluates the actions and applies them as one unit, :meth:`Backend.skip` tells
a graph a skip condition excludes, :meth:`Backend.trace` decides while reporting every check, and
:meth:`Backend.misses` goes on past a failing check (near misses, opt-in: the normal path never pays for it).

Two back-ends implement it. :class:`Backend` itself runs the closures of :mod:`.compile`: the reference, which
also traces, gives a fault's text and lists near misses. The generated code of :mod:`.codegen` subclasses it
for the hot path (`decide`, `act`, `skip`) and inherits the rest. The tuple shapes are plain tuples because
the generated function builds them without a call (a candidate's miss is the common case).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .compile import BudgetError, CompiledCheck, CompiledRule, Effect, Env, EvalError, budget_error, restore, saved

# how a candidate stopped at a site
FAILED = 0  # the check's condition did not hold
FAULT = 1  # evaluating it raised (`Backend.fault` gives the exact error)
OVER_BUDGET = 2  # a loop would have exceeded the step budget

Fired = int  # the steps spent, when every check passed
Miss = tuple[int, int, int, tuple[Any, ...]]  # (site, how, steps, group values)
DecideFn = Callable[[dict[str, Any], int], "Fired | Miss"]
# called by `trace` per check evaluated: (site, passed, group values, note: an error or a group's element count)
OnCheck = Callable[[int, bool, tuple[Any, ...], "str | None"], None]

_NO_LIMIT = 1 << 62


@dataclass(frozen=True)
class Site:
    """A place where a candidate can stop: a check, its check path, and the groups whose elements are bound."""

    check: CompiledCheck
    path: tuple[str, ...]
    groups: tuple[CompiledCheck, ...]


def sites_of(checks: Sequence[CompiledCheck]) -> tuple[Site, ...]:
    """Every check of a rule as a site, in evaluation order (a group before its sub-checks): the numbering both
    back-ends use."""
    out: list[Site] = []

    def walk(ccs: Sequence[CompiledCheck], path: tuple[str, ...], groups: tuple[CompiledCheck, ...]) -> None:
        for cc in ccs:
            here = (*path, cc.check.name)
            out.append(Site(cc, here, groups))
            if cc.fn is None:
                walk(cc.subs, here, (*groups, cc))

    walk(checks, (), ())
    return tuple(out)


class _Stop(Exception):
    """Where the closures stopped: the site, how, and the error of a fault (raised to leave every loop)."""

    def __init__(self, site: int, how: int, values: tuple[Any, ...], error: EvalError | None = None) -> None:
        super().__init__(site)
        self.site = site
        self.how = how
        self.values = values
        self.error = error


class Backend:
    """A rule's decision procedure, run by the closures (the reference every back-end inherits)."""

    def __init__(self, rule: CompiledRule) -> None:
        self.rule = rule
        self.sites = sites_of(rule.checks)
        self._site_of = {id(s.check): k for k, s in enumerate(self.sites)}
        #: decide(roots, steps) -> Fired | Miss (an attribute: the generated back-end sets its function here)
        self.decide: DecideFn = self._decide

    # ---- the interface -----------------------------------------------------------------------------------------
    def _decide(self, roots: dict[str, Any], steps: int) -> Fired | Miss:
        env = Env(roots, self.rule.step_limit)
        env.steps = steps
        try:
            self._checks(self.rule.checks, env, (), None, None)
        except _Stop as stop:
            return (stop.site, stop.how, env.steps, stop.values)
        return env.steps

    def act(self, roots: dict[str, Any], steps: int, apply: bool) -> EvalError | tuple[str, ...]:
        """Evaluate every action (from `roots`, having spent `steps`), then, when `apply`, make their writes as one
        unit; the error of an action that failed (nothing written), else what the structural actions changed in
        the graph (one line each; () for attribute writes only)."""
        env = Env(roots, self.rule.step_limit)
        env.steps = steps
        effects: list[Effect] = []
        try:
            for act in self.rule.actions:
                act(env, effects)
        except EvalError as exc:
            return exc
        changes: list[str] = []
        if apply:
            for setter, target, attr, value in effects:
                done = setter(target, attr, value)
                if done is not None:  # a structural action says what it did
                    changes.append(str(done))
        return tuple(changes)

    def skip(self, roots: dict[str, Any]) -> tuple[int, EvalError | None] | None:
        """The first skip condition that holds for a graph (its index, and the error when evaluating it failed:
        a graph that cannot be decided is left alone), else None."""
        env = Env(dict(roots), self.rule.step_limit)
        for k, (_, fn) in enumerate(self.rule.skips):
            try:
                if fn(env):
                    return k, None
            except EvalError as exc:
                return k, exc
        return None

    def fault(self, miss: Miss, roots: dict[str, Any]) -> EvalError:
        """The exact error of a miss whose `how` is FAULT or OVER_BUDGET (the closures re-run that one check)."""
        k, how, steps, values = miss
        if how == OVER_BUDGET:
            return budget_error(self.rule.step_limit)
        env = Env(self.bound(k, values, roots), _NO_LIMIT)  # no budget left to exceed: it stayed within it
        env.steps = steps
        site = self.sites[k]
        try:
            self._check(site.check, env, values, None, None)
        except _Stop as stop:
            if stop.error is not None:
                return stop.error
        raise AssertionError(f"{self.rule.name}: the back-ends disagree at {'/'.join(site.path)}")  # pragma: no cover

    def trace(self, roots: dict[str, Any], on_check: OnCheck) -> Fired | Miss:
        """`decide`, by the closures, calling `on_check` for every check evaluated."""
        env = Env(roots, self.rule.step_limit)
        try:
            self._checks(self.rule.checks, env, (), on_check, None)
        except _Stop as stop:
            return (stop.site, stop.how, env.steps, stop.values)
        return env.steps

    def misses(self, roots: dict[str, Any], max_failed: int) -> list[tuple[Miss, EvalError | None]] | None:
        """Every check that fails for a candidate, going on past each (a check fails once, at its first failing
        element): its miss and, for a fault, the error; None as soon as more than `max_failed` fail."""
        env = Env(dict(roots), self.rule.step_limit)
        found: dict[int, tuple[Miss, EvalError | None]] = {}
        try:
            self._checks(self.rule.checks, env, (), None, (found, max_failed))
        except _Stop as stop:  # over budget (nothing more can be evaluated), or too many
            if stop.how != OVER_BUDGET:
                return None
            found.setdefault(stop.site, ((stop.site, stop.how, env.steps, stop.values), stop.error))
            if len(found) > max_failed:
                return None
        return [found[k] for k in sorted(found)]

    def bound(self, k: int, values: tuple[Any, ...], roots: dict[str, Any]) -> dict[str, Any]:
        """`roots` with the variables of the groups around site `k` bound to a miss's `values` (each group's
        element, and its visited elements where it keeps them)."""
        vs = dict(roots)
        if values:
            at = 0
            for g in self.sites[k].groups:
                vs[g.check.var or "_"] = values[at]
                if g.visited is not None:
                    vs[g.visited] = values[at + 1]
                at += 1 if g.visited is None else 2
        return vs

    # ---- the closures' evaluation -------------------------------------------------------------------------------
    def _checks(
        self,
        ccs: Sequence[CompiledCheck],
        env: Env,
        values: tuple[Any, ...],
        on_check: OnCheck | None,
        collect: tuple[dict[int, tuple[Miss, EvalError | None]], int] | None,
    ) -> None:
        """Evaluate `ccs` in order; a miss raises :class:`_Stop` (or, when collecting, is kept and passed)."""
        for cc in ccs:
            if collect is None:
                self._check(cc, env, values, on_check, None)
                continue
            try:
                self._check(cc, env, values, None, collect)
            except _Stop as stop:
                if stop.how == OVER_BUDGET:
                    raise
                found, limit = collect
                found.setdefault(stop.site, ((stop.site, stop.how, env.steps, stop.values), stop.error))
                if len(found) > limit:
                    raise

    def _check(
        self,
        cc: CompiledCheck,
        env: Env,
        values: tuple[Any, ...],
        on_check: OnCheck | None,
        collect: tuple[dict[int, tuple[Miss, EvalError | None]], int] | None,
    ) -> None:
        c, k = cc.check, self._site_of[id(cc)]
        try:
            if cc.fn is None:
                self._group(cc, k, env, values, on_check, collect)
                return
            try:
                value = bool(cc.fn(env))
            except EvalError as exc:
                if on_check is not None:
                    on_check(k, False, values, f"error: {exc.message}")
                raise self._stopped(k, exc, values) from None
            ok = value if c.kind == "require" else not value
            if on_check is not None:
                on_check(k, ok, values, None)
            if not ok:
                raise _Stop(k, FAILED, values)
        finally:
            for name in cc.lets:
                env.vars.pop(name, None)

    @staticmethod
    def _stopped(k: int, exc: EvalError, values: tuple[Any, ...]) -> _Stop:
        return _Stop(k, OVER_BUDGET if isinstance(exc, BudgetError) else FAULT, values, exc)

    def _group(
        self,
        cc: CompiledCheck,
        k: int,
        env: Env,
        values: tuple[Any, ...],
        on_check: OnCheck | None,
        collect: tuple[dict[int, tuple[Miss, EvalError | None]], int] | None,
    ) -> None:
        c, vs = cc.check, env.vars
        assert cc.coll is not None and c.var is not None
        try:
            items = cc.coll(env)
            if items is None:
                assert c.coll is not None
                raise EvalError(f"for_each over null (`{c.coll.text}`)")
            env.charge(len(items))
        except EvalError as exc:
            raise self._stopped(k, exc, values) from None
        prev = saved(vs, c.var)
        key = cc.visited  # the elements visited so far, for `earlier(...)`
        visited: list[Any] = []
        prev_visited = saved(vs, key) if key is not None else None
        if key is not None:
            vs[key] = visited
        try:
            for x in items:
                vs[c.var] = x
                if cc.where is not None:
                    try:
                        if not cc.where(env):
                            continue
                    except EvalError as exc:
                        raise self._stopped(k, exc, values) from None
                # the visited elements as they stand (copied where misses are kept while evaluation goes on)
                inner = (*values, x) if key is None else (*values, x, visited if collect is None else list(visited))
                self._checks(cc.subs, env, inner, on_check, collect)
                for sub in cc.subs:  # group lets are per element
                    for name in sub.lets:
                        vs.pop(name, None)
                for name in cc.lets:
                    vs.pop(name, None)
                if key is not None:
                    visited.append(x)
        except EvalError as exc:  # pragma: no cover - every evaluation above turns its errors into a stop
            raise self._stopped(k, exc, values) from None
        finally:
            restore(vs, c.var, prev)
            if key is not None:
                restore(vs, key, prev_visited)
        if on_check is not None:
            on_check(k, True, values, f"{len(items)} element(s)")


def backend_of(rule: CompiledRule) -> Backend:
    """The back-end that decides `rule`: its generated code when it has some, else its closures (made once)."""
    fast = rule.fast
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    got = rule.__dict__.get("_closures")
    if got is None:
        got = rule.__dict__["_closures"] = Backend(rule)
    return got  # type: ignore[no-any-return]
