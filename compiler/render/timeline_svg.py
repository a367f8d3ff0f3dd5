"""The tasks per stream as a timeline, as SVG written here: one row per stream, each task a box at its place in
model order (coloured by type), and each event a red line from its EVENT_RECORD to its EVENT_WAIT."""

from __future__ import annotations

from collections.abc import Sequence

from .svg import colour_of, esc, num, svg_document
from .view import TaskView

__all__ = ["timeline_svg"]

LEFT, TOP, ROW_H, BOX_H = 74.0, 40.0, 34.0, 22.0
MAX_WIDTH = 1100.0
EVENT = "#cf222e"
TYPE_COLOURS = {"EVENT_RECORD": "#f4cccc", "EVENT_WAIT": "#ead1dc", "KERNEL": "#8fb8de", "HCCL": "#f6b26b"}


def timeline_svg(tasks: Sequence[TaskView], title: str) -> str:
    """Tasks by stream in model order; events join their record to their wait."""
    streams = sorted({t.stream for t in tasks})
    row = {s: i for i, s in enumerate(streams)}
    step = max(4.0, min(80.0, (MAX_WIDTH - LEFT) / max(len(tasks), 1)))
    width = LEFT + step * max(len(tasks), 1) + 16
    height = TOP + ROW_H * max(len(streams), 1) + 40
    body = [f'<text x="8" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    for s in streams:
        y = TOP + row[s] * ROW_H
        body.append(f'<text x="8" y="{num(y + BOX_H / 2 + 4)}" font-size="11">stream {s}</text>')
        body.append(
            f'<line x1="{num(LEFT)}" y1="{num(y + BOX_H / 2)}" x2="{num(width - 16)}" y2="{num(y + BOX_H / 2)}" '
            'stroke="#d0d7de"/>'
        )
    at: dict[int, tuple[float, float]] = {}
    for i, t in enumerate(tasks):
        x, y = LEFT + i * step, TOP + row[t.stream] * ROW_H
        fill = TYPE_COLOURS.get(t.type, colour_of(t.type))
        tip = f"task {t.id}: {t.type} of {t.op} on stream {t.stream}" + (
            f", event {t.event}" if t.event is not None else ""
        )
        body.append(
            f'<rect class="task" x="{num(x + 0.5)}" y="{num(y)}" width="{num(max(step - 1, 1.0))}" '
            f'height="{num(BOX_H)}" '
            f'fill="{fill}" stroke="#57606a" stroke-width="0.5"><title>{esc(tip)}</title></rect>'
        )
        if step >= 40:
            label = t.op if len(t.op) * 5.5 < step - 4 else t.op[: max(1, int((step - 4) / 5.5) - 1)] + "\u2026"
            body.append(
                f'<text x="{num(x + step / 2)}" y="{num(y + BOX_H / 2 + 3)}" text-anchor="middle" '
                f'font-size="9">{esc(label)}</text>'
            )
        if t.event is not None and t.type in ("EVENT_RECORD", "EVENT_WAIT"):
            end = (x + step / 2, y + (BOX_H if t.type == "EVENT_RECORD" else 0))
            if t.type == "EVENT_RECORD":
                at[t.event] = end
            elif t.event in at:
                (xa, ya), (xb, yb) = at[t.event], end
                body.append(
                    f'<line class="event" x1="{num(xa)}" y1="{num(ya)}" x2="{num(xb)}" y2="{num(yb)}" stroke="{EVENT}" '
                    f'stroke-width="1.5" stroke-dasharray="4,2"><title>event {t.event}</title></line>'
                )
    kinds = sorted({t.type for t in tasks})
    legend_y = TOP + ROW_H * max(len(streams), 1) + 16
    x = LEFT
    for k in kinds:
        body.append(
            f'<rect x="{num(x)}" y="{num(legend_y - 9)}" width="10" height="10" '
            f'fill="{TYPE_COLOURS.get(k, colour_of(k))}"/>'
        )
        body.append(f'<text x="{num(x + 14)}" y="{num(legend_y)}" font-size="10">{esc(k)}</text>')
        x += 14 + 6.5 * len(k) + 12
    if not tasks:
        body.append(f'<text x="8" y="{num(TOP + 12)}">no task: every op is virtual or needs none</text>')
    return svg_document(max(width, x + 8), height, body, title)
