"""The compile pipeline: rule passes, streams, memory, tasks and the model, in order, with each stage's result
and the compile's report.

The library API and the CLI call these functions and format what they return; nothing here prints. A stage
reads the graph and the attributes earlier stages set and writes its own result objects. The comparison with
the same graph compiled without the no-task passes (what they saved in feature-map memory) is a second run of
the passes, streams and memory on a copy: opt-in (`baseline=True`), never done silently.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.diagnostics import did_you_mean, error
from ..dsl.load import RuleSet
from ..engine.decisions import Decision
from . import formats
from .facts import attr_bool
from .graph_file import copy_graph, gc_paused
from .ir import ComputeGraph, Node
from .passes import DEFAULT_LEVEL, NO_TASK_TAG, UNDO_KIND, PassManager, PassReport, build_pass_manager, default_rules

if TYPE_CHECKING:  # the later stages are imported by the functions that run them (optimize needs none)
    from .memory.assign import MemoryPlan
    from .memory.verify import Violation
    from .streams import StreamPlan
    from .task_cache import TaskReuse
    from .tasks import TaskResult

T = TypeVar("T")

QUIET_TAG = "quiet"  # a rule pass whose misses are not worth a line in a compile summary (engine placement)

__all__ = [
    "CompileResult",
    "MemoryResult",
    "OptimizeResult",
    "Undo",
    "compile_graph",
    "explain",
    "optimize",
    "plan_memory",
    "undone_decisions",
    "verdict",
]


@dataclass
class OptimizeResult:
    """The marked graph and what every pass did."""

    graph: ComputeGraph
    reports: list[PassReport]

    @property
    def decisions(self) -> list[Decision]:
        """Every decision of every rule pass, in run order."""
        return [d for r in self.reports for d in r.decisions]

    def fired(self) -> list[Decision]:
        """The decisions that fired."""
        return [d for d in self.decisions if d.fired]

    def undone(self) -> dict[int, Undo]:
        """The fired decisions a later pass undid, by their position in `decisions`."""
        return undone_decisions(self.decisions)


@dataclass(frozen=True)
class Undo:
    """A later pass undid a decision: which pass, and why."""

    by: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """As JSON."""
        return {"by": self.by, "reason": self.reason}


def undone_decisions(decisions: Sequence[Decision]) -> dict[int, Undo]:
    """The fired decisions a later decision undid (e.g. MemLayoutConflictPass reverting a zero-copy op), by their
    position in `decisions` (run order). An undo reverts the latest decision that fired on its node (the one that
    made it zero-copy: earlier ones, e.g. engine placement, stand)."""
    out: dict[int, Undo] = {}
    latest: dict[tuple[str, str], int] = {}
    for i, d in enumerate(decisions):
        key = (d.graph, d.node)
        if d.check_kind == UNDO_KIND:
            j = latest.pop(key, None)
            if j is not None:
                out[j] = Undo(d.rule, d.reason.message if d.reason is not None else "")
        elif d.fired and not d.dry_run:
            latest[key] = i
    return out


def verdict(d: Decision, undo: Undo | None) -> str:
    """A decision's final state in one line: undone and undoing decisions say so, by which pass and why."""
    if d.check_kind == UNDO_KIND:
        return f"undid the earlier zero-copy decision: {d.reason.message if d.reason else ''}"
    if undo is not None:
        return f"fired, then UNDONE by {undo.by}: {undo.reason}"
    return d.summary()


def optimize(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
    dry_run: bool = False,
    trace_node: str | None = None,
    explain: bool = True,
) -> OptimizeResult:
    """Run the rule passes over `graph` (in place unless dry_run) and return the decisions.

    Every miss carries its explanation (`Decision.reason`) unless `explain` is false; the check, path,
    elements and error are always there."""
    pm = _pass_manager(_rules_for(graph, rules), level, disabled)
    return OptimizeResult(graph, pm.run(graph, dry_run=dry_run, trace_node=trace_node, explain=explain))


def _rules_for(graph: object, rules: object) -> RuleSet:
    """The rule set a stage runs (`rules`, or the bundled rules when None), once the two arguments every stage
    takes are known to be what it needs: a wrong one is one usage error, not a traceback from deep inside."""
    if not isinstance(graph, ComputeGraph):
        raise error(
            "usage",
            f"expected a ComputeGraph, not {type(graph).__name__}",
            hint="load one with api.load_graph(path)",
        )
    if rules is None:
        return default_rules()
    if not isinstance(rules, RuleSet):
        raise error(
            "usage",
            f"expected a RuleSet (or None for the bundled rules), not {type(rules).__name__}",
            hint="load one with api.load_rules([path, ...])",
        )
    return rules


