"""The report of a corpus: one self-contained HTML page (inline CSS and SVG, no network, opens from disk).

Its parts: the corpus's summary (graphs, decisions, zero-copy ops, tasks, copy bytes and arena saved, in all and
per graph); with the rules before an edit, the corpus diff (`corpus.render.html_fragment` of `corpus diff`'s
report: the figures it moves and every flipped decision); then each graph's report (`report.graph_sections`;
with the rules before, its memory beside the plan under them) in a `<details>` that opens, or the one line
saying why the graph could not be read or reported.

The work runs through the corpus machinery (`corpus.execute.run_corpus`: the cache, local workers): each
graph's report is a product (`graph_report`), computed once per graph, rule set, options and Graphviz. The page
depends on nothing else: the same corpus gives the same bytes at any worker count, from the cache or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...dsl.cache import Store
from ..corpus.execute import Outcome, Progress, run_corpus
from ..corpus.inputs import Entry, RuleSource
from ..corpus.render import html_fragment
from ..corpus.report import diff_report
from .graph_report import report_kind
from .report import ReportSection, memory_picture, page_html, sections_html
from .svg import esc, human_bytes
from .view import plan_from_json

__all__ = ["DEFAULT_MAX_NODES", "CorpusPage", "corpus_report"]

DEFAULT_MAX_NODES = 500  # nodes: past this a graph's pictures are left out of a corpus page (it holds many)
_NUMERIC = frozenset({0, 3, 5, 6, 7, 8})  # the summary table's columns of figures
_STYLE = "details{margin:6px 0}details>summary{cursor:pointer;font-weight:600}tr.failed td{color:#cf222e}"


@dataclass(frozen=True)
class CorpusPage:
    """A corpus report page, and what it holds: graphs, those that failed, and results taken from the cache."""

    html: str
    graphs: int
    failed: int
    cached: int
    results: int


def corpus_report(
    entries: Sequence[Entry],
    rules: RuleSource,
    before: RuleSource | None = None,
    *,
    level: str = "O3",
    disabled: Sequence[str] = (),
    workers: int = 1,
    store: Store | None = None,
    progress: Progress | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> CorpusPage:
    """The report page of the graphs of `entries` under `rules`; with `before`, also the corpus diff from the
    rules `before` to `rules`. A graph that cannot be read or reported is its row's error, not the page's."""
    sides = [("compile", before), ("compile", rules), ("plan", before)] if before is not None else []
    outcomes = run_corpus(
        entries,
        [(report_kind(max_nodes), rules), *sides],
        level=level,
        disabled=disabled,
        workers=workers,
        store=store,
        progress=progress,
    )
    names = [n for n, _ in rules.files]
    parts = [ReportSection("summary", "Corpus summary", _summary(outcomes, names, before))]
    if before is not None:
        compiled = [replace(o, results=o.results[1:3]) for o in outcomes]
        diff = diff_report(compiled, [n for n, _ in before.files], names, level)
        parts.append(ReportSection("corpus-diff", "Corpus diff: the rule edit", html_fragment(diff)))
    title = f"rulepass corpus report ({len(outcomes)} graphs, level {level})"
    tail = f'\n<h2 id="graphs">Graphs</h2>\n{_graphs(outcomes)}'
    return CorpusPage(
        page_html(title, parts, tail, style=_STYLE, links=[("graphs", "Graphs")]),
        graphs=len(outcomes),
        failed=sum(_error(o) is not None for o in outcomes),
        cached=sum(o.cached for o in outcomes),
        results=sum(len(o.results) for o in outcomes),
    )


def _result(o: Outcome) -> dict[str, Any]:
    """The report product's result of an outcome (the first product asked for)."""
    return o.results[0] if o.results else {}


def _sections(o: Outcome) -> list[ReportSection]:
    """A graph's report sections; with the rules before an edit, its memory set beside the plan under them (as
    `report GRAPH --before-rules` has it)."""
    r = _result(o)
    parts = [ReportSection(*s) for s in r["sections"]]
    plan = o.results[3] if len(o.results) > 3 else {}
    if not r["pictures"] or "plan" not in r or plan.get("error") is not None or "plan" not in plan:
        return parts
    panels = [("with these rules", plan_from_json(r["plan"])), ("before the rule edit", plan_from_json(plan["plan"]))]
    memory = ReportSection("memory", "Memory: time × address", memory_picture(panels, r["graph"]))
    return [memory if s.id == "memory" else s for s in parts]


