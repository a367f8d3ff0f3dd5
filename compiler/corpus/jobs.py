"""The work of one graph of a corpus: load it once, then compute each product asked for (a compile, the
decisions of the rule passes; more kinds are one entry of `PRODUCTS`) under each rule set, through the
pipeline's own stages. A job and its result are plain data that pickle: a worker process, or a cluster worker,
runs `run_job` on it.

A product's result is JSON data with no timing in it, so the same graph, rules and options give the same bytes
wherever and whenever they are computed, and the cache can keep it.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...base.diagnostics import RulepassError
from ...base.files import decode_text
from ...dsl.load import RuleSet
from ...engine.decisions import Decision
from ..graph_file import copy_graph, load_graph_text
from ..ir import ComputeGraph
from ..pipeline import OptimizeResult, Undo, compile_graph, optimize
from ..render.graph_report import REPORT, graph_report, model_of, model_report
from ..task_registry import ModelTaskType
from .inputs import GraphData, RuleFingerprint, RuleSource, error_line, result_key

UNSOUND = "zero-copy-unsound"  # the error code of a zero-copy op the soundness proof rejects
KERNEL_TASKS = frozenset({ModelTaskType.KERNEL.name, ModelTaskType.KERNEL_EX.name})


@dataclass(frozen=True)
class Product:
    """One thing to compute for a graph: a product kind under a rule set (and that rule set's fingerprint)."""

    kind: str
    rules: RuleSource
    fingerprint: tuple[RuleFingerprint, ...]


@dataclass(frozen=True)
class Job:
    """One graph and the products wanted of it, with the pass options."""

    graph: GraphData
    products: tuple[Product, ...]
    level: str
    disabled: tuple[str, ...]

    def options(self) -> dict[str, Any]:
        """The options a result depends on besides the graph and the rules (part of its cache key)."""
        return {"level": self.graph.entry.level or self.level, "disabled": sorted(self.disabled)}

    def key(self, product: Product, op_types: frozenset[str]) -> str:
        """The cache key of `product` of this graph (see `inputs.result_key`)."""
        return result_key(product.kind, self.graph, op_types, product.fingerprint, self.options())


@dataclass(frozen=True)
class JobResult:
    """What a job found: the graph's name and op types, and each product's result by its key (products with
    the same key are computed once), or the error that stopped the graph from loading."""

    name: str = ""
    op_types: tuple[str, ...] = ()
    results: tuple[tuple[str, dict[str, Any]], ...] = ()
    error: str | None = None


def run_job(job: Job) -> JobResult:
    """Load the job's graph, then compute every product (each on a fresh copy of the graph)."""
    if job.graph.error is not None:
        return JobResult(error=job.graph.error)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an importer's notes are not the corpus report's business
            graph = load_graph_data(job.graph)
    except RulepassError as exc:
        model = model_of(job.graph.data) if any(p.kind.startswith(REPORT) for p in job.products) else None
        return _model_job(job, model) if model is not None else JobResult(error=error_line(job.graph.entry, exc))
    except Exception as exc:  # a bug: one line in the report, not the end of the corpus
        return JobResult(error=f"internal error: {type(exc).__name__}: {exc}")
    op_types = frozenset(n.type for n in graph.all_nodes())
    results: dict[str, dict[str, Any]] = {}
    for product in job.products:
        key = job.key(product, op_types)
        if key not in results:
            results[key] = run_product(product.kind, graph, product.rules.load(), job.options())
    return JobResult(graph.name, tuple(sorted(op_types)), tuple(sorted(results.items())))


def load_graph_data(data: GraphData) -> ComputeGraph:
    """The graph of an entry's bytes: a graph file parsed, or an ONNX model imported with the entry's options
    (from its path when that still holds these bytes, else from a copy: a cluster worker may not see the file)."""
    entry = data.entry
    if not entry.is_onnx:
        return load_graph_text(decode_text(data.data, entry.path, what="graph file"), entry.path)
    from ..onnx_fold import parse_input_shapes
    from ..onnx_import import import_onnx

    opts = entry.imports
    shapes = parse_input_shapes(opts.input_shape) if opts.input_shape else None

    def imported(path: str) -> ComputeGraph:
        dims = dict(opts.dims)
        return import_onnx(path, format_mode=opts.formats, dims=dims, input_shapes=shapes, weights=opts.weights).graph

    try:
        with open(entry.path, "rb") as f:
            same = f.read(len(data.data) + 1) == data.data
    except OSError:
        same = False
    if same:
        return imported(entry.path)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, Path(entry.path).name)
        Path(copy).write_bytes(data.data)
        return imported(copy)


def run_product(kind: str, graph: ComputeGraph, rules: RuleSet, options: dict[str, Any]) -> dict[str, Any]:
    """One product of `graph` (left untouched: the product runs on a copy), as JSON data."""
    try:
        return product(kind)(copy_graph(graph), rules, options["level"], tuple(options["disabled"]))
    except RulepassError as exc:
        d = exc.diagnostics[0]
        level, disabled = options["level"], options["disabled"]
        decided = _decisions_of(optimize(copy_graph(graph), rules, level=level, disabled=disabled, explain=False))
        return {**decided, "error": {"code": d.code, "message": d.headline()}, "soundness": _verdict(d.code)}
    except Exception as exc:  # a bug: one line in the report, not the end of the corpus
        return {"error": {"code": "internal", "message": f"internal error: {type(exc).__name__}: {exc}"}}


