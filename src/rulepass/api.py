"""The library API for compile scripts: load graphs and rules, run the passes, explain a decision.

Small and typed; every function raises :class:`RulepassError` (with located diagnostics) on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .compiler.graph_file import load_graph, save_graph
from .compiler.ir import ComputeGraph
from .compiler.passes import DEFAULT_LEVEL, PassReport, build_pass_manager, load_ge_rules
from .dsl.diagnostics import RulepassError, did_you_mean, error
from .dsl.load import RuleSet
from .engine.decisions import Decision

__all__ = [
    "ComputeGraph",
    "Decision",
    "OptimizeResult",
    "RuleSet",
    "RulepassError",
    "explain",
    "load_graph",
    "load_rules",
    "optimize",
    "save_graph",
]


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
) -> OptimizeResult:
    """Run the rule passes over `graph` (in place unless dry_run) and return the decisions."""
    pm = build_pass_manager(rules or load_rules(), level=level, disabled=disabled)
    return OptimizeResult(graph, pm.run(graph, dry_run=dry_run, trace_node=trace_node))


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
    graphs = [graph, *graph.all_subgraphs()]
    if not any(g.node(node) is not None for g in graphs):
        names = [n.name for g in graphs for n in g.nodes_in_insertion_order()]
        raise error("usage", f"no node '{node}' in graph '{graph.name}'", hint=did_you_mean(node, names))
    result = optimize(graph, rules, level=level, disabled=disabled, trace_node=node)
    out = [d for d in result.decisions if d.node == node and (rule is None or d.rule == rule)]
    return out