# the pass managers `optimize` ran, by rule set (the object and the rules it holds), level and disabled passes:
# building one, and warming its engine's caches (explainers, describers), costs more than deciding a small graph,
# and a compile runs two per graph. A pass manager keeps no state between runs (each run has its own context).
_PASS_MANAGERS: dict[tuple[object, ...], tuple[RuleSet, PassManager]] = {}
_PASS_MANAGERS_LIMIT = 16


def _pass_manager(rules: RuleSet, level: str, disabled: Iterable[str]) -> PassManager:
    """The pass manager of `rules` at `level` with `disabled` off: built once, then reused."""
    if (
        not isinstance(level, str)
        or not isinstance(disabled, (list, tuple, set, frozenset))
        or not all(isinstance(d, str) for d in disabled)
    ):
        return build_pass_manager(rules, level=level, disabled=disabled)  # which says what is wrong, or copes
    key = (id(rules), tuple(map(id, rules.rules)), level, frozenset(disabled))
    known = _PASS_MANAGERS.get(key)
    if known is not None and not rules.errors:  # (the key's id is the rule set's: the entry keeps it alive)
        return known[1]
    pm = build_pass_manager(rules, level=level, disabled=disabled)
    if len(_PASS_MANAGERS) >= _PASS_MANAGERS_LIMIT:
        _PASS_MANAGERS.clear()
    _PASS_MANAGERS[key] = (rules, pm)  # the rule set is kept alive with it, so its id names no other
    return pm


def explain(
    graph: ComputeGraph,
    node: str,
    rules: RuleSet | None = None,
    *,
    rule: str | None = None,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
) -> list[Decision]:
    """The decisions (with check-by-check traces) for one node, as the full pipeline reaches them."""
    rules = _rules_for(graph, rules)
    graphs = [graph, *graph.all_subgraphs()]
    if not any(g.node(node) is not None for g in graphs):
        names = [n.name for g in graphs for n in g.nodes_in_insertion_order()]
        raise error("usage", f"no node '{node}' in graph '{graph.name}'", hint=did_you_mean(node, names))
    result = optimize(graph, rules, level=level, disabled=disabled, trace_node=node)
    out = [d for d in result.decisions if d.node == node and (rule is None or d.rule == rule)]
    return out


@dataclass
class MemoryResult:
    """A memory plan for the optimized graph, the same graph's plan without the no-task passes, and checks."""

    graph: ComputeGraph
    plan: MemoryPlan
    baseline: MemoryPlan | None  # None when the compile did not plan the graph without the no-task passes
    no_task_nodes: list[str]
    copy_bytes_saved: int
    violations: list[Violation]
    baseline_graph: ComputeGraph | None = None

    @property
    def bytes_saved(self) -> int | None:
        """Feature-map bytes the no-task passes saved (can be 0: they always save the copies); None without a
        baseline plan."""
        if self.baseline is None:
            return None
        return self.baseline.total("feature_map") - self.plan.total("feature_map")

    def report(self) -> dict[str, Any]:
        """The savings as JSON-able data: virtual ops, copy bytes, and the feature-map arenas with and without."""
        without = None if self.baseline is None else self.baseline.total("feature_map")
        return {
            "feature_map": self.plan.total("feature_map"),
            "feature_map_without_no_task": without,
            "bytes_saved": self.bytes_saved,
            "copy_bytes_saved": self.copy_bytes_saved,
            "no_task_nodes": self.no_task_nodes,
            "arenas": [
                {"region": a.region, "mem_type": a.mem_type, "size": a.size, "lower_bound": a.lower_bound}
                for a in self.plan.arenas
            ],
        }


def plan_memory(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
    verify: bool = True,
    soundness: bool = True,
    memory_budget_s: float | None = None,
) -> MemoryResult:
    """Optimize a graph, plan its memory, and compare with the plan when the no-task passes are off.

    `graph` is optimized in place; the comparison runs on a fresh copy with every pass tagged `no-task` disabled.
    Both plans are proved safe by the verifier when `verify`. Every zero-copy op is proved sound (its output's
    bytes are its inputs' bytes) unless `soundness` is false, which warns loudly; an unsound one raises.
    `memory_budget_s` is the offset planner's budget (`planner.plan`'s `budget_s`).
    """
    from .memory.assign import assign_memory
    from .memory.verify import verify_plan

    rules = _rules_for(graph, rules)
    baseline_graph = copy_graph(graph)
    optimize(graph, rules, level=level, disabled=disabled)
    plan = assign_memory(graph, budget_s=memory_budget_s)
    _check_soundness(graph, plan, soundness)
    result = _with_baseline(
        graph, baseline_graph, plan, rules, level, disabled, single_stream=True, budget_s=memory_budget_s
    )
    if verify and result.baseline is not None:
        result.violations = verify_plan(graph, result.plan) + verify_plan(baseline_graph, result.baseline)
    return result


