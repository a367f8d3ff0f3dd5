"""The pass manager: rule passes and Python passes behind one interface, ordered and gated as GE gates them.

A pass runs at the optimisation levels it registers (GE's `REG_PASS_OPTION(...).LEVELS`; the working level
defaults to O3, as GE's `ge.oo.level` does), unless disabled by name. `after`/`before` constraints resolve
into one deterministic order (a cycle or an unknown name is an error); among unconstrained passes the
registration order holds. Each pass runs on the root graph, then on every subgraph, as GE's PassManager does.
GE passes that are not ours appear as named placeholders, so rules can be ordered against them.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..base.diagnostics import did_you_mean, error
from ..dsl.check import order_cycle
from ..dsl.compile import CompiledRule
from ..dsl.load import RuleSet, load_rules, load_rules_from, rule_files, validate_rules
from ..dsl.rule_cache import Validation
from ..dsl.rules import LEVELS
from ..engine.decisions import Decision, Reason, RuleStats
from .facts import GeGraphAccess, ge_catalogue
from .ir import ComputeGraph, Node
from .memory.conflicts import resolve_layout_conflicts

if TYPE_CHECKING:  # the engine (and the code generator it runs) is loaded by the first pass manager built
    from ..engine.run import Engine, NearMisses

DEFAULT_LEVEL = "O3"
# GE's OptimizeStage2 tail (spec §2.1), then the passes after it. Ours are ordered against these names.
GE_PLACEHOLDER_PASSES = ("MemcpyAddrAsyncPass", "BufferPoolMemoryPass", "ParallelGroupPass")


@dataclass
class PassContext:
    """What a pass run may use: the engine, and whether to change the graph."""

    engine: Engine
    dry_run: bool = False
    trace_node: str | None = None
    explain: bool = True  # build the explanation (Reason) of every miss
    near: NearMisses | None = None  # opt-in: collect the near misses of the rule passes here
    # per (graph, op types): the graph's topological order when they were found, and the candidates (shared by
    # the rule passes; the order is kept, so an entry of a graph since freed is never taken for another's)
    _found: dict[tuple[int, frozenset[str] | None], tuple[list[Node], Sequence[Node]]] = field(default_factory=dict)

    def forget_indexes(self) -> None:
        """Drop the candidates found (after a pass that may have changed what they hold)."""
        self._found.clear()

    def candidates(self, graph: ComputeGraph, op_types: frozenset[str] | None) -> Sequence[Node]:
        """`graph`'s nodes of any of `op_types` (None: every node) in topological order, found by one scan and
        kept until the order changes (a pass edited the graph). A shared list: do not modify it."""
        order = graph.topological_order()
        key = (id(graph), op_types)
        got = self._found.get(key)
        if got is not None and got[0] is order:
            return got[1]
        found = self.engine.candidates(order, op_types)
        self._found[key] = (order, found)
        return found


class PassReport(NamedTuple):
    """One pass's outcome over a graph and its subgraphs: a value (a pass manager returns the same report of a
    pass that does not run on every run). A named tuple: a third of a frozen dataclass's cost to make."""

    name: str
    kind: str
    ran: bool
    skipped_reason: str = ""
    decisions: tuple[Decision, ...] = ()
    stats: RuleStats | None = None
    tags: tuple[str, ...] = ()


@dataclass(slots=True)
class PassOutput:
    """What a running pass adds to over a graph and its subgraphs: its decisions and (a rule pass) its counters."""

    name: str
    decisions: list[Decision] = field(default_factory=list)
    stats: RuleStats | None = None


class Pass(Protocol):
    """A graph pass: a rule pass or a Python pass."""

    @property
    def name(self) -> str:
        """The pass name."""

    @property
    def kind(self) -> str:
        """'rule', 'python' or 'placeholder'."""

    @property
    def levels(self) -> tuple[str, ...]:
        """The optimisation levels it runs at."""

    @property
    def after(self) -> tuple[str, ...]:
        """Passes it runs after."""

    @property
    def before(self) -> tuple[str, ...]:
        """Passes it runs before."""

    @property
    def enabled(self) -> bool:
        """Its own enabled flag."""

    @property
    def tags(self) -> tuple[str, ...]:
        """Its tags (a rule's `tags:`): what reports and stages key behaviour on, never the pass's name."""

    def run(self, graph: ComputeGraph, ctx: PassContext, out: PassOutput) -> None:
        """Run on one graph (root or subgraph), adding to `out`."""