def _error(o: Outcome) -> str | None:
    """Why a graph has no report: it could not be read, or its report stopped at an error."""
    if o.error is not None:
        return o.error
    err = _result(o).get("error")
    return str(err.get("message", err)) if isinstance(err, dict) else None


def _bytes(n: int | None) -> str:
    return "–" if n is None else human_bytes(n)


def _row(k: int, o: Outcome) -> tuple[list[str], dict[str, int]]:
    """A graph's row of the summary table (cells as HTML) and its figures to add up."""
    link = f'<a href="#g-{k}">{esc(o.entry.label)}</a>'
    why = _error(o)
    if why is not None:
        return [str(k), link, esc(o.name), *[""] * 6, esc(why)], {}
    r = _result(o)
    c = r["decision_counts"]
    figures = {
        "nodes": r["nodes"],
        **c,
        "virtual_ops": r["virtual_ops"],
        "tasks": r["tasks"],
        "copy_bytes_saved": r["copy_bytes_saved"] or 0,
        "arena_saved": r["arena_saved"] or 0,
    }
    note = "a model file: no decisions" if r["model"] else ("" if r["pictures"] else "too large for pictures")
    cells = [
        str(k),
        link,
        esc(r["graph"]),
        str(r["nodes"]),
        "–" if r["model"] else f"{c['fired']} / {c['missed']} / {c['undone']}",
        str(r["virtual_ops"]),
        str(r["tasks"]),
        _bytes(r["copy_bytes_saved"]),
        _bytes(r["arena_saved"]),
        note,
    ]
    return cells, figures


def _summary(outcomes: Sequence[Outcome], rules: Sequence[str], before: RuleSource | None) -> str:
    rows, totals = (
        [],
        dict.fromkeys(
            ("nodes", "fired", "missed", "undone", "virtual_ops", "tasks", "copy_bytes_saved", "arena_saved"), 0
        ),
    )
    for k, o in enumerate(outcomes, 1):
        cells, figures = _row(k, o)
        for name, v in figures.items():
            totals[name] += v
        cls = ' class="failed"' if not figures else ""
        tds = (f'<td class="num">{c}</td>' if i in _NUMERIC else f"<td>{c}</td>" for i, c in enumerate(cells))
        rows.append(f"<tr{cls}>{''.join(tds)}</tr>")
    failed = sum(1 for o in outcomes if _error(o) is not None)
    facts = [
        ("rules", ", ".join(rules)),
        *([("rules before the edit", ", ".join(n for n, _ in before.files))] if before is not None else []),
        ("graphs", f"{len(outcomes)}: {len(outcomes) - failed} reported, {failed} could not be read or reported"),
        ("nodes", str(totals["nodes"])),
        ("decisions", f"{totals['fired']} fired, {totals['missed']} missed, {totals['undone']} undone"),
        ("virtual (zero-copy) ops", str(totals["virtual_ops"])),
        ("tasks", str(totals["tasks"])),
        ("copy bytes avoided", human_bytes(totals["copy_bytes_saved"])),
        ("feature-map bytes saved", human_bytes(totals["arena_saved"])),
    ]
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "#",
            "graph file",
            "graph",
            "nodes",
            "decisions fired / missed / undone",
            "zero-copy ops",
            "tasks",
            "copy bytes avoided",
            "feature-map bytes saved",
            "note",
        )
    )
    return (
        "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts) + "</table>\n"
        f'<h3>Per graph</h3>\n<table class="graphs"><tr>{head}</tr>{"".join(rows)}</table>'
    )


def _graphs(outcomes: Sequence[Outcome]) -> str:
    """Each graph's report in a `<details>` (its sections' ids prefixed `g-K-`), or why it has none."""
    out = []
    for k, o in enumerate(outcomes, 1):
        why = _error(o)
        label = esc(o.entry.label)
        if why is not None:
            out.append(
                f'<details id="g-{k}" class="failed"><summary>{k}. {label}: could not be reported</summary>'
                f'<p class="note">{esc(why)}</p></details>'
            )
            continue
        r = _result(o)
        head = esc(
            f"{k}. {o.entry.label}: graph '{r['graph']}', {r['nodes']} nodes, "
            f"{r['virtual_ops']} zero-copy op(s), {r['tasks']} tasks"
        )
        parts = _sections(o)
        out.append(
            f'<details id="g-{k}"><summary>{head}</summary>\n{sections_html(parts, prefix=f"g-{k}-", heading="h3")}'
            "\n</details>"
        )
    return "\n".join(out)
