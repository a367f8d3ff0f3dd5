"""Runs compiled rules over a graph with GE's sequential semantics, recording a decision per candidate.

The engine knows graphs only through a small :class:`GraphAccess` the domain provides (the graph's nodes in
topological order, a node's op type and name, the root bindings) and through the catalogue; it has no
Concat- or GE-specific code. Candidates are indexed by op type and visited in topological order; a rule's
checks run in their declared order and stop at the first failure; when all pass, its actions are evaluated
first and then applied as one unit, so later candidates see them (cascades, producer locks) and a failing
action leaves nothing half-written. Dry-run decides without applying.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..dsl.catalogue import Catalogue
from ..dsl.codegen import FAILED, FAULT, OVER_BUDGET, FastRule, Site
from ..dsl.compile import CompiledCheck, CompiledRule, Effect, Env, EvalError, budget_error, restore, saved
from ..dsl.rules import GraphSkip
from .decisions import Decision, Reason, RuleStats, TraceEntry
from .explain import Explainer

# describes the elements a miss reported (its group values) as the record's `elements`
Describer = Callable[[tuple[Any, ...]], tuple[str, ...]]


class GraphAccess(Protocol):
    """What the engine needs to know about the domain's graphs."""

    def nodes(self, graph: Any) -> Sequence[Any]:
        """The graph's own nodes in topological order."""

    def of_types(self, nodes: Sequence[Any], op_types: frozenset[str]) -> list[Any]:
        """The nodes whose op type is one of `op_types`, in the given order (one scan indexes candidates)."""

    def op_type(self, node: Any) -> str:
        """The op type used to index candidates."""

    def node_name(self, node: Any) -> str:
        """The node's name, for records."""

    def graph_name(self, graph: Any) -> str:
        """The graph's name, for records."""

    def bindings(self, graph: Any, node: Any) -> dict[str, Any]:
        """The root variables for a candidate (e.g. node, graph), as a new dict (the engine binds more in it)."""

    def graph_bindings(self, graph: Any) -> dict[str, Any]:
        """The root variables for graph-level exclusions (e.g. graph)."""


@dataclass
class _Miss:
    check: CompiledCheck
    path: tuple[str, ...]
    elements: tuple[str, ...]
    env_vars: dict[str, Any]
    error: EvalError | None = None


@dataclass(slots=True)
class RuleRun:
    """The decisions and counters of one rule over one graph."""

    rule: str
    decisions: list[Decision] = field(default_factory=list)
    stats: RuleStats = field(default_factory=lambda: RuleStats(""))


