"""The library API for compile scripts: load graphs and rules, run the passes, explain a decision.

Small and typed; every function raises :class:`RulepassError` (with located diagnostics) on bad input.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .base.diagnostics import RulepassError, did_you_mean, error
from .compiler import formats
from .compiler.facts import attr_bool
from .compiler.graph_file import copy_graph, gc_paused, save_graph
from .compiler.graph_file import load_graph as load_graph_file
from .compiler.ir import ComputeGraph
from .compiler.memory.assign import MemoryPlan, assign_memory
from .compiler.memory.planner import planner_clock
from .compiler.memory.verify import Violation, verify_plan
from .compiler.model import build_model, dump_model, write_model
from .compiler.passes import (
    DEFAULT_LEVEL,
    NO_TASK_TAG,
    PassManager,
    PassReport,
    build_pass_manager,
    default_rules,
    load_ge_rules,
)
from .compiler.streams import StreamPlan, assign_streams
from .compiler.tasks import TaskResult, generate_tasks
from .dsl.load import RuleSet
from .engine.decisions import Decision

if TYPE_CHECKING:
    from .compiler.runtime.executor import RunResult

T = TypeVar("T")

__all__ = [
    "CompileResult",
    "ComputeGraph",
    "Decision",
    "MemoryPlan",
    "MemoryResult",
    "OptimizeResult",
    "RuleSet",
    "RulepassError",
    "compile_graph",
    "explain",
    "load_graph",
    "load_rules",
    "optimize",
    "plan_memory",
    "run_model",
    "save_graph",
]


def load_graph(
    path: str | Path, *, onnx_formats: str = "keep", warn: Callable[[str], object] | None = None
) -> ComputeGraph:
    """Load a graph file (YAML/JSON), or import an ONNX model (`.onnx`) with the given format mode."""
    if str(path).lower().endswith(".onnx"):
        from .compiler.onnx_import import import_onnx

        result = import_onnx(path, format_mode=onnx_formats)
        for w in result.warnings:
            (warn or (lambda _w: None))(w)
        return result.graph
    return load_graph_file(path)


def load_rules(paths: Sequence[str | Path] | None = None) -> RuleSet:
    """Load and check rule files or folders (default: the bundled rules); raises on any error."""
    return load_ge_rules(paths).raise_on_error()


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
    baseline: MemoryPlan
    no_task_nodes: list[str]
    copy_bytes_saved: int
    violations: list[Violation]
    baseline_graph: ComputeGraph | None = None

    @property
    def bytes_saved(self) -> int:
        """Feature-map bytes the no-task passes saved (can be 0: they always save the copies)."""
        return self.baseline.total("feature_map") - self.plan.total("feature_map")


def plan_memory(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
    verify: bool = True,
    memory_budget_s: float | None = None,
) -> MemoryResult:
    """Optimize a graph, plan its memory, and compare with the plan when the no-task passes are off.

    `graph` is optimized in place; the comparison runs on a fresh copy with every pass tagged `no-task` disabled.
    Both plans are proved safe by the verifier when `verify`. `memory_budget_s` is the offset planner's budget.
    """
    rules = _rules_for(graph, rules)
    baseline_graph = copy_graph(graph)
    optimize(graph, rules, level=level, disabled=disabled)
    plan = assign_memory(graph, budget_s=memory_budget_s)
    result = _with_baseline(
        graph, baseline_graph, plan, rules, level, disabled, single_stream=True, budget_s=memory_budget_s
    )
    if verify:
        result.violations = verify_plan(graph, result.plan) + verify_plan(baseline_graph, result.baseline)
    return result


@dataclass
class CompileResult:
    """Every stage's output and report: decisions, streams, memory (with the no-task savings), tasks, model.

    The decisions carry no explanations (`reason` is None): call `explain` for a node, or `optimize`."""

    graph: ComputeGraph
    optimize: OptimizeResult
    memory: MemoryResult
    streams: StreamPlan
    tasks: TaskResult
    model: dict[str, Any]
    seconds: dict[str, float]

    def model_text(self) -> str:
        """The model file's text (deterministic JSON)."""
        return dump_model(self.model)

    def write_model(self, path: str | Path) -> None:
        """Write the model file (the bytes of `model_text`) to `path`, streamed and atomically."""
        write_model(self.model, path)

    def tasks_by_type(self) -> dict[str, int]:
        """Task counts per ModelTaskType name."""
        out: dict[str, int] = {}
        for t in self.tasks.tasks:
            out[t.type.name] = out.get(t.type.name, 0) + 1
        return dict(sorted(out.items()))

    def tasks_by_stream(self) -> dict[int, int]:
        """Task counts per stream."""
        out: dict[int, int] = {}
        for t in self.tasks.tasks:
            out[t.stream_id] = out.get(t.stream_id, 0) + 1
        return dict(sorted(out.items()))


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
    memory_budget_s: float | None = None,
) -> CompileResult:
    """Passes, streams, memory, tasks and the model, each stage timed; raises on bad input or an unsafe plan.

    The cyclic garbage collector is paused meanwhile: a compile creates millions of long-lived objects and
    frees almost none, so full collections would only walk the heap again and again (25-40% of the time on
    100k-node graphs). `memory_budget_s` is the offset planner's budget (`plan`'s `budget_s`); the time the
    planner took is reported as the stage "memory planner" (part of "memory").
    """
    with gc_paused():
        return _stages(
            graph, rules, level, disabled, threads, single_stream, options, verify, progress, memory_budget_s
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
    memory_budget_s: float | None = None,
) -> CompileResult:
    seconds: dict[str, float] = {}
    say = progress or (lambda _stage: None)

    def timed(stage: str, fn: Callable[[], T]) -> T:
        say(stage)
        t0 = time.perf_counter()
        value = fn()
        seconds[stage] = time.perf_counter() - t0
        return value

    rules = _rules_for(graph, rules)
    baseline_graph = copy_graph(graph)
    # a compile reports counts per check, not explanations: misses carry no Reason (use optimize or explain)
    opt = timed("passes", lambda: optimize(graph, rules, level=level, disabled=disabled, explain=False))
    streams = timed("streams", lambda: assign_streams(graph, single_stream=single_stream))
    with planner_clock() as clock:
        plan = timed("memory", lambda: assign_memory(graph, events=streams.event_pairs(), budget_s=memory_budget_s))
    seconds["memory planner"] = clock.seconds
    violations = timed("verify", lambda: verify_plan(graph, plan, events=streams.event_pairs())) if verify else []
    if violations:
        raise error("memory-plan", "the memory plan is unsafe: " + "; ".join(str(v) for v in violations[:5]))
    memory = timed(
        "baseline memory",
        lambda: _with_baseline(
            graph, baseline_graph, plan, rules, level, disabled, single_stream=single_stream, budget_s=memory_budget_s
        ),
    )
    tasks = timed("tasks", lambda: generate_tasks(graph, plan, streams, threads=threads, options=options))
    model = timed("model", lambda: build_model(graph, plan, streams, tasks))
    return CompileResult(graph, opt, memory, streams, tasks, model, seconds)


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
    no_task_passes = [r.name for r in rules.rules if NO_TASK_TAG in r.rule.tags]
    optimize(baseline_graph, rules, level=level, disabled=sorted(set(disabled) | set(no_task_passes)), explain=False)
    base_streams = assign_streams(baseline_graph, single_stream=single_stream)
    baseline = assign_memory(baseline_graph, events=base_streams.event_pairs(), budget_s=budget_s)
    virtual = [n for n in graph.all_nodes() if attr_bool(n, "_no_task")]
    copied = sum(max(formats.tensor_raw_size(o.desc.shape, o.desc.dtype), 0) for n in virtual for o in n.out_anchors)
    return MemoryResult(graph, plan, baseline, [n.name for n in virtual], copied, [], baseline_graph)


def run_model(
    model: dict[str, Any] | CompileResult,
    inputs: dict[str, Any] | None = None,
    *,
    ranks: int = 1,
    seed: int = 0,
    rank_inputs: Sequence[dict[str, Any]] | None = None,
    verify: bool = True,
) -> RunResult:
    """Execute a compiled model (its JSON object, or a CompileResult) with the numpy reference kernels.

    Inputs by Data node name (missing ones seeded random per rank), weights seeded random; outputs per NetOutput
    input, per rank when `ranks` > 1 (collectives run in lock-step). Needs numpy (`pip install 'rulepass[run]'`).
    """
    try:
        from .compiler.runtime.executor import run_model as _run
    except ImportError as exc:
        raise error("usage", f"running models needs numpy: pip install 'rulepass[run]' ({exc})") from None
    doc = model.model if isinstance(model, CompileResult) else model
    return _run(doc, inputs, ranks=ranks, seed=seed, rank_inputs=rank_inputs, verify=verify)