@dataclass
class RulePass:
    """A pass defined by a rule file."""

    rule: CompiledRule
    kind: str = "rule"
    name: str = field(init=False)  # the rule's name, read for every graph the pass runs on

    def __post_init__(self) -> None:
        self.name = self.rule.name

    @property
    def levels(self) -> tuple[str, ...]:
        """Levels it runs at."""
        return self.rule.rule.levels

    @property
    def after(self) -> tuple[str, ...]:
        """Passes it runs after."""
        return self.rule.rule.after

    @property
    def before(self) -> tuple[str, ...]:
        """Passes it runs before."""
        return self.rule.rule.before

    @property
    def enabled(self) -> bool:
        """The rule's own enabled flag."""
        return self.rule.rule.enabled

    @property
    def tags(self) -> tuple[str, ...]:
        """The rule's tags."""
        return self.rule.rule.tags

    def run(self, graph: ComputeGraph, ctx: PassContext, out: PassOutput) -> None:
        """Decide every candidate of the rule in `graph`."""
        rule = self.rule
        if out.stats is None:
            out.stats = RuleStats(rule.name)
        candidates = ctx.candidates(graph, rule.match_types)
        if candidates:  # most graphs, for most rules, have none: counters of nothing decided
            ctx.engine.run_into(
                rule, graph, candidates, out.decisions, out.stats, ctx.dry_run, ctx.trace_node, ctx.explain, ctx.near
            )


@dataclass
class PythonPass:
    """A pass written in Python (for what is not a rule), or a named placeholder when `fn` is None."""

    name: str
    fn: Callable[[ComputeGraph, PassContext, PassOutput], None] | None = None
    levels: tuple[str, ...] = LEVELS
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    enabled: bool = True
    kind: str = "python"
    tags: tuple[str, ...] = ()

    def run(self, graph: ComputeGraph, ctx: PassContext, out: PassOutput) -> None:
        """Call the function (placeholders do nothing)."""
        if self.fn is not None:
            self.fn(graph, ctx, out)


def placeholder_passes() -> list[PythonPass]:
    """GE's own passes around ours, in GE's order, as do-nothing placeholders."""
    out: list[PythonPass] = []
    for i, name in enumerate(GE_PLACEHOLDER_PASSES):
        out.append(PythonPass(name, None, after=(GE_PLACEHOLDER_PASSES[i - 1],) if i else (), kind="placeholder"))
    return out


# (name, after, before) of every pass in registration order -> the resolved order as positions (the order depends
# on nothing else; a pass manager is built per `optimize` call, and resolving costs more than the rest of it)
_ORDERS: dict[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...], tuple[int, ...]] = {}
_ORDERS_LIMIT = 64


def resolve_order(passes: Sequence[Pass]) -> list[Pass]:
    """One deterministic order honouring every after/before constraint (registration order breaks ties)."""
    key = tuple((p.name, tuple(p.after), tuple(p.before)) for p in passes)
    known = _ORDERS.get(key)
    if known is None:
        order = _resolve_order(passes)
        position = {id(p): i for i, p in enumerate(passes)}
        if len(_ORDERS) >= _ORDERS_LIMIT:
            _ORDERS.clear()
        known = _ORDERS[key] = tuple(position[id(p)] for p in order)
    return [passes[i] for i in known]


