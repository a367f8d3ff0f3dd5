"""The graph as Graphviz DOT, written here (byte for byte the same for the same view): virtual ops, zero-copy
groups (each input at its offset), streams (fill colour), events (red dashed edges) and every candidate's
decision (border colour; the tooltip holds the failing check, its values and where the check is defined).

`--focus NODE --depth K` keeps the nodes within K edges of NODE (data, control and events, either way).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from ...base.diagnostics import did_you_mean, error
from ...engine.decisions import Decision
from ..ir import ComputeGraph, Node
from ..pipeline import Undo, verdict
from .view import CompileView

__all__ = ["STREAM_COLOURS", "decision_lines", "focus_nodes", "graph_dot"]

# light fills, one per stream (cycled): distinguishable, and dark text stays readable on each
STREAM_COLOURS = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf0", "#fbe3e8", "#fff3bf", "#d5f0f0", "#e6e6e6")
FIRED, MISSED, UNDONE = "#1a7f37", "#d4700a", "#cf222e"
ZERO_COPY = "#1a7f37"
EVENT = "#cf222e"


def quote(text: str) -> str:
    """`text` as a DOT double-quoted string (backslashes doubled, so no escape sequence is read into it)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def decision_lines(d: Decision, undo: Undo | None) -> list[str]:
    """A decision explained: the pass and its verdict, then (for a miss) the reason chain down to the values the
    failing check saw and where that check is defined."""
    lines = [f"{d.rule}: {verdict(d, undo)}"]
    if d.fired or d.check_kind == "undo":
        return lines
    if d.reason is not None:
        lines += d.reason.lines(1)
    elif d.error:
        lines.append(f"  {d.error}")
    if d.check_span is not None:
        lines.append(f"  check '{d.check}' defined at {d.check_span}")
    return lines


def _neighbours(view: CompileView) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for n in view.graph.all_nodes():
        mine = out.setdefault(n.name, set())
        for p in n.in_peers:
            if p is not None:
                mine.add(p.node.name)
                out.setdefault(p.node.name, set()).add(n.name)
        for c in n.control_in:
            mine.add(c.name)
            out.setdefault(c.name, set()).add(n.name)
    for e in view.events:
        out.setdefault(e.producer, set()).add(e.consumer)
        out.setdefault(e.consumer, set()).add(e.producer)
    return out


def focus_nodes(view: CompileView, focus: str, depth: int) -> set[str]:
    """The names of the nodes within `depth` edges of `focus` (data, control or event, in either direction)."""
    if depth < 0:
        raise error("usage", f"--depth must be 0 or more, not {depth}")
    names = [n.name for n in view.graph.all_nodes()]
    if focus not in set(names):
        raise error("usage", f"no node '{focus}' in graph '{view.graph.name}'", hint=did_you_mean(focus, names))
    near = _neighbours(view)
    seen = {focus: 0}
    todo = deque([focus])
    while todo:
        x = todo.popleft()
        if seen[x] == depth:
            continue
        for y in sorted(near.get(x, ())):
            if y not in seen:
                seen[y] = seen[x] + 1
                todo.append(y)
    return set(seen)


def _node_attrs(view: CompileView, n: Node, decided: list[tuple[Decision, Undo | None]], hidden: int) -> str:
    virtual = n.op.attrs.get("_no_task") is True
    lines = [n.name, n.type + (" (virtual)" if virtual else "")]
    if n.op.stream_id >= 0:
        lines.append(f"stream {n.op.stream_id}")
    for d, u in decided:
        mark = "\u2717" if (not d.fired or u is not None) and d.check_kind != "undo" else "\u2713"
        lines.append(f"{mark} {d.rule}" + ("" if d.fired or d.check_kind == "undo" else f" @ {d.check}"))
    if hidden:
        lines.append(f"(+{hidden} not shown)")
    tip = [f"{n.name} ({n.type}), engine {n.op.engine or '-'}, stream {n.op.stream_id}"]
    tip += [x for d, u in decided for x in decision_lines(d, u)]
    colour = "#57606a"
    if decided:
        if any(u is not None or d.check_kind == "undo" for d, u in decided):
            colour = UNDONE
        elif any(d.fired for d, _ in decided):
            colour = FIRED
        else:
            colour = MISSED
    fill = STREAM_COLOURS[n.op.stream_id % len(STREAM_COLOURS)] if n.op.stream_id >= 0 else "#ffffff"
    style = "filled,dashed,bold" if virtual else ("filled,bold" if decided else "filled")
    shape = "ellipse" if n.type in ("Data", "RefData", "Const", "Constant", "Variable", "NetOutput") else "box"
    attrs = [
        f"label={quote(chr(10).join(lines))}",
        f"tooltip={quote(chr(10).join(tip))}",
        f"shape={shape}",
        f'style="{style}"',
        f'fillcolor="{fill}"',
        f'color="{colour}"',
    ]
    if hidden:
        attrs.append("peripheries=2")
    return ", ".join(attrs)


