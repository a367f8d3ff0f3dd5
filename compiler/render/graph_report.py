"""One graph's part of a corpus report, as JSON data: the product a corpus job computes (`report:N:GRAPHVIZ`),
cached and run on the workers like the others.

It holds the graph's figures (nodes, decisions, zero-copy ops, tasks, copy bytes and arena saved) and the
single-graph report's sections (`report.graph_sections`), their pictures bounded: past N nodes the graph,
memory and task pictures are left out with a note. The product's kind names Graphviz's version (or its
absence), so a result laid out by one Graphviz is not taken from the cache for another.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import cache
from typing import Any

from ...base.diagnostics import RulepassError
from ...dsl.load import RuleSet
from ..ir import ComputeGraph
from .graphviz import dot_program
from .report import decision_state, graph_picture, graph_sections
from .view import CompileView, view_of_graph, view_of_model

__all__ = ["REPORT", "graph_report", "model_of", "model_report", "report_kind", "report_options"]

REPORT = "report:"  # + N:GRAPHVIZ: a graph's report sections, pictures up to N nodes


@cache
def graphviz_tag() -> str:
    """A short digest of Graphviz's version (`dot -V`), or "none" when it is not installed."""
    program = dot_program()
    if program is None:
        return "none"
    try:
        done = subprocess.run([program, "-V"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    return hashlib.sha256(done.stdout + done.stderr).hexdigest()[:16]


def report_kind(max_nodes: int) -> str:
    """The product kind of a graph's report with pictures up to `max_nodes` nodes, laid out by this machine's
    Graphviz (when it has one)."""
    return f"{REPORT}{max_nodes}:{graphviz_tag()}"


def report_options(kind: str) -> tuple[int, bool]:
    """The node limit of a report product's kind, and whether its graph is laid out by Graphviz."""
    limit, _, tag = kind[len(REPORT) :].partition(":")
    return int(limit), tag != "none"


def graph_report(
    graph: ComputeGraph, rules: RuleSet, level: str, disabled: tuple[str, ...], kind: str
) -> dict[str, Any]:
    """The report product of a graph (compiled here, in place) under `rules`."""
    view = view_of_graph(graph, rules, level=level, disabled=disabled)
    return _of_view(view, *report_options(kind))


def model_report(model: dict[str, Any], name: str, kind: str) -> dict[str, Any]:
    """The report product of a model file's data (it holds no decisions); a model lacking what the report
    needs is the product's error."""
    try:
        view = view_of_model(model, name)
    except RulepassError as exc:
        d = exc.diagnostics[0]
        return {"error": {"code": d.code, "message": d.headline()}}
    return _of_view(view, *report_options(kind))


def model_of(data: bytes) -> dict[str, Any] | None:
    """The data of a model file's bytes (a JSON object with `model_def`), or None when they are not one."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and "model_def" in doc else None


def _of_view(view: CompileView, max_nodes: int, laid_out: bool) -> dict[str, Any]:
    """The figures and the sections of a view, its pictures bounded by `max_nodes`."""
    picture = graph_picture(view, max_nodes=max_nodes, layout=laid_out)
    small = picture.note is None
    parts = graph_sections(view, picture.dot, picture.svg, graph_note=picture.note, pictures=small)
    states = [decision_state(d, u) for d, u in view.shown_decisions()]
    mem = view.report["memory"] if view.report is not None else None
    return {
        "graph": view.graph.name,
        "model": view.from_model,
        "nodes": len(view.graph.all_nodes()),
        "decision_counts": {s: states.count(s) for s in ("fired", "missed", "undone")},
        "virtual_ops": len(view.virtual_nodes()),
        "tasks": len(view.tasks),
        "copy_bytes_saved": mem["copy_bytes_saved"] if mem is not None else None,
        "arena_saved": mem["bytes_saved"]
        if mem is not None and mem["feature_map_without_no_task"] is not None
        else None,
        "pictures": small,
        "plan": view.plan.to_json(),
        "sections": [[s.id, s.title, s.html] for s in parts],
        "error": None,
    }
