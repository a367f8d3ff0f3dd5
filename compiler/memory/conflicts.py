"""GE's memory-layout conflict step: zero-copy decisions are local (a concat checks its direct producers), so two
of them can demand incompatible layouts, e.g. split -> Reshape -> concat putting the concat's next input on a
split part. GE resolves the conflicts its MemLayoutConflictOptimizer knows by inserting an Identity (the rules of
rules/mem_layout_conflict.yaml, which run first); GE never undoes a zero-copy op there. What is left here is a
conflict none of those rules resolved (one GE's checkers do not look for, or with those rules disabled): the
later of the zero-copy ops involved (in execution order) becomes an ordinary op again, as GE's own no-task passes
decline an op whose layout another already claimed, until no conflict is left (docs/layout_conflicts.md).

It lives with memory because it reads memory's layout relations (`assign.find_layout_conflicts`); the pass
manager runs it as MemLayoutConflictPass and records each op it undoes.
"""

from __future__ import annotations

from ...base.diagnostics import error
from ..ir import ComputeGraph, Node
from .assign import LayoutConflict, find_layout_conflicts

ZERO_COPY_ATTRS = (
    "_no_task",
    "_no_padding_continuous_input",
    "_no_padding_continuous_output",
    "_output_reuse_input",
    "_reuse_input_on_dim_index",
)


def resolve_layout_conflicts(graph: ComputeGraph) -> list[tuple[Node, LayoutConflict]]:
    """Undo zero-copy ops of `graph` (a root graph) until its layouts hold together; returns each op undone with
    the conflict that undid it, in order. An unexplained or unsettling conflict is an error[memory-layout]."""
    conflicts = find_layout_conflicts(graph)
    undone: list[tuple[Node, LayoutConflict]] = []
    if not conflicts:
        return undone
    all_nodes = graph.all_nodes()
    order = {n.name: i for i, n in enumerate(all_nodes)}
    nodes = {n.name: n for n in all_nodes}
    for _ in range(len(nodes) + 1):
        if not conflicts:
            return undone
        c = conflicts[0]
        virtual = [nodes[o] for o in c.ops if o in nodes and nodes[o].op.attrs.get("_no_task") is True]
        if not virtual:
            raise error("memory-layout", f"layout conflict no zero-copy op explains: {c}", where=c.a)
        undo = max(virtual, key=lambda n: order[n.name])
        for attr in ZERO_COPY_ATTRS:
            undo.op.attrs.pop(attr, None)
        undone.append((undo, c))
        conflicts = find_layout_conflicts(graph)
    raise error("memory-layout", "layout conflicts did not settle", where=graph.name)
