"""The compile report: one self-contained HTML page (inline CSS and SVG, no network, opens from disk).

Its parts, each a `<section>` with an id: the summary and savings, every decision with its explanation, the
zero-copy groups, the memory picture, the tasks per stream as a timeline, and the graph picture (Graphviz's
SVG, or a note and the DOT when Graphviz is absent). More parts come in as `ReportSection`s, appended in the
order given (a corpus diff summary is one: `ReportSection("corpus-diff", "Corpus diff", html)`); each gets a
link in the page's contents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...engine.decisions import Decision
from ..memory.assign import MemoryPlan
from ..pipeline import Undo, verdict
from .dot import decision_lines, focus_nodes, graph_dot
from .graphviz import INSTALL_HINT, dot_digest, dot_program
from .graphviz import layout as graphviz_layout
from .memory_svg import memory_svg
from .svg import esc, human_bytes
from .timeline_svg import timeline_svg
from .view import CompileView

__all__ = [
    "GRAPH_SVG_END",
    "GRAPH_SVG_START",
    "MAX_LAID_OUT",
    "GraphPicture",
    "ReportSection",
    "decision_state",
    "graph_picture",
    "graph_sections",
    "memory_picture",
    "page_html",
    "report_html",
    "sections_html",
]

GRAPH_SVG_START = "<!-- graph-svg dot-sha256:"  # the graph picture sits between these marks
GRAPH_SVG_END = "<!-- /graph-svg -->"
MAX_LAID_OUT = 2000  # nodes: Graphviz's time grows faster than the graph (1,000 nodes take seconds, 8,000 minutes)


@dataclass(frozen=True)
class ReportSection:
    """One more part of the report: its anchor id, its heading, and its body (trusted HTML, already escaped)."""

    id: str
    title: str
    html: str


_STYLE = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#24292f;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.fired td.verdict{color:#1a7f37}tr.missed td.verdict{color:#d4700a}tr.undone td.verdict{color:#cf222e}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}details pre{margin:4px 0}
.picture{overflow-x:auto;border:1px solid #d0d7de;padding:4px}nav a{margin-right:12px}
table.misses-only tr.fired,table.misses-only tr.quiet{display:none}.note{color:#57606a}
"""

# the one script: the "misses only" switch of each decisions table (a corpus page has one per graph)
_SCRIPT = """
document.querySelectorAll('input.misses-only').forEach(function (box) {
  box.addEventListener('change', function (e) {
    box.closest('section').querySelector('table.decision-table').classList.toggle('misses-only', e.target.checked);
  });
});
"""