def _resolve_order(passes: Sequence[Pass]) -> list[Pass]:
    by_name: dict[str, int] = {}
    for i, p in enumerate(passes):
        if p.name in by_name:
            raise error("pass-order", f"two passes are named '{p.name}'", where=p.name)
        by_name[p.name] = i
    succ: dict[int, set[int]] = {i: set() for i in range(len(passes))}
    indeg = [0] * len(passes)
    for i, p in enumerate(passes):
        for other, forward in [(a, False) for a in p.after] + [(b, True) for b in p.before]:
            if other not in by_name:
                raise error(
                    "pass-order",
                    f"pass '{p.name}' is ordered against unknown pass '{other}'",
                    where=p.name,
                    hint=did_you_mean(other, by_name),
                )
            a, b = (i, by_name[other]) if forward else (by_name[other], i)
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    ready = [i for i in range(len(passes)) if indeg[i] == 0]
    heapq.heapify(ready)
    out: list[Pass] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(passes[i])
        for j in sorted(succ[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, j)
    if len(out) != len(passes):
        cycle = order_cycle({p.name: (p.after, p.before) for p in passes}) or []
        raise error("pass-order", "pass order constraints form a cycle: " + " -> ".join(cycle))
    return out


class PassManager:
    """Orders passes, gates them by level and name, and runs each on the root graph and every subgraph."""

    def __init__(
        self,
        passes: Iterable[Pass],
        *,
        level: str = DEFAULT_LEVEL,
        disabled: Iterable[str] = (),
        engine: Engine | None = None,
    ) -> None:
        self.passes = resolve_order(list(passes))
        self.level = level
        self.disabled = disabled  # any iterable of names, kept as a frozen set
        if engine is None:
            from ..engine.run import Engine

            engine = Engine(GeGraphAccess(), ge_catalogue())
        self.engine = engine
        # for (level, disabled): the reports of passes that decide nothing, and the passes that run (_work_out_plan)
        self._plan: tuple[str, frozenset[str], tuple[PassReport, ...], tuple[tuple[int, Pass], ...]] | None = None

    @property
    def level(self) -> str:
        """The optimisation level the passes are gated by (checked when set, as at construction)."""
        return self._level

    @level.setter
    def level(self, level: str) -> None:
        if not isinstance(level, str) or level not in LEVELS:
            raise error("usage", f"unknown optimisation level {level!r}; expected one of {', '.join(LEVELS)}")
        self._level = level

    @property
    def disabled(self) -> frozenset[str]:
        """The names of the passes disabled by option (checked when set: every one must name a pass)."""
        return self._disabled

    @disabled.setter
    def disabled(self, names: Iterable[str]) -> None:
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise error(
                "usage",
                f"the passes to disable must be a collection of pass names, not {type(names).__name__} {names!r}",
                hint=f"write [{names!r}]" if isinstance(names, str) else None,
            )
        wanted = list(names)
        for d in wanted:
            if not isinstance(d, str):
                raise error("usage", f"a pass to disable must be named by a string, not {type(d).__name__} {d!r}")
        known = {p.name for p in self.passes}
        for d in sorted(set(wanted) - known):
            raise error("usage", f"cannot disable unknown pass '{d}'", hint=did_you_mean(d, known))
        self._disabled = frozenset(wanted)

    def gate(self, p: Pass) -> str:
        """Why `p` does not run ('' when it runs)."""
        if p.name in self.disabled:
            return "disabled by option"
        if not p.enabled:
            return "disabled in its rule file"
        if self.level not in p.levels:
            return f"not registered at level {self.level} (levels: {', '.join(p.levels)})"
        return ""

    def _work_out_plan(self) -> tuple[tuple[PassReport, ...], tuple[tuple[int, Pass], ...]]:
        """Every pass's report when it decides nothing (a pass that does not run, or a placeholder, keeps it),
        and the passes that run, with their positions."""
        fixed: list[PassReport] = []
        running: list[tuple[int, Pass]] = []
        for i, p in enumerate(self.passes):
            why = self.gate(p)
            fixed.append(PassReport(p.name, p.kind, not why, why, tags=tuple(p.tags)))
            if not why and p.kind != "placeholder":  # GE's own passes stand in the order but do nothing here
                running.append((i, p))
        return tuple(fixed), tuple(running)

    def run(
        self,
        graph: ComputeGraph,
        *,
        dry_run: bool = False,
        trace_node: str | None = None,
        explain: bool = True,
        near: NearMisses | None = None,
    ) -> list[PassReport]:
        """Run every pass in order over `graph` and its subgraphs (explain=False: misses carry no Reason; `near`
        collects the rule passes' near misses)."""
        ctx = PassContext(self.engine, dry_run, trace_node, explain, near)
        plan = self._plan
        if plan is None or plan[0] != self.level or plan[1] != self.disabled:
            plan = self._plan = (self.level, self.disabled, *self._work_out_plan())
        reports = list(plan[2])  # every pass's report as if it ran and decided nothing; a running pass's replaced
        subs: list[ComputeGraph] | None = None
        for i, p in plan[3]:
            out = PassOutput(p.name)
            p.run(graph, ctx, out)
            if subs is None:
                subs = graph.all_subgraphs()
            for sub in subs:
                p.run(sub, ctx, out)
            if p.kind != "rule":  # a Python pass may change op types, or subgraphs, without touching the order
                ctx.forget_indexes()
                subs = None
            reports[i] = PassReport(out.name, p.kind, True, "", tuple(out.decisions), out.stats, tuple(p.tags))
        return reports


NO_TASK_TAG = "no-task"  # rules that make ops virtual; MemLayoutConflictPass runs after them
LAYOUT_CONFLICT_TAG = "layout-conflict"  # GE's Identity insertions (rules/mem_layout_conflict.yaml); it runs after them
UNDO_KIND = "undo"  # the check_kind of a decision that undoes an earlier pass's decision on the same node


def _resolve_layout_conflicts(graph: ComputeGraph, ctx: PassContext, out: PassOutput) -> None:
    """MemLayoutConflictPass: memory's conflict step (`memory.conflicts`) on the root graph, each zero-copy op it
    undoes recorded as a decision of this pass. It runs after GE's Identity insertions (the layout-conflict rules),
    so it acts only on a conflict none of them resolved (docs/layout_conflicts.md). Runs once, on the root graph
    (layouts span subgraphs)."""
    if not graph.is_root or ctx.dry_run:
        return
    for undo, conflict in resolve_layout_conflicts(graph):
        reason = Reason("", None, str(conflict))
        out.decisions.append(
            Decision(out.name, undo.graph.name, undo.name, undo.type, True, check_kind=UNDO_KIND, reason=reason)
        )


def load_ge_rules(paths: Sequence[str | Path] | None = None) -> RuleSet:
    """Load rule files (default: the bundled rules) against the GE catalogue; GE's own pass names are known."""
    from ..rules import bundled_rules_dir

    return load_rules(
        list(paths) if paths else [bundled_rules_dir()], ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES
    )


def load_ge_rule_sources(sources: Sequence[tuple[str, bytes]]) -> RuleSet:
    """`load_ge_rules` for rule files given as (name, bytes) (see `dsl.load.load_rules_from`)."""
    return load_rules_from(sources, ge_catalogue(), known_passes=GE_PLACEHOLDER_PASSES)


def validate_ge_rules(
    paths: Sequence[str | Path] | None = None, *, texts: Mapping[Path, bytes] | None = None
) -> Validation:
    """Check rule files (default: the bundled rules) as `load_ge_rules` loads them, generating no code; `texts`
    as for `validate_rules` (unsaved editor buffers by resolved path)."""
    from ..rules import bundled_rules_dir

    return validate_rules(
        list(paths) if paths else [bundled_rules_dir()],
        ge_catalogue(),
        known_passes=GE_PLACEHOLDER_PASSES,
        texts=texts,
    )


# the bundled rule set as last loaded, with what it was loaded from: (working directory, (file, mtime, size) of
# every rule file and of their folder) -> the rule set
_DEFAULT_RULES: tuple[tuple[object, ...], list[Path], RuleSet] | None = None


def _file_signature(files: Sequence[Path]) -> tuple[object, ...]:
    """What tells an edit of `files` (each one's modification time and size; a missing file reads as absent)."""
    try:
        cwd = os.getcwd()  # spans name files relative to it
    except OSError:  # it was removed: the load says what it can
        cwd = ""
    out: list[object] = [cwd]
    for f in files:
        try:
            st = f.stat()
        except OSError:
            out.append((str(f), None))
        else:
            out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(out)


def default_rules() -> RuleSet:
    """The bundled rule set: what every stage uses when it is given none. Loaded once, and again when a rule file
    or its folder changes (an edit, a file added or removed) or the working directory does. A load costs about
    70 ms, which a compile script calling `optimize` per graph would otherwise pay every call. Raises on an
    error, as :func:`load_rules` does; callers must not modify it (pass a rule set of your own to change rules)."""
    global _DEFAULT_RULES
    from ..rules import bundled_rules_dir

    known = _DEFAULT_RULES
    if known is not None and _file_signature(known[1]) == known[0]:
        return known[2]
    folder = bundled_rules_dir()
    files, _ = rule_files([folder])
    watched = [folder, *(f.resolve() for f in files)]
    signature = _file_signature(watched)  # before loading: an edit made while it loads is seen next time
    rules = load_ge_rules().raise_on_error()
    _DEFAULT_RULES = (signature, watched, rules)
    return rules


def build_pass_manager(rule_set: RuleSet, *, level: str = DEFAULT_LEVEL, disabled: Iterable[str] = ()) -> PassManager:
    """GE's placeholders plus the rule passes of `rule_set` (which must be free of errors)."""
    rule_set.raise_on_error()
    passes: list[Pass] = [*placeholder_passes()]
    passes.extend(RulePass(r) for r in rule_set.rules)
    first = tuple(r.name for r in rule_set.rules if {NO_TASK_TAG, LAYOUT_CONFLICT_TAG} & set(r.rule.tags))
    passes.append(PythonPass("MemLayoutConflictPass", _resolve_layout_conflicts, after=first))
    return PassManager(passes, level=level, disabled=disabled)
