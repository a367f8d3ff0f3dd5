"""Near misses: the candidates of the no-task rules that fail only a few checks, and what fixing them would save.

"Which concats almost qualified, and what would it take?" The rule passes run on a copy of the graph as a compile
runs them (same order, same effects), and every candidate that misses at a check is evaluated once more going on
past its first failing check (`engine.run.NearMisses`, opt-in: a compile never pays for it). A candidate whose
failing checks number at most `max_failed` is a near miss; it is ranked by what the rule firing on it would save:
the bytes its copy moves (its outputs, as `MemoryResult.copy_bytes_saved` counts a virtual op's) and its task.
One graph at a time, so a corpus runner can call it per graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..base.diagnostics import error
from ..dsl.load import RuleSet
from ..engine.decisions import Decision
from .graph_file import copy_graph
from .ir import ComputeGraph
from .passes import DEFAULT_LEVEL, NO_TASK_TAG
from .pipeline import _pass_manager, _rules_for, copy_bytes


@dataclass(frozen=True)
class NearMiss:
    """A candidate that failed `len(failed)` checks (at most the limit asked): its decision as the compile made it,
    one record per failing check, and what the rule firing on it would save."""

    decision: Decision
    failed: tuple[Decision, ...]
    copy_bytes: int
    tasks: int

    def to_json(self) -> dict[str, Any]:
        """As JSON (stable keys)."""
        d = self.decision
        return {
            "pass": d.rule,
            "graph": d.graph,
            "node": d.node,
            "op_type": d.op_type,
            "copy_bytes": self.copy_bytes,
            "tasks": self.tasks,
            "failed": [_failed_json(f) for f in self.failed],
        }


_FAILED_KEYS = ("check", "check_path", "check_kind", "check_span", "elements", "reason", "error")


def _failed_json(f: Decision) -> dict[str, Any]:
    """A failing check as JSON: where it is, the elements it failed at, why (or the error): its decision record's
    fields that say so."""
    doc = f.to_json()
    return {k: doc[k] for k in _FAILED_KEYS}


def near_misses(
    graph: ComputeGraph,
    rules: RuleSet | None = None,
    *,
    max_failed: int = 1,
    level: str = DEFAULT_LEVEL,
    disabled: Iterable[str] = (),
) -> list[NearMiss]:
    """The near misses of `graph` (left unchanged: the passes run on a copy) under the no-task rules of `rules`
    (default: the bundled rules): candidates failing between 1 and `max_failed` checks, most bytes saved first
    (then most tasks, fewest failing checks, graph and node name)."""
    if isinstance(max_failed, bool) or not isinstance(max_failed, int) or max_failed < 1:
        raise error("usage", f"max_failed must be a positive integer, got {max_failed!r}")
    from ..engine.run import NearMisses

    rules = _rules_for(graph, rules)
    work = copy_graph(graph)
    near = NearMisses(max_failed)
    _pass_manager(rules, level, disabled).run(work, explain=False, near=near)
    no_task = {r.name for r in rules.rules if NO_TASK_TAG in r.rule.tags}
    nodes = {(g.name, n.name): n for g in (work, *work.all_subgraphs()) for n in g.nodes_in_insertion_order()}
    out = []
    for d, failed in near.found:
        node = nodes.get((d.graph, d.node))
        if d.rule in no_task and node is not None:
            out.append(NearMiss(d, failed, copy_bytes(node), 1))
    out.sort(key=lambda m: (-m.copy_bytes, -m.tasks, len(m.failed), m.decision.graph, m.decision.node))
    return out