def _tensor_text(n: Node, index: int) -> str:
    d = n.op.output_descs[index]
    return f"{d.dtype}[{','.join(str(x) for x in d.shape)}]"


def graph_dot(view: CompileView, *, focus: str | None = None, depth: int = 2) -> str:
    """The view's graph as DOT text (deterministic); only `focus`'s neighbourhood when given."""
    g = view.graph
    keep = focus_nodes(view, focus, depth) if focus is not None else None
    nodes = [n for n in g.all_nodes() if keep is None or n.name in keep]
    ids = {n.name: f"n{i}" for i, n in enumerate(nodes)}
    near = _neighbours(view) if keep is not None else {}
    decided = view.decisions_by_node()
    offsets = {(grp.node, m.role): m.offset for grp in view.zero_copy_groups() for m in grp.parts()}
    out = [
        f"digraph {quote(g.name)} {{",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=10, labelloc=b, '
        f"label={quote(_legend(view, focus, depth, len(nodes)))}];",
        '  node [fontname="Helvetica", fontsize=10, penwidth=1.2];',
        '  edge [fontname="Helvetica", fontsize=8, color="#57606a"];',
    ]
    by_graph: dict[int, list[Node]] = {}
    for n in nodes:
        by_graph.setdefault(id(n.graph), []).append(n)
    for sub in [g, *g.all_subgraphs()]:
        mine = by_graph.get(id(sub), [])
        if not mine:
            continue
        indent = "  " if sub is g else "    "
        if sub is not g:
            owner = sub.parent_node.name if sub.parent_node is not None else "?"
            out.append(f"  subgraph {quote('cluster_' + sub.name)} {{")
            out.append(f'    label={quote(f"subgraph {sub.name} of {owner}")}; style=rounded; color="#8c959f";')
        for n in mine:
            hidden = len(near.get(n.name, set()) - keep) if keep is not None else 0
            out.append(f"{indent}{ids[n.name]} [{_node_attrs(view, n, decided.get((sub.name, n.name), []), hidden)}];")
        if sub is not g:
            out.append("  }")
    out += _edges(nodes, ids, offsets)
    for e in view.events:
        if e.producer in ids and e.consumer in ids:
            tip = (
                f"event {e.id}: recorded after {e.producer} on stream {e.record_stream}, "
                f"waited for before {e.consumer} on stream {e.wait_stream}"
            )
            out.append(
                f'  {ids[e.producer]} -> {ids[e.consumer]} [style=dashed, color="{EVENT}", fontcolor="{EVENT}", '
                f"constraint=false, label={quote(f'event {e.id}')}, tooltip={quote(tip)}];"
            )
    out.append("}")
    return "\n".join(out) + "\n"


def _edges(nodes: Sequence[Node], ids: dict[str, str], offsets: dict[tuple[str, str], int]) -> list[str]:
    out = []
    for n in nodes:
        for a in n.in_anchors:
            p = a.peer
            if p is None or p.node.name not in ids:
                continue
            text = _tensor_text(p.node, p.index)
            at = offsets.get((n.name, f"in {a.index}"), offsets.get((p.node.name, f"out {p.index}")))
            tip = f"{p.node.name}:{p.index} -> {n.name}:in{a.index}, {text}"
            if at is None:
                out.append(f"  {ids[p.node.name]} -> {ids[n.name]} [label={quote(text)}, tooltip={quote(tip)}];")
                continue
            label = f"{text}\n@ +{at}"
            tip += f", zero-copy: at byte offset {at} of the group"
            out.append(
                f"  {ids[p.node.name]} -> {ids[n.name]} [label={quote(label)}, tooltip={quote(tip)}, "
                f'color="{ZERO_COPY}", fontcolor="{ZERO_COPY}", penwidth=2];'
            )
        for c in n.control_in:
            if c.name in ids:
                tip = f"control: {c.name} before {n.name}"
                out.append(f"  {ids[c.name]} -> {ids[n.name]} [style=dotted, arrowhead=odot, tooltip={quote(tip)}];")
    return out


def _legend(view: CompileView, focus: str | None, depth: int, shown: int) -> str:
    g: ComputeGraph = view.graph
    head = f"graph {g.name}: {len(g.all_nodes())} nodes"
    if focus is not None:
        head += f", {shown} within {depth} edge(s) of {focus}"
    lines = [
        head,
        "fill: stream; border: green fired, orange missed, red undone; dashed: virtual (zero-copy) op",
        "green edges: zero-copy inputs at their byte offset; red dashed: events; dotted: control",
    ]
    if view.from_model:
        lines.append("(a model file holds no decisions: render the graph file to see them)")
    return "\n".join(lines)