def _check_soundness(graph: ComputeGraph, plan: MemoryPlan, soundness: bool) -> None:
    """Prove every zero-copy op of `graph` sound under `plan` (raises), or warn that the proof is skipped."""
    from .memory.soundness import SKIP_WARNING, SoundnessWarning, prove_sound

    if soundness:
        prove_sound(graph, plan)
    else:
        warnings.warn(SKIP_WARNING, SoundnessWarning, stacklevel=4)


@dataclass
class CompileResult:
    """Every stage's output and report: decisions, streams, memory (with the no-task savings), tasks, model.

    The decisions carry no explanations (`reason` is None): call `explain` for a node, or `optimize`."""

    graph: ComputeGraph
    optimize: OptimizeResult
    memory: MemoryResult
    streams: StreamPlan
    tasks: TaskResult
    _model: dict[str, Any] | None  # None after a streamed compile: `model` reads the file back when asked
    seconds: dict[str, float]
    soundness: bool = True  # whether every zero-copy op was proved sound (False: the user skipped the proof)
    model_path: Path | None = None  # where a streamed compile wrote the model

    @property
    def model(self) -> dict[str, Any]:
        """The model as plain data (after a streamed compile, read back from the file it wrote)."""
        if self._model is None:
            from ..base.files import read_text

            assert self.model_path is not None
            self._model = json.loads(read_text(self.model_path, what="model file"))
        return self._model

    def model_text(self) -> str:
        """The model file's text (deterministic JSON)."""
        from .model import dump_model

        return dump_model(self.model)

    def write_model(self, path: str | Path) -> None:
        """Write the model file (the bytes of `model_text`) to `path`, streamed and atomically."""
        from .model import write_model

        write_model(self.model, path)

    def tasks_by_type(self) -> dict[str, int]:
        """Task counts per ModelTaskType name."""
        return dict(sorted(self.tasks.by_type.items()))

    def tasks_by_stream(self) -> dict[int, int]:
        """Task counts per stream."""
        return dict(sorted(self.tasks.by_stream.items()))

    def report(self) -> dict[str, Any]:
        """The compile's report as JSON-able data: passes, decisions undone later, memory and savings, soundness,
        tasks, streams, stage seconds."""
        ds = self.optimize.decisions
        return {
            "graph": self.graph.name,
            "nodes": len(self.graph.all_nodes()),
            "passes": [
                {
                    "pass": r.name,
                    "ran": r.ran,
                    "skipped_reason": r.skipped_reason or None,
                    "quiet": QUIET_TAG in r.tags,
                    "stats": r.stats.to_json() if r.stats else None,
                }
                for r in self.optimize.reports
                if r.kind != "placeholder"
            ],
            "undone": [
                {"pass": ds[i].rule, "graph": ds[i].graph, "node": ds[i].node, "op_type": ds[i].op_type, **u.to_json()}
                for i, u in sorted(self.optimize.undone().items())
            ],
            "memory": self.memory.report(),
            "soundness": self.soundness,
            "tasks": {
                "total": self.tasks.total,
                "incremental": self.tasks.incremental,  # whether a previous compile's tasks were looked up
                "reused": self.tasks.reused,  # nodes whose tasks a previous compile's model gave
                "regenerated": self.tasks.regenerated,  # nodes whose tasks were built
                "by_type": self.tasks_by_type(),
                "by_stream": {str(k): v for k, v in self.tasks_by_stream().items()},
            },
            "streams": self.streams.stream_count,
            "events": len(self.streams.events),
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
        }


def compile_graph(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
    threads: int | None = None,
    single_stream: bool = False,
    options: dict[str, str] | None = None,
    verify: bool = True,
    progress: Callable[[str], None] | None = None,
    baseline: bool = False,
    soundness: bool = True,
    memory_budget_s: float | None = None,
    reuse: TaskReuse | None = None,
) -> CompileResult:
    """Passes, streams, memory, tasks and the model, each stage timed; raises on bad input or an unsafe plan.

    The savings in virtual ops, kernel tasks and copy bytes are counted from the compiled graph itself; the
    feature-map arena the same graph would need without the no-task passes costs a second run of the passes,
    streams and memory on a copy, so it is planned only when `baseline` is true (`memory.baseline`).

    Every zero-copy op is proved sound (see `compiler.memory.soundness`) unless `soundness` is false, which
    warns loudly; an unsound one raises before any model exists. `memory_budget_s` is the offset planner's
    budget (`planner.plan`'s `budget_s`); the time the planner took is the stage "memory planner" (part of
    "memory").

    The cyclic garbage collector is paused meanwhile: a compile creates millions of long-lived objects and
    frees almost none, so full collections would only walk the heap again and again (25-40% of the time on
    100k-node graphs).

    `reuse` (see `compiler.task_cache`) makes task generation incremental (a previous model's or a cache
    folder's tasks stand for every node whose tasks cannot have changed) and, given a model path, streamed
    to that file: the model is the same byte for byte either way.
    """
    with gc_paused():
        return _stages(
            graph,
            rules,
            level,
            disabled,
            threads,
            single_stream,
            options,
            verify,
            progress,
            baseline,
            soundness,
            memory_budget_s,
            reuse,
        )