def _summary(view: CompileView) -> str:
    rows: list[tuple[str, str]] = [("graph", view.graph.name), ("nodes", str(len(view.graph.all_nodes())))]
    virtual = [n.name for n in view.virtual_nodes()]
    rows.append(("virtual (zero-copy) ops", f"{len(virtual)}: {', '.join(virtual) or 'none'}"))
    by_stream: dict[int, int] = {}
    for t in view.tasks:
        by_stream[t.stream] = by_stream.get(t.stream, 0) + 1
    rows.append(
        ("tasks", f"{len(view.tasks)} (" + ", ".join(f"stream {s}: {c}" for s, c in sorted(by_stream.items())) + ")")
    )
    rows.append(("events", str(len(view.events))))
    mem = view.report["memory"] if view.report is not None else None
    if mem is not None:
        rows.append(
            ("copies saved", f"{len(mem['no_task_nodes'])} kernel task(s), {human_bytes(mem['copy_bytes_saved'])}")
        )
        rows.append(("feature-map memory", human_bytes(mem["feature_map"])))
        if mem["feature_map_without_no_task"] is not None:
            rows.append(("without the no-task passes", human_bytes(mem["feature_map_without_no_task"])))
            rows.append(("feature-map bytes saved", human_bytes(mem["bytes_saved"])))
    for a in view.plan.arenas:
        rows.append(
            (
                f"arena {a.region} (type {a.mem_type})",
                f"{human_bytes(a.size)}, lower bound {a.lower_bound}, ratio {a.ratio:.4f}",
            )
        )
    if view.compared is not None and (mem is None or mem["feature_map_without_no_task"] is None):
        rows.append((f"feature map {view.compared_label}", human_bytes(view.compared.total("feature_map"))))
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _decisions(view: CompileView) -> str:
    if view.from_model:
        return '<p class="note">A model file holds no decisions: report the graph file to see them.</p>'
    rows = []
    for d, u in view.shown_decisions():
        state = decision_state(d, u)
        lines = decision_lines(d, u)
        why = (
            f"<details><summary>why</summary><pre>{esc(chr(10).join(lines[1:]))}</pre></details>"
            if len(lines) > 1
            else ""
        )
        rows.append(
            f'<tr class="{state}"><td>{esc(d.rule)}</td><td>{esc(d.graph)}</td><td>{esc(d.node)}</td>'
            f'<td>{esc(d.op_type)}</td><td class="verdict">{esc(verdict(d, u))}{why}</td></tr>'
        )
    if not rows:
        return '<p class="note">No candidate: no rule that ran found a node to decide on.</p>'
    return (
        '<p><label><input type="checkbox" class="misses-only"> misses and undone only</label></p>'
        '<table class="decision-table">'
        "<tr><th>pass</th><th>graph</th><th>node</th><th>op type</th><th>decision</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _groups(view: CompileView) -> str:
    rows = [
        f"<tr><td>{esc(g.node)}</td><td>{esc(g.op_type)}</td><td>{esc(m.role)}</td><td>{esc(m.tensor)}</td>"
        f'<td class="num">+{m.offset}</td><td class="num">{m.size}</td></tr>'
        for g in view.zero_copy_groups()
        for m in g.members
    ]
    if not rows:
        return '<p class="note">No zero-copy op.</p>'
    head = "<tr><th>virtual op</th><th>type</th><th>member</th><th>tensor</th><th>offset</th><th>bytes</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _graph_picture(dot_text: str, graph_svg: str | None, graph_note: str | None) -> str:
    if graph_note is not None:
        return f'<p class="note">{esc(graph_note)}</p>'
    if graph_svg is None:
        return (
            f'<p class="note">Graphviz is not installed, so the graph is given as DOT: {esc(INSTALL_HINT)}.</p>'
            f"<pre>{esc(dot_text)}</pre>"
        )
    start = graph_svg.find("<svg")
    return (
        f'{GRAPH_SVG_START}{dot_digest(dot_text)} -->\n<div class="picture">{graph_svg[start:]}</div>\n{GRAPH_SVG_END}'
    )


def decision_state(d: Decision, undo: Undo | None) -> str:
    """A shown decision's final state: "fired", "missed" or "undone" (an undo counts as undone)."""
    return "undone" if undo is not None or d.check_kind == "undo" else ("fired" if d.fired else "missed")


@dataclass(frozen=True)
class GraphPicture:
    """The graph part of a report: its DOT, Graphviz's SVG of it (None when Graphviz is absent or the graph is
    too large), and the note standing in the picture's place when it is too large."""

    dot: str
    svg: str | None
    note: str | None

    @property
    def graphviz_missing(self) -> bool:
        """Whether the DOT stands for the picture because Graphviz is not installed."""
        return self.svg is None and self.note is None


def graph_picture(
    view: CompileView, *, focus: str | None = None, depth: int = 2, max_nodes: int | None = None, layout: bool = True
) -> GraphPicture:
    """The graph picture of `view` (the neighbourhood of `focus` when given), laid out by Graphviz when it is
    installed and `layout` is true; past `max_nodes` shown nodes (default `MAX_LAID_OUT`) a note instead."""
    limit = MAX_LAID_OUT if max_nodes is None else max_nodes
    dot = graph_dot(view, focus=focus, depth=depth)
    shown = len(focus_nodes(view, focus, depth)) if focus else len(view.graph.all_nodes())
    if shown > limit:
        note = (
            f"The graph's {shown} nodes are more than the {limit} the report lays out; "
            "`rulepass report GRAPH --focus NODE --depth K` draws a part, `rulepass render GRAPH -o graph.svg` all."
        )
        return GraphPicture(dot, None, note)
    if layout and dot_program() is not None:
        return GraphPicture(dot, graphviz_layout(dot, "svg").decode(), None)
    return GraphPicture(dot, None, None)


def memory_picture(panels: Sequence[tuple[str, MemoryPlan]], name: str) -> str:
    """The memory part of the report of graph `name`: its plans (label, plan) side by side."""
    return f'<div class="picture">{memory_svg(panels, f"memory of {name}")}</div>'


def graph_sections(
    view: CompileView, dot_text: str, graph_svg: str | None, *, graph_note: str | None = None, pictures: bool = True
) -> list[ReportSection]:
    """The parts of the report of `view` (see `report_html`); without `pictures`, the memory and task pictures
    are left out with a note (a graph too large for a page of many)."""
    name = view.graph.name
    panels = [("with these rules", view.plan)] + ([(view.compared_label, view.compared)] if view.compared else [])
    left_out = '<p class="note">Left out: the graph is too large for this page; `rulepass report GRAPH` draws it.</p>'
    memory = memory_picture(panels, name) if pictures else left_out
    tasks = f'<div class="picture">{timeline_svg(view.tasks, f"tasks of {name}")}</div>' if pictures else left_out
    return [
        ReportSection("summary", "Summary and savings", _summary(view)),
        ReportSection("decisions", "Decisions", _decisions(view)),
        ReportSection("zero-copy", "Zero-copy groups", _groups(view)),
        ReportSection("memory", "Memory: time × address", memory),
        ReportSection("timeline", "Tasks per stream", tasks),
        ReportSection("graph", "Graph", _graph_picture(dot_text, graph_svg, graph_note)),
    ]


def sections_html(parts: Sequence[ReportSection], *, prefix: str = "", heading: str = "h2") -> str:
    """`parts` as `<section>`s, their ids prefixed with `prefix` (unique on a page of many graphs)."""
    return "\n".join(
        f'<section id="{esc(prefix + s.id)}">\n<{heading}>{esc(s.title)}</{heading}>\n{s.html}\n</section>'
        for s in parts
    )


def page_html(
    title: str,
    parts: Sequence[ReportSection],
    tail: str = "",
    *,
    style: str = "",
    links: Sequence[tuple[str, str]] = (),
) -> str:
    """One self-contained page: `title`, links to `parts` (and to the anchors `links` name: (id, text)), the
    parts, then `tail` (trusted HTML); `style` adds to the report's CSS."""
    nav = "".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t in [*((s.id, s.title) for s in parts), *links])
    body = sections_html(parts) + tail
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{esc(title)}</title>\n'
        f"<style>{_STYLE}{style}</style>\n</head>\n<body>\n<h1>{esc(title)}</h1>\n<nav>{nav}</nav>\n"
        f"{body}\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def report_html(
    view: CompileView,
    dot_text: str,
    graph_svg: str | None,
    sections: Sequence[ReportSection] = (),
    *,
    graph_note: str | None = None,
) -> str:
    """The report page of `view`: `dot_text` is its graph's DOT, `graph_svg` Graphviz's SVG of it (None when
    Graphviz is absent: the DOT is shown); `graph_note`, when given, stands in the graph's place instead (a graph
    too large to lay out); `sections` are appended as they are."""
    parts = [*graph_sections(view, dot_text, graph_svg, graph_note=graph_note), *sections]
    return page_html(f"rulepass report: {view.graph.name}", parts)