def _verdict(code: str | None) -> str | None:
    """The soundness verdict of a compile that ended with error `code` (None: it ended well)."""
    return "sound" if code is None else ("unsound" if code == UNSOUND else None)


def _compile(graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...]) -> dict[str, Any]:
    """The compile product: the decisions, and the figures a rule edit moves."""
    result = compile_graph(graph, rules, level=level, disabled=disabled)
    report = result.report()
    by_type = report["tasks"]["by_type"]
    return {
        **_decisions_of(result.optimize),
        "virtual_ops": len(report["memory"]["no_task_nodes"]),
        "copy_bytes_saved": report["memory"]["copy_bytes_saved"],
        "feature_map": report["memory"]["feature_map"],
        "tasks": report["tasks"]["total"],
        "kernel_tasks": sum(v for k, v in by_type.items() if k in KERNEL_TASKS),
        "streams": report["streams"],
        "soundness": _verdict(None),
        "error": None,
    }


def _optimize(graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...]) -> dict[str, Any]:
    """The optimize product: the decisions of the rule passes, and how many virtual ops they made."""
    result = optimize(graph, rules, level=level, disabled=disabled, explain=False)
    from ..facts import attr_bool

    virtual = sum(1 for n in graph.all_nodes() if attr_bool(n, "_no_task"))
    return {**_decisions_of(result), "virtual_ops": virtual, "error": None}


def _plan(graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...]) -> dict[str, Any]:
    """The plan product: the memory plan of the compile (`MemoryPlan.to_json`)."""
    return {"plan": compile_graph(graph, rules, level=level, disabled=disabled).memory.plan.to_json(), "error": None}


ProductFn = Callable[[ComputeGraph, RuleSet, str, tuple[str, ...]], dict[str, Any]]
PRODUCTS: dict[str, ProductFn] = {
    "compile": _compile,
    "optimize": _optimize,
    "plan": _plan,
}
NEAR_MISS = "nearmiss:"  # + K: the near misses failing 1..K checks (`compiler.nearmiss`)


def product(kind: str) -> ProductFn:
    """The function computing product `kind`: one of PRODUCTS, `nearmiss:K`, or `report:N:GRAPHVIZ`."""
    if kind.startswith(NEAR_MISS):
        return _near_misses(int(kind[len(NEAR_MISS) :]))
    if kind.startswith(REPORT):
        return _report(kind)
    return PRODUCTS[kind]


def _report(kind: str) -> ProductFn:
    def run(graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...]) -> dict[str, Any]:
        """The report product: the graph's figures and its report's sections (`render.graph_report`)."""
        return graph_report(graph, rules, level, disabled, kind)

    return run


def _model_job(job: Job, model: dict[str, Any]) -> JobResult:
    """A job on a model file: its report products read the model (it holds no decisions, and no rule runs on
    it: no op type makes a rule relevant to its cache key); any other product is an error."""
    name = Path(job.graph.entry.path).stem
    results: dict[str, dict[str, Any]] = {}
    for p in job.products:
        key = job.key(p, frozenset())
        if p.kind.startswith(REPORT):
            results[key] = model_report(model, name, p.kind)
        else:
            message = f"'{job.graph.entry.path}' is a model file: {p.kind} needs the graph file"
            results[key] = {"error": {"code": "model", "message": message}}
    return JobResult(name, (), tuple(sorted(results.items())))


def _near_misses(max_failed: int) -> ProductFn:
    def run(graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...]) -> dict[str, Any]:
        """The near-miss product: every candidate failing 1..K checks, with what firing on it would save."""
        from ..nearmiss import near_misses

        found = near_misses(graph, rules, max_failed=max_failed, level=level, disabled=disabled)
        return {"near_misses": [m.to_json() for m in found], "error": None}

    return run


def _decisions_of(result: OptimizeResult) -> dict[str, Any]:
    """Every decision (final state, the check that decided it) and every rule pass's counts, as JSON data."""
    undone = result.undone()
    passes = {
        r.name: {"candidates": r.stats.candidates, "fired": r.stats.fired}
        for r in result.reports
        if r.stats is not None and r.ran
    }
    return {
        "graph": result.graph.name,
        "nodes": len(result.graph.all_nodes()),
        "passes": passes,
        "decisions": [_decision(d, undone.get(i)) for i, d in enumerate(result.decisions)],
    }


def _decision(d: Decision, undo: Undo | None) -> dict[str, Any]:
    """A decision's final state: fired, missed (at which check, stopped where), undone (by which pass, why) or
    an undo of an earlier one."""
    if d.check_kind == "undo":
        state, check, detail = "undo", None, d.reason.message if d.reason is not None else ""
    elif undo is not None:
        state, check, detail = "undone", None, f"by {undo.by}: {undo.reason}"
    elif d.fired:
        state, check, detail = "fired", None, ""
    else:
        state, check, detail = "missed", "/".join(d.check_path) or d.check, "; ".join(d.elements)
    return {
        "pass": d.rule,
        "graph": d.graph,
        "node": d.node,
        "op_type": d.op_type,
        "state": state,
        "check": check,
        "detail": detail or (d.error or ""),
    }