def _stages(
    graph: ComputeGraph,
    rules: RuleSet | None,
    level: str,
    disabled: Iterable[str],
    threads: int | None,
    single_stream: bool,
    options: dict[str, str] | None,
    verify: bool,
    progress: Callable[[str], None] | None,
    baseline: bool,
    soundness: bool,
    memory_budget_s: float | None,
    reuse: TaskReuse | None,
) -> CompileResult:
    from .memory.assign import assign_memory
    from .memory.planner import planner_clock
    from .memory.verify import verify_plan
    from .model import build_model
    from .streams import assign_streams
    from .tasks import generate_tasks

    seconds: dict[str, float] = {}
    say = progress or (lambda _stage: None)

    def timed(stage: str, fn: Callable[[], T]) -> T:
        say(stage)
        t0 = time.perf_counter()
        value = fn()
        seconds[stage] = time.perf_counter() - t0
        return value

    rules = _rules_for(graph, rules)
    baseline_graph = copy_graph(graph) if baseline else None
    # a compile reports counts per check, not explanations: misses carry no Reason (use optimize or explain)
    opt = timed("passes", lambda: optimize(graph, rules, level=level, disabled=disabled, explain=False))
    streams = timed("streams", lambda: assign_streams(graph, single_stream=single_stream))
    with planner_clock() as clock:
        plan = timed("memory", lambda: assign_memory(graph, events=streams.event_pairs(), budget_s=memory_budget_s))
    seconds["memory planner"] = clock.seconds
    timed("soundness", lambda: _check_soundness(graph, plan, soundness))
    violations = timed("verify", lambda: verify_plan(graph, plan, events=streams.event_pairs())) if verify else []
    if violations:
        raise error("memory-plan", "the memory plan is unsafe: " + "; ".join(str(v) for v in violations[:5]))
    if baseline_graph is None:
        memory = _savings(graph, plan, None, None)
    else:
        base = baseline_graph
        memory = timed(
            "baseline memory",
            lambda: _with_baseline(
                graph, base, plan, rules, level, disabled, single_stream=single_stream, budget_s=memory_budget_s
            ),
        )
    if reuse is not None:
        tasks, model = reuse.compile(graph, plan, streams, threads, options or {}, timed)
        return CompileResult(graph, opt, memory, streams, tasks, model, seconds, soundness, reuse.model_path)
    tasks = timed("tasks", lambda: generate_tasks(graph, plan, streams, threads=threads, options=options))
    model = timed("model", lambda: build_model(graph, plan, streams, tasks))
    return CompileResult(graph, opt, memory, streams, tasks, model, seconds, soundness)


def _with_baseline(
    graph: ComputeGraph,
    baseline_graph: ComputeGraph,
    plan: MemoryPlan,
    rules: RuleSet,
    level: str,
    disabled: Iterable[str],
    *,
    single_stream: bool,
    budget_s: float | None = None,
) -> MemoryResult:
    """Plan `baseline_graph` (a copy taken before the passes) with the no-task passes off, and count the savings."""
    from .memory.assign import assign_memory
    from .streams import assign_streams

    no_task_passes = [r.name for r in rules.rules if NO_TASK_TAG in r.rule.tags]
    optimize(baseline_graph, rules, level=level, disabled=sorted(set(disabled) | set(no_task_passes)), explain=False)
    base_streams = assign_streams(baseline_graph, single_stream=single_stream)
    baseline = assign_memory(baseline_graph, events=base_streams.event_pairs(), budget_s=budget_s)
    return _savings(graph, plan, baseline, baseline_graph)


def copy_bytes(node: Node) -> int:
    """The bytes `node`'s copy moves (its outputs' sizes): what making it a virtual op saves."""
    return sum(max(formats.tensor_raw_size(o.desc.shape, o.desc.dtype), 0) for o in node.out_anchors)


def _savings(
    graph: ComputeGraph, plan: MemoryPlan, baseline: MemoryPlan | None, baseline_graph: ComputeGraph | None
) -> MemoryResult:
    """The memory result: the virtual ops of `graph` and the copy bytes they avoid, read from the graph alone."""
    virtual = [n for n in graph.all_nodes() if attr_bool(n, "_no_task")]
    copied = sum(copy_bytes(n) for n in virtual)
    return MemoryResult(graph, plan, baseline, [n.name for n in virtual], copied, [], baseline_graph)
