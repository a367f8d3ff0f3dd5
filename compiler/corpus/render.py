"""A corpus report (`report.diff_report`, `report.batch_report`) for reading: plain text, markdown, or one
self-contained HTML page (inline style, no script, every name escaped) a reviewer can attach to a change.

Each report becomes one list of blocks (headings, paragraphs, tables, lists), which each format writes its way;
JSON is the report data itself (`json_text`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from .report import METRICS

FORMATS = ("text", "json", "markdown", "html")
LABELS = {
    "virtual_ops": "virtual ops",
    "kernel_tasks": "kernel tasks",
    "tasks": "tasks",
    "copy_bytes_saved": "copy bytes avoided",
    "feature_map": "feature-map arena",
    "nodes": "nodes",
}

Block = tuple[str, Any]  # ("h", text) | ("p", text) | ("table", (headers, rows)) | ("list", items)


def render(report: dict[str, Any], fmt: str) -> str:
    """The report in `fmt` (one of FORMATS)."""
    if fmt == "json":
        return json_text(report)
    return {"text": _text, "markdown": _markdown, "html": _html}[fmt](_blocks(report), _title(report))


def _blocks(report: dict[str, Any]) -> list[Block]:
    kind = report["kind"]
    return (
        _diff_blocks(report)
        if kind == "diff"
        else _nearmiss_blocks(report)
        if kind == "nearmiss"
        else _batch_blocks(report)
    )


def json_text(report: dict[str, Any]) -> str:
    """The report as JSON (keys in a fixed order, so equal reports are equal bytes)."""
    return json.dumps(report, indent=1, ensure_ascii=False) + "\n"


def _title(report: dict[str, Any]) -> str:
    return f"rulepass corpus {report['kind']} ({report['summary']['graphs']} graphs, level {report['level']})"


def _signed(n: int | None) -> str:
    return "?" if n is None else f"{n:+d}"


def _move(name: str, d: dict[str, Any]) -> str:
    return f"{LABELS[name]} {d['before']} -> {d['after']} ({_signed(d['delta'])})"


def _diff_blocks(r: dict[str, Any]) -> list[Block]:
    s = r["summary"]
    out: list[Block] = [
        ("p", f"base rules: {', '.join(r['base'])}"),
        ("p", f"new rules: {', '.join(r['rules'])}"),
        (
            "p",
            f"{s['graphs']} graphs: {s['changed']} changed, {s['unchanged']} unchanged, {s['unreadable']} unreadable; "
            f"{s['decisions_changed']} decision(s) changed, {s['verdicts_changed']} verdict(s) or error(s) changed",
        ),
        ("table", (["figure", "change in all"], [[LABELS[m], _signed(s["deltas"][m])] for m in METRICS])),
    ]
    if s["by_pass"]:
        rows = [[f["pass"], f"{f['before']} -> {f['after']}", str(f["count"])] for f in s["by_pass"]]
        out += [("h", "Decisions flipped, by pass"), ("table", (["pass", "flip", "count"], rows))]
    if r["graphs"]:
        rows = [
            [
                str(g["rank"]),
                g["graph"],
                str(len(g["changes"])),
                "; ".join(_move(m, d) for m, d in g["deltas"].items()),
                _verdict(g),
            ]
            for g in r["graphs"]
        ]
        out += [("h", "Graphs ranked by impact"), ("table", (["#", "graph", "decisions", "figures", "verdict"], rows))]
        for g in r["graphs"]:
            out.append(("h", f"{g['rank']}. {g['graph']} (graph '{g['name']}')"))
            rows = [
                [c["pass"], f"{c['graph']}/{c['node']}", c["op_type"], c["before"], c["after"], c["where"]]
                for c in g["changes"]
            ]
            if rows:
                out.append(
                    (
                        "table",
                        (["pass", "node", "type", "before", "after (the check that decides)", "stopped at"], rows),
                    )
                )
            if "error" in g:
                out.append(("p", f"error: {g['error']['before']} -> {g['error']['after']}"))
    out += _errors(r)
    return out


def _verdict(g: dict[str, Any]) -> str:
    v = g.get("soundness")
    return f"{v['before']} -> {v['after']}" if v else ("error changed" if "error" in g else "")


def _errors(r: dict[str, Any]) -> list[Block]:
    if not r["errors"]:
        return []
    return [
        ("h", "Graphs that could not be read or compiled"),
        ("list", [f"{e['graph']}: {e['error']}" for e in r["errors"]]),
    ]


def _batch_blocks(r: dict[str, Any]) -> list[Block]:
    s = r["summary"]
    out: list[Block] = [
        ("p", f"rules: {', '.join(r['rules'])}"),
        ("p", f"{s['graphs']} graphs: {s['ok']} ok, {s['failed']} failed, {s['unsound']} unsound"),
        ("table", (["figure", "in all"], [[LABELS[m], str(v)] for m, v in s["totals"].items()])),
    ]
    if s["by_pass"]:
        rows = [[p, str(c.get("candidates", 0)), str(c.get("fired", 0))] for p, c in s["by_pass"].items()]
        out += [("h", "Passes"), ("table", (["pass", "candidates", "fired"], rows))]
    cols = list(s["totals"])
    rows = [[g["graph"], *(str(g.get(m, "")) for m in cols), str(g.get("soundness") or "")] for g in r["graphs"]]
    out += [("h", "Graphs"), ("table", (["graph", *(LABELS[m] for m in cols), "soundness"], rows))]
    return out + _errors(r)


def _why(failed: dict[str, Any]) -> str:
    """Why a near miss's check failed, in one line: its reason's message, or its error."""
    reason = failed.get("reason")
    if isinstance(reason, dict):
        return str(reason.get("message") or "")
    return str(failed.get("error") or reason or "")


def _nearmiss_blocks(r: dict[str, Any]) -> list[Block]:
    s = r["summary"]
    out: list[Block] = [
        ("p", f"rules: {', '.join(r['rules'])}"),
        (
            "p",
            f"{s['near_misses']} candidate(s) in {s['with_near_misses']} of {s['graphs']} graphs fail at most "
            f"{r['max_failed']} check(s); firing on all would avoid {s['copy_bytes']:,} copy bytes and "
            f"{s['tasks']} task(s)",
        ),
    ]
    if s["by_check"]:
        out += [
            ("h", "Failing checks"),
            ("table", (["check", "near misses"], [[c, str(n)] for c, n in s["by_check"].items()])),
        ]
    rows = [
        [
            str(k),
            m["graph"],
            m["node"],
            m["pass"],
            f"{m['copy_bytes']:,}",
            str(m["tasks"]),
            "; ".join(f"{'/'.join(f['check_path'])}: {_why(f)}" for f in m["failed"]),
        ]
        for k, m in enumerate(r["near_misses"], 1)
    ]
    if rows:
        out += [
            ("h", "Near misses"),
            ("table", (["#", "graph", "node", "pass", "copy bytes", "tasks", "failing"], rows)),
        ]
    return out + _errors(r)


def _text(blocks: Sequence[Block], title: str) -> str:
    lines = [title]
    for kind, body in blocks:
        if kind == "h":
            lines += ["", body]
        elif kind == "p":
            lines.append(body)
        elif kind == "list":
            lines += [f"  {x}" for x in body]
        else:
            headers, rows = body
            widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]
            for row in [headers, *rows]:
                lines.append("  " + "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def _md_cell(x: str) -> str:
    return x.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _markdown(blocks: Sequence[Block], title: str) -> str:
    lines = [f"# {_md_cell(title)}", ""]
    for kind, body in blocks:
        if kind == "h":
            lines += [f"## {_md_cell(body)}", ""]
        elif kind == "p":
            lines += [_md_cell(body), ""]
        elif kind == "list":
            lines += [f"- {_md_cell(x)}" for x in body] + [""]
        else:
            headers, rows = body
            lines.append("| " + " | ".join(map(_md_cell, headers)) + " |")
            lines.append("|" + "---|" * len(headers))
            lines += ["| " + " | ".join(_md_cell(str(x)) for x in row) + " |" for row in rows]
            lines.append("")
    return "\n".join(lines)


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "h2{font-size:1.1em;margin-top:1.5em}"
)


def _html(blocks: Sequence[Block], title: str) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        *_html_blocks(blocks, "h2"),
    ]
    return "\n".join([*parts, "</body></html>"]) + "\n"


def html_fragment(report: dict[str, Any], heading: str = "h3") -> str:
    """The HTML report's body without its page (headings as `heading`): a part of another page."""
    return "\n".join(_html_blocks(_blocks(report), heading)) + "\n"


def _html_blocks(blocks: Sequence[Block], heading: str) -> list[str]:
    e = html.escape
    parts = []
    for kind, body in blocks:
        if kind == "h":
            parts.append(f"<{heading}>{e(body)}</{heading}>")
        elif kind == "p":
            parts.append(f"<p>{e(body)}</p>")
        elif kind == "list":
            parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in body) + "</ul>")
        else:
            headers, rows = body
            head = "".join(f"<th>{e(h)}</th>" for h in headers)
            cells = "".join("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in row) + "</tr>" for row in rows)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
    return parts