class Engine:
    """Evaluates compiled rules over graphs."""

    def __init__(self, access: GraphAccess, catalogue: Catalogue) -> None:
        self.access = access
        self.catalogue = catalogue
        self._explainers: dict[int, Explainer] = {}
        # per generated-code site: each enclosing group's variable, its element's describer and place in a miss's values
        self._site_groups: dict[int, tuple[Site, tuple[tuple[str, Callable[[Any], str], int, str | None], ...]]] = {}
        # per generated function: for each of its sites, the function describing a miss's elements (made on use)
        self._describers: dict[int, tuple[FastRule, list[Describer | None]]] = {}

    def explainer(self, rule: CompiledRule) -> Explainer:
        """The explainer of `rule` (one per rule)."""
        ex = self._explainers.get(id(rule))
        if ex is None:
            ex = self._explainers[id(rule)] = Explainer(rule, self.catalogue)
        return ex

    # ---- running -------------------------------------------------------------------------------------------
    def candidates(self, nodes: Sequence[Any], op_types: frozenset[str] | None) -> Sequence[Any]:
        """The nodes of `nodes` a rule matching `op_types` decides (None: every one), in their order: one scan
        (a caller deciding several rules over one graph keeps what it found, as a pass run does)."""
        return nodes if op_types is None else self.access.of_types(nodes, op_types)

    def run(
        self,
        rule: CompiledRule,
        graph: Any,
        *,
        dry_run: bool = False,
        trace_node: str | None = None,
        explain: bool = True,
    ) -> RuleRun:
        """Decide every candidate of `rule` in `graph` (the graph's own nodes, not its subgraphs').

        With `explain` false, a miss (or a skipped graph's candidate) records its check, path, elements and error
        but no :class:`Reason` (what a compile needs; `explain` and `optimize` build reasons, and a traced node
        always gets one)."""
        run = RuleRun(rule.name, stats=RuleStats(rule.name))
        candidates = self.candidates(self.access.nodes(graph), rule.match_types)
        if candidates:
            self.run_into(rule, graph, candidates, run.decisions, run.stats, dry_run, trace_node, explain)
        return run

    def run_into(
        self,
        rule: CompiledRule,
        graph: Any,
        candidates: Sequence[Any],
        decisions: list[Decision],
        stats: RuleStats,
        dry_run: bool = False,
        trace_node: str | None = None,
        explain: bool = True,
    ) -> None:
        """:meth:`run` on `graph`'s `candidates` (in order), appending to `decisions` and counting (and timing)
        them in `stats`: a pass collects every graph's records in one list and one set of counters."""
        t0 = time.perf_counter()
        fast = rule.fast
        skip = self._graph_skip(rule, graph, explain or trace_node is not None) if rule.skips else None
        if skip is not None:
            stats.graphs_skipped += 1
            self._record_all(rule, graph, skip, candidates, decisions, stats, dry_run)
        elif fast is not None:  # counts its records as it makes them
            self._run_fast(rule, fast, graph, candidates, dry_run, explain, trace_node, decisions, stats)
        else:
            node_name, start = self.access.node_name, len(decisions)
            for node in candidates:
                tracing = node_name(node) == trace_node
                decisions.append(
                    self.decide(rule, graph, node, dry_run=dry_run, trace=tracing, explain=explain or tracing)
                )
            stats.add_all(decisions[start:] if start else decisions)
        stats.seconds += time.perf_counter() - t0

    def _record_all(
        self,
        rule: CompiledRule,
        graph: Any,
        skip: Decision,
        candidates: Sequence[Any],
        decisions: list[Decision],
        stats: RuleStats,
        dry_run: bool,
    ) -> None:
        """Every candidate of a graph a skip condition excludes gets `skip`'s record, counted in `stats`."""
        access = self.access
        gname, node_name, op_type = access.graph_name(graph), access.node_name, access.op_type
        start = len(decisions)
        for node in candidates:
            decisions.append(
                Decision(
                    rule.name,
                    gname,
                    node_name(node),
                    op_type(node),
                    False,
                    skip.check,
                    skip.check_path,
                    "skip_graph",
                    skip.check_span,
                    (),
                    skip.reason,
                    skip.error,
                    dry_run,
                )
            )
        stats.add_all(decisions[start:])

    def _graph_skip(self, rule: CompiledRule, graph: Any, explain: bool) -> Decision | None:
        """The record every candidate of `graph` gets when one of `rule`'s skip conditions (it has some) holds
        (with its explanation when `explain`, as a miss has), else None."""
        fast = rule.fast
        if fast is not None and fast.skips is not None:
            try:
                k = fast.skips(self.access.graph_bindings(graph), 0)
            except Exception:  # a fault or the step budget: the closures below give the exact error
                pass
            else:
                if k < 0:
                    return None
                if not explain:
                    return self._skip_decision(rule, graph, rule.skips[k][0], None, None)
        env = Env(dict(self.access.graph_bindings(graph)), rule.step_limit)
        for skip, fn in rule.skips:
            try:
                hit = bool(fn(env))
                err = None
            except EvalError as exc:
                hit, err = True, exc.message  # cannot decide: leave the graph alone, as GE's asserts do
            if hit:
                reason = None if err or not explain else self.explainer(rule).why(skip.when, skip.when.node, env, False)
                return self._skip_decision(rule, graph, skip, reason, err)
        return None

    def _skip_decision(
        self, rule: CompiledRule, graph: Any, skip: GraphSkip, reason: Reason | None, err: str | None
    ) -> Decision:
        """The record of a graph that `skip` excludes (every candidate gets one like it)."""
        return Decision(
            rule.name,
            self.access.graph_name(graph),
            "",
            "",
            False,
            skip.name,
            (skip.name,),
            "skip_graph",
            skip.span,
            (),
            reason,
            err,
        )

    def decide(
        self,
        rule: CompiledRule,
        graph: Any,
        node: Any,
        *,
        dry_run: bool = False,
        trace: bool = False,
        explain: bool = True,
    ) -> Decision:
        """Run `rule`'s checks on one candidate; apply its actions when all pass (unless dry_run)."""
        access = self.access
        gname, nname, otype = access.graph_name(graph), access.node_name(node), access.op_type(node)
        fast: FastRule | None = rule.fast
        if fast is not None and not trace:
            out: list[Decision] = []
            self._run_fast(rule, fast, graph, (node,), dry_run, explain, None, out)
            return out[0]
        # the closures, checking in order (and tracing every check when asked)
        env = Env(access.bindings(graph, node), rule.step_limit)
        entries: list[TraceEntry] | None = [] if trace else None
        for cc in rule.checks:
            miss = self._check(rule, cc, env, (), (), entries)
            if miss is not None:
                return self._miss_decision(rule, miss, gname, nname, otype, dry_run, entries, explain)
        return self._act(rule, env.vars, env.steps, env, gname, nname, otype, dry_run, entries)

    def _run_fast(
        self,
        rule: CompiledRule,
        fast: FastRule,
        graph: Any,
        candidates: Sequence[Any],
        dry_run: bool,
        explain: bool,
        trace_node: str | None,
        out: list[Decision],
        stats: RuleStats | None = None,
    ) -> None:
        """Decide `candidates` in order by the generated function, appending to `out` and counting them in `stats`
        (the node named `trace_node` is decided by the closures, with its trace). One loop: a pass decides every
        candidate here, and makes the usual records (a fired candidate, a compile's plain miss) in place, as the
        hand-written pass does; anything else (a fault, a miss to explain, an action the closures must run) goes
        through the general path and is counted by `RuleStats.add`."""
        access = self.access
        gname = access.graph_name(graph)
        bindings, node_name, op_type = access.bindings, access.node_name, access.op_type
        fn, actions, sites, name = fast.fn, fast.actions, fast.sites, rule.name
        describers = self._site_describers(fast)
        misses: dict[str, int] = {} if stats is None else stats.misses
        apply, append = not dry_run, out.append
        fired = missed = 0  # the records made in place; the others are counted as they are made
        for node in candidates:
            if trace_node is not None and node_name(node) == trace_node:
                d = self.decide(rule, graph, node, dry_run=dry_run, trace=True)
            else:
                roots = bindings(graph, node)
                got = fn(roots, 0)
                if got.__class__ is int:
                    if actions is not None:
                        try:
                            actions(roots, got, apply)  # evaluates them all, then writes (unless a dry run)
                        except Exception:  # a fault: the closures' actions give the exact error (or raise theirs)
                            pass
                        else:
                            append(Decision(name, gname, node_name(node), op_type(node), True, dry_run=dry_run))
                            fired += 1
                            continue
                    d = self._act(rule, roots, got, None, gname, node_name(node), op_type(node), dry_run, None)
                else:
                    k, how, _, values = got  # type: ignore[misc]
                    if how == FAILED and not explain:  # a compile's usual miss: the record, no explanation
                        site = sites[k]
                        c = site.check.check
                        describe = describers[k] or self._describe_site(rule, fast, k)
                        append(
                            Decision(
                                name,
                                gname,
                                node_name(node),
                                op_type(node),
                                False,
                                c.name,
                                site.path,
                                c.kind,
                                c.span,
                                describe(values),
                                dry_run=dry_run,
                            )
                        )
                        misses[c.name] = misses.get(c.name, 0) + 1
                        missed += 1
                        continue
                    miss = self._fast_miss(rule, fast, got, roots)  # type: ignore[arg-type]
                    d = self._miss_decision(rule, miss, gname, node_name(node), op_type(node), dry_run, None, explain)
            append(d)
            if stats is not None:
                stats.add(d)
        if stats is not None:
            stats.candidates += fired + missed
            stats.fired += fired

    def _act(
        self,
        rule: CompiledRule,
        roots: dict[str, Any],
        steps: int,
        env: Env | None,
        gname: str,
        nname: str,
        otype: str,
        dry_run: bool,
        entries: list[TraceEntry] | None,
    ) -> Decision:
        """A candidate passed every check: evaluate all its actions by the closures, then apply their effects as
        one unit (unless dry_run). `env` is the closures' environment when they decided (the actions run in it);
        None when the generated function decided from `roots` having spent `steps` and has no generated actions,
        or they faulted (the closures give the exact error)."""
        effects: list[Effect] = []
        try:
            if env is None:
                env = Env(roots, rule.step_limit)
                env.steps = steps
            for act in rule.actions:
                act(env, effects)
        except EvalError as exc:
            return Decision(
                rule.name,
                gname,
                nname,
                otype,
                False,
                "actions",
                ("actions",),
                "action",
                None,
                (),
                None,
                f"an action failed, nothing was changed: {exc.message}",
                dry_run,
                tuple(entries or ()),
            )
        changes: list[str] = []
        if not dry_run:
            for setter, target, attr, value in effects:
                done = setter(target, attr, value)
                if done is not None:  # a structural action says what it did
                    changes.append(str(done))
        return Decision(
            rule.name, gname, nname, otype, True, dry_run=dry_run, trace=tuple(entries or ()), changes=tuple(changes)
        )

    def _fast_miss(
        self, rule: CompiledRule, fast: FastRule, got: tuple[int, int, int, tuple[Any, ...]], roots: dict[str, Any]
    ) -> _Miss:
        """The miss the generated function located, as `_check` would have recorded it."""
        k, how, steps, values = got
        site = fast.sites[k]
        vs = dict(roots)
        elements = self._describe(rule, fast, k, values)
        if values:  # bind each group's element, and the visited elements of the groups that keep them
            for var, _, at, visited in self._site_vars(rule, site):
                vs[var] = values[at]
                if visited is not None:
                    vs[visited] = values[at + 1]
        if how == OVER_BUDGET:
            return _Miss(site.check, site.path, elements, vs, budget_error(rule.step_limit))
        if how != FAULT:
            return _Miss(site.check, site.path, elements, vs)
        # a fault: the closures re-run this one check to give the exact error (with no budget left to exceed,
        # since the generated code stayed within it)
        env = Env(vs, 1 << 62)
        env.steps = steps
        miss = self._check(rule, site.check, env, site.path[:-1], elements, None)
        if miss is None or miss.error is None:  # pragma: no cover - the two compilations disagree
            raise AssertionError(f"{rule.name}: generated code and closures disagree at {'/'.join(site.path)}")
        return miss

    def _describe(self, rule: CompiledRule, fast: FastRule, k: int, values: tuple[Any, ...]) -> tuple[str, ...]:
        """The descriptions of the elements a miss at site `k` of `fast` reported."""
        return (self._site_describers(fast)[k] or self._describe_site(rule, fast, k))(values)

    def _site_describers(self, fast: FastRule) -> list[Describer | None]:
        """Per site of `fast`, the function describing a miss's elements there (None until its first miss)."""
        known = self._describers.get(id(fast))
        if known is None or known[0] is not fast:
            known = self._describers[id(fast)] = (fast, [None] * len(fast.sites))
        return known[1]

    def _describe_site(self, rule: CompiledRule, fast: FastRule, k: int) -> Describer:
        """Make (and keep) the describer of site `k` of `fast`."""
        describe = self._site_describers(fast)[k] = self._describer(rule, fast.sites[k])
        return describe

    def _describer(self, rule: CompiledRule, site: Site) -> Callable[[tuple[Any, ...]], tuple[str, ...]]:
        """How the elements a miss at `site` reported are described, as one function of the values."""
        groups = self._site_vars(rule, site)
        plan = [(shown, at) for _, shown, at, _ in groups]
        if not plan:
            return lambda values: ()
        if len(plan) == 1:  # the usual case: one group encloses the check
            return self.explainer(rule).values_describer(groups[0][0], self._elem_type(rule, site.groups[0]), 0)
        return lambda values: tuple([shown(values[i]) for shown, i in plan]) if values else ()

    def _site_vars(
        self, rule: CompiledRule, site: Site
    ) -> tuple[tuple[str, Callable[[Any], str], int, str | None], ...]:
        """For each group enclosing `site`: its variable, how its element is described, where the element is in
        a miss's values, and the name of its visited elements when it keeps them (they follow the element).
        Worked out once per site."""
        known = self._site_groups.get(id(site))
        if known is None or known[0] is not site:
            out = []
            ex = self.explainer(rule)
            at = 0
            for g in site.groups:
                var = g.check.var
                assert var is not None
                out.append((var, ex.element_shower(var, self._elem_type(rule, g)), at, g.visited))
                at += 1 if g.visited is None else 2
            known = self._site_groups[id(site)] = (site, tuple(out))
        return known[1]

    @staticmethod
    def _elem_type(rule: CompiledRule, cc: CompiledCheck) -> Any:
        assert cc.check.coll is not None
        t = rule.res.type_of(cc.check.coll.node)
        return t.elem if t.is_list and t.elem is not None else t

    def _check(
        self,
        rule: CompiledRule,
        cc: CompiledCheck,
        env: Env,
        path: tuple[str, ...],
        elements: tuple[str, ...],
        entries: list[TraceEntry] | None,
    ) -> _Miss | None:
        c = cc.check
        here = (*path, c.name)
        vs = env.vars
        try:
            if cc.fn is not None:
                try:
                    value = bool(cc.fn(env))
                except EvalError as exc:
                    if entries is not None:
                        entries.append(TraceEntry(here, False, c.span, elements, f"error: {exc.message}"))
                    return _Miss(cc, here, elements, dict(vs), exc)
                ok = value if c.kind == "require" else not value
                if entries is not None:
                    entries.append(TraceEntry(here, ok, c.span, elements))
                return None if ok else _Miss(cc, here, elements, dict(vs))
            return self._group(rule, cc, env, here, elements, entries)
        finally:
            for name in cc.lets:
                vs.pop(name, None)

    def _group(
        self,
        rule: CompiledRule,
        cc: CompiledCheck,
        env: Env,
        here: tuple[str, ...],
        elements: tuple[str, ...],
        entries: list[TraceEntry] | None,
    ) -> _Miss | None:
        c = cc.check
        vs = env.vars
        assert cc.coll is not None and c.var is not None and c.coll is not None
        try:
            items = cc.coll(env)
            if items is None:
                raise EvalError(f"for_each over null (`{c.coll.text}`)")
            env.charge(len(items))
        except EvalError as exc:
            return _Miss(cc, here, elements, dict(vs), exc)
        elem_t = self._elem_type(rule, cc)
        ex = self.explainer(rule)
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
                        return _Miss(cc, here, elements, dict(vs), exc)
                inner = (*elements, ex.describe_element(c.var, x, elem_t))
                for sub in cc.subs:
                    miss = self._check(rule, sub, env, here, inner, entries)
                    if miss is not None:
                        return miss
                for sub in cc.subs:  # group lets are per element
                    for name in sub.lets:
                        vs.pop(name, None)
                for name in cc.lets:
                    vs.pop(name, None)
                if key is not None:
                    visited.append(x)
        except EvalError as exc:
            return _Miss(cc, here, elements, dict(vs), exc)
        finally:
            restore(vs, c.var, prev)
            if key is not None:
                restore(vs, key, prev_visited)
        if entries is not None:
            entries.append(TraceEntry(here, True, c.span, elements, f"{len(items)} element(s)"))
        return None

    def _miss_decision(
        self,
        rule: CompiledRule,
        miss: _Miss,
        gname: str,
        nname: str,
        otype: str,
        dry_run: bool,
        entries: list[TraceEntry] | None,
        explain: bool = True,
    ) -> Decision:
        c = miss.check.check
        reason: Reason | None = None
        error = None
        if miss.error is not None:
            error = f"evaluation error: {miss.error.message}"
            node = miss.error.node
            expr = c.expr or c.coll
            if node is not None and expr is not None and explain:
                reason = Reason(expr.text[node.start : node.end], expr.src.span(node.start, node.end), error)
        elif c.expr is not None and explain:
            env = Env(dict(miss.env_vars), rule.step_limit)
            reason = self.explainer(rule).why(c.expr, c.expr.node, env, c.kind == "require")
        return Decision(
            rule.name,
            gname,
            nname,
            otype,
            False,
            c.name,
            miss.path,
            c.kind,
            c.span,
            miss.elements,
            reason,
            error,
            dry_run,
            tuple(entries or ()),
        )
