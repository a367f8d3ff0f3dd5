"""Runs compiled rules over a graph with GE's sequential semantics, recording a decision per candidate.

The engine knows graphs only through a small :class:`GraphAccess` the domain provides (the graph's nodes in
topological order, a node's op type and name, the root bindings) and through the catalogue; it has no
Concat- or GE-specific code. Candidates are indexed by op type and visited in topological order; a rule's
checks run in their declared order and stop at the first failure; when all pass, its actions are evaluated
first and then applied as one unit, so later candidates see them (cascades, producer locks) and a failing
action leaves nothing half-written. Dry-run decides without applying.

A rule is decided through one interface, :class:`~rulepass.dsl.backend.Backend` (`decide` -> fired or a miss at a
site with the values of its groups; `act`, `skip`, `trace`, `fault`, `misses`): the engine neither knows nor
cares whether generated code or the closures answer. It makes the records, explanations and counters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..dsl.backend import FAILED, Backend, Miss, Site, backend_of
from ..dsl.catalogue import Catalogue
from ..dsl.compile import CompiledCheck, CompiledRule, Env, EvalError
from .decisions import Decision, Reason, RuleStats, TraceEntry
from .explain import Explainer

_CHECK_KINDS = ("require", "reject_if", "group")  # a miss at one of the rule's checks (not a skip or an action)

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
class NearMisses:
    """Opt-in, for a pass run: every candidate that misses at a check is evaluated again going on past its first
    failing check (by the closures, at the moment it was decided), and kept when at most `max_failed` checks fail:
    its decision and one record per failing check (check, path, elements, explanation or error)."""

    max_failed: int
    found: list[tuple[Decision, tuple[Decision, ...]]] = field(default_factory=list)


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
        # per site: each enclosing group's variable, its element's describer and place in a miss's values
        self._site_groups: dict[int, tuple[Site, tuple[tuple[str, Callable[[Any], str], int], ...]]] = {}
        # per back-end: for each of its sites, the function describing a miss's elements (made on use)
        self._describers: dict[int, tuple[Backend, list[Describer | None]]] = {}

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
        near: NearMisses | None = None,
    ) -> None:
        """:meth:`run` on `graph`'s `candidates` (in order), appending to `decisions` and counting (and timing)
        them in `stats`: a pass collects every graph's records in one list and one set of counters. With `near`,
        the near misses are collected too (the decisions are the same)."""
        t0 = time.perf_counter()
        backend = backend_of(rule)
        skip = self._graph_skip(rule, backend, graph, explain or trace_node is not None) if rule.skips else None
        if skip is not None:
            stats.graphs_skipped += 1
            self._record_all(rule, graph, skip, candidates, decisions, stats, dry_run)
        elif near is not None:
            for node in candidates:
                self._near(rule, backend, graph, node, dry_run, explain, trace_node, decisions, stats, near)
        else:  # counts its records as it makes them
            self._decide_all(rule, backend, graph, candidates, dry_run, explain, trace_node, decisions, stats)
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

    def _graph_skip(self, rule: CompiledRule, backend: Backend, graph: Any, explain: bool) -> Decision | None:
        """The record every candidate of `graph` gets when one of `rule`'s skip conditions (it has some) holds
        (with its explanation when `explain`, as a miss has), else None."""
        got = backend.skip(self.access.graph_bindings(graph))
        if got is None:
            return None
        k, err = got
        skip = rule.skips[k][0]
        reason = None
        if err is None and explain:
            env = Env(dict(self.access.graph_bindings(graph)), rule.step_limit)
            reason = self.explainer(rule).why(skip.when, skip.when.node, env, False)
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
            err.message if err is not None else None,
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
        out: list[Decision] = []
        traced = self.access.node_name(node) if trace else None
        self._decide_all(rule, backend_of(rule), graph, (node,), dry_run, explain, traced, out)
        return out[0]

    def _decide_all(
        self,
        rule: CompiledRule,
        backend: Backend,
        graph: Any,
        candidates: Sequence[Any],
        dry_run: bool,
        explain: bool,
        trace_node: str | None,
        out: list[Decision],
        stats: RuleStats | None = None,
    ) -> None:
        """Decide `candidates` in order by `backend`, appending to `out` and counting them in `stats` (the node
        named `trace_node` is decided with its trace). One loop: a pass decides every candidate here, and makes
        the usual records (a fired candidate, a compile's plain miss) in place, as the hand-written pass does;
        anything else (a fault, a miss to explain, an action that failed) is counted by `RuleStats.add`."""
        access = self.access
        gname = access.graph_name(graph)
        bindings, node_name, op_type = access.bindings, access.node_name, access.op_type
        decide, act, sites, name = backend.decide, backend.act, backend.sites, rule.name
        describers = self._site_describers(backend)
        misses: dict[str, int] = {} if stats is None else stats.misses
        apply, append = not dry_run, out.append
        fired = missed = 0  # the records made in place; the others are counted as they are made
        for node in candidates:
            if trace_node is not None and node_name(node) == trace_node:
                d = self._traced(rule, backend, graph, node, dry_run)
            else:
                roots = bindings(graph, node)
                got = decide(roots, 0)
                if got.__class__ is int:
                    done = act(roots, got, apply)  # type: ignore[arg-type]
                    if done.__class__ is tuple:  # what the structural actions changed, one line each
                        append(
                            Decision(name, gname, node_name(node), op_type(node), True, dry_run=dry_run, changes=done)  # type: ignore[arg-type]
                        )
                        fired += 1
                        continue
                    d = self._action_failed(rule, gname, node, done, dry_run, ())  # type: ignore[arg-type]
                else:
                    k, how, _, values = got  # type: ignore[misc]
                    if how == FAILED and not explain:  # a compile's usual miss: the record, no explanation
                        site = sites[k]
                        c = site.check.check
                        describe = describers[k] or self._describe_site(rule, backend, k)
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
                    d = self._miss_decision(rule, backend, got, roots, gname, node, dry_run, (), explain)  # type: ignore[arg-type]
            append(d)
            if stats is not None:
                stats.add(d)
        if stats is not None:
            stats.candidates += fired + missed
            stats.fired += fired

    def _near(
        self,
        rule: CompiledRule,
        backend: Backend,
        graph: Any,
        node: Any,
        dry_run: bool,
        explain: bool,
        trace_node: str | None,
        out: list[Decision],
        stats: RuleStats,
        near: NearMisses,
    ) -> None:
        """Decide one candidate as usual and, when it misses at a check, keep it as a near miss if at most
        `near.max_failed` of its checks fail (evaluated before any later candidate changes the graph)."""
        roots = self.access.bindings(graph, node)
        start = len(out)
        self._decide_all(rule, backend, graph, (node,), dry_run, explain, trace_node, out, stats)
        d = out[start]
        if d.fired or d.check_kind not in _CHECK_KINDS:
            return
        failed = backend.misses(roots, near.max_failed)
        if failed:
            gname = self.access.graph_name(graph)
            records = (self._miss_decision(rule, backend, m, roots, gname, node, dry_run, ()) for m, _ in failed)
            near.found.append((d, tuple(records)))

    def _traced(self, rule: CompiledRule, backend: Backend, graph: Any, node: Any, dry_run: bool) -> Decision:
        """One candidate decided with a trace entry per check evaluated (and a miss explained)."""
        entries: list[TraceEntry] = []

        def on_check(k: int, ok: bool, values: tuple[Any, ...], note: str | None) -> None:
            site = backend.sites[k]
            elements = self._describe(rule, backend, k, values)
            entries.append(TraceEntry(site.path, ok, site.check.check.span, elements, note or ""))

        gname = self.access.graph_name(graph)
        roots = self.access.bindings(graph, node)
        got = backend.trace(roots, on_check)
        if got.__class__ is not int:
            return self._miss_decision(rule, backend, got, roots, gname, node, dry_run, entries)  # type: ignore[arg-type]
        done = backend.act(roots, got, not dry_run)  # type: ignore[arg-type]
        if isinstance(done, EvalError):
            return self._action_failed(rule, gname, node, done, dry_run, entries)
        name, otype = self.access.node_name(node), self.access.op_type(node)
        return Decision(rule.name, gname, name, otype, True, dry_run=dry_run, trace=tuple(entries), changes=done)

    def _action_failed(
        self, rule: CompiledRule, gname: str, node: Any, err: EvalError, dry_run: bool, entries: Sequence[TraceEntry]
    ) -> Decision:
        """The record of a candidate whose checks all passed but one of whose actions failed (nothing written)."""
        error = f"an action failed, nothing was changed: {err.message}"
        return self._missed(
            rule, gname, node, ("actions", ("actions",), "action", None, ()), None, error, dry_run, entries
        )

    def _missed(
        self,
        rule: CompiledRule,
        gname: str,
        node: Any,
        where: tuple[str, tuple[str, ...], str, Any, tuple[str, ...]],
        reason: Reason | None,
        error: str | None,
        dry_run: bool,
        entries: Sequence[TraceEntry],
    ) -> Decision:
        """A miss's record: `where` is (check, check path, kind, span, elements)."""
        name, otype = self.access.node_name(node), self.access.op_type(node)
        return Decision(rule.name, gname, name, otype, False, *where, reason, error, dry_run, tuple(entries))

    def _miss_decision(
        self,
        rule: CompiledRule,
        backend: Backend,
        miss: Miss,
        roots: dict[str, Any],
        gname: str,
        node: Any,
        dry_run: bool,
        entries: Sequence[TraceEntry],
        explain: bool = True,
    ) -> Decision:
        """The record of a miss: its check, path and elements, with the error of a fault and, when `explain`, the
        reason (the failing sub-expression and its values)."""
        k, how, _, values = miss
        site = backend.sites[k]
        c = site.check.check
        reason: Reason | None = None
        error = None
        if how != FAILED:
            exc = backend.fault(miss, roots)
            error = f"evaluation error: {exc.message}"
            at, expr = exc.node, c.expr or c.coll
            if at is not None and expr is not None and explain:
                reason = Reason(expr.text[at.start : at.end], expr.src.span(at.start, at.end), error)
        elif c.expr is not None and explain:
            env = Env(backend.bound(k, values, roots), rule.step_limit)
            reason = self.explainer(rule).why(c.expr, c.expr.node, env, c.kind == "require")
        where = (c.name, site.path, c.kind, c.span, self._describe(rule, backend, k, values))
        return self._missed(rule, gname, node, where, reason, error, dry_run, entries)

    # ---- describing a miss's elements ------------------------------------------------------------------------
    def _describe(self, rule: CompiledRule, backend: Backend, k: int, values: tuple[Any, ...]) -> tuple[str, ...]:
        """The descriptions of the elements a miss at site `k` of `backend` reported."""
        return (self._site_describers(backend)[k] or self._describe_site(rule, backend, k))(values)

    def _site_describers(self, backend: Backend) -> list[Describer | None]:
        """Per site of `backend`, the function describing a miss's elements there (None until its first miss)."""
        known = self._describers.get(id(backend))
        if known is None or known[0] is not backend:
            known = self._describers[id(backend)] = (backend, [None] * len(backend.sites))
        return known[1]

    def _describe_site(self, rule: CompiledRule, backend: Backend, k: int) -> Describer:
        """Make (and keep) the describer of site `k` of `backend`."""
        describe = self._site_describers(backend)[k] = self._describer(rule, backend.sites[k])
        return describe

    def _describer(self, rule: CompiledRule, site: Site) -> Describer:
        """How the elements a miss at `site` reported are described, as one function of the values."""
        groups = self._site_vars(rule, site)
        plan = [(shown, at) for _, shown, at in groups]
        if not plan:
            return lambda values: ()
        if len(plan) == 1:  # the usual case: one group encloses the check
            return self.explainer(rule).values_describer(groups[0][0], self._elem_type(rule, site.groups[0]), 0)
        return lambda values: tuple([shown(values[i]) for shown, i in plan]) if values else ()

    def _site_vars(self, rule: CompiledRule, site: Site) -> tuple[tuple[str, Callable[[Any], str], int], ...]:
        """For each group enclosing `site`: its variable, how its element is described, and where the element is
        in a miss's values (a group that keeps its visited elements has them right after). Worked out once per
        site."""
        known = self._site_groups.get(id(site))
        if known is None or known[0] is not site:
            out = []
            ex = self.explainer(rule)
            at = 0
            for g in site.groups:
                var = g.check.var
                assert var is not None
                out.append((var, ex.element_shower(var, self._elem_type(rule, g)), at))
                at += 1 if g.visited is None else 2
            known = self._site_groups[id(site)] = (site, tuple(out))
        return known[1]

    @staticmethod
    def _elem_type(rule: CompiledRule, cc: CompiledCheck) -> Any:
        assert cc.check.coll is not None
        t = rule.res.type_of(cc.check.coll.node)
        return t.elem if t.is_list and t.elem is not None else t
