"""The memory plan as a time × address picture, one panel per arena (region and memory type), as SVG written here.

Each tensor is a rectangle from its first to its last step (x) over its bytes (y, addresses upwards);
the tensors of one placement unit share a colour, and a unit of several tensors (a zero-copy group: a virtual
op's inputs inside its output) is outlined in green. The arena's size (the peak address in use) is a solid
line, the lower bound (the most bytes live at one step) a dashed one. Plans set side by side (e.g. without the
no-task passes, or before a rule edit) share each row's address scale, so heights compare honestly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..memory.assign import MemoryPlan, TensorPlacement
from .svg import colour_of, esc, human_bytes, num, short_bytes, svg_document

__all__ = ["memory_svg"]

Scale = Callable[[float], float]

PLOT_W, PLOT_H = 460.0, 200.0
LEFT, RIGHT, TOP, BOTTOM = 62.0, 16.0, 58.0, 34.0
PANEL_W, PANEL_H = LEFT + PLOT_W + RIGHT, TOP + PLOT_H + BOTTOM
GROUP = "#1a7f37"
PEAK, BOUND = "#24292f", "#cf222e"


def _regions(plans: Sequence[MemoryPlan]) -> list[tuple[str, int]]:
    """Every (region, memory type) of the plans, in the first plan's arena order, then the others'."""
    out: list[tuple[str, int]] = []
    for p in plans:
        for a in p.arenas:
            if (a.region, a.mem_type) not in out:
                out.append((a.region, a.mem_type))
    return out


def _top(plan: MemoryPlan, key: tuple[str, int]) -> int:
    a = next((a for a in plan.arenas if (a.region, a.mem_type) == key), None)
    ends = [t.offset + t.size for t in plan.tensors.values() if (t.region, t.mem_type) == key]
    if key[0] == "feature_map":
        ends += [w.offset + w.size for w in plan.workspaces if w.mem_type == key[1]]
    return max([*ends, a.size if a else 0, a.lower_bound if a else 0, 1])


def _window(plans: Sequence[MemoryPlan], key: tuple[str, int]) -> tuple[int, int]:
    """The steps a row shows: from the first step a tensor of the arena lives at to one past the last."""
    spans = [(t.first, t.last) for p in plans for t in p.tensors.values() if (t.region, t.mem_type) == key]
    if key[0] == "feature_map":
        spans += [(w.step, w.step) for p in plans for w in p.workspaces if w.mem_type == key[1]]
    if not spans:
        return 0, 1
    return min(a for a, _ in spans), max(b for _, b in spans) + 1


def memory_svg(panels: Sequence[tuple[str, MemoryPlan]], title: str) -> str:
    """A picture of each plan's arenas: one column per (label, plan), one row per arena over the steps its
    tensors live at."""
    plans = [p for _, p in panels]
    rows = _regions(plans)
    body: list[str] = [f'<text x="8" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    for r, key in enumerate(rows):
        ymax = max(_top(p, key) for p in plans)
        window = _window(plans, key)
        for c, (label, plan) in enumerate(panels):
            body += _panel(plan, key, label, window, ymax, c * PANEL_W, 28 + r * PANEL_H)
    width = max(1, len(panels)) * PANEL_W
    height = 28 + max(1, len(rows)) * PANEL_H
    if not rows:
        body.append('<text x="8" y="50">no arena: the plan places no tensor</text>')
    return svg_document(width, height, body, title)


def _panel(
    plan: MemoryPlan, key: tuple[str, int], label: str, window: tuple[int, int], ymax: int, x0: float, y0: float
) -> list[str]:
    region, mem_type = key
    arena = next((a for a in plan.arenas if (a.region, a.mem_type) == key), None)
    px, py = x0 + LEFT, y0 + TOP

    def x(step: float) -> float:
        return px + (step - window[0]) / (window[1] - window[0]) * PLOT_W

    def y(addr: float) -> float:
        return py + PLOT_H - addr / ymax * PLOT_H

    head = f"{label}: {region} (memory type {mem_type})"
    sub = "not in this plan"
    if arena is not None:
        sub = f"arena {human_bytes(arena.size)}, lower bound {human_bytes(arena.lower_bound)}, ratio {arena.ratio:.4f}"
    out = [
        f'<g class="panel" data-region="{esc(region)}">',
        f'<text x="{num(x0 + 8)}" y="{num(y0 + 18)}" font-size="12" font-weight="bold">{esc(head)}</text>',
        f'<text x="{num(x0 + 8)}" y="{num(y0 + 34)}" fill="#57606a">{esc(sub)}</text>',
        f'<rect x="{num(px)}" y="{num(py)}" width="{num(PLOT_W)}" height="{num(PLOT_H)}" '
        'fill="#f6f8fa" stroke="#d0d7de"/>',
    ]
    out += _axes(px, py, window, ymax, x)
    tensors = sorted(
        (t for t in plan.tensors.values() if (t.region, t.mem_type) == key), key=lambda t: (t.first, t.offset, t.anchor)
    )
    for t in tensors:
        out.append(_rect(x(t.first), y(t.offset + t.size), x(t.last + 1), y(t.offset), colour_of(t.unit), _tip(t)))
    if region == "feature_map":
        for w in plan.workspaces:
            if w.mem_type == mem_type:
                tip = f"workspace {w.index} of {w.node}: offset {w.offset}, {human_bytes(w.size)}, step {w.step}"
                out.append(_rect(x(w.step), y(w.offset + w.size), x(w.step + 1), y(w.offset), "#d0d7de", tip))
    out += _groups(tensors, x, y)
    if arena is not None:
        out += _line(px, y(arena.size), PEAK, "", f"peak {short_bytes(arena.size)}", "start")
        out += _line(
            px,
            y(arena.lower_bound),
            BOUND,
            ' stroke-dasharray="5,3"',
            f"lower bound {short_bytes(arena.lower_bound)}",
            "end",
        )
    out.append("</g>")
    return out


def _axes(px: float, py: float, window: tuple[int, int], ymax: int, x: Scale) -> list[str]:
    out = [
        f'<text x="{num(px + PLOT_W / 2)}" y="{num(py + PLOT_H + 28)}" text-anchor="middle" fill="#57606a">step</text>'
    ]
    lo, hi = window
    every = max(1, -(-(hi - lo) // 10))
    for s in range(lo, hi + 1, every):
        sx = x(s)
        out.append(f'<text x="{num(sx)}" y="{num(py + PLOT_H + 14)}" text-anchor="middle" font-size="9">{s}</text>')
    for k in range(5):
        addr = ymax * k // 4
        ay = py + PLOT_H - addr / ymax * PLOT_H
        out.append(
            f'<text x="{num(px - 4)}" y="{num(ay + 3)}" text-anchor="end" font-size="9">{short_bytes(addr)}</text>'
        )
    return out


def _rect(xa: float, ya: float, xb: float, yb: float, fill: str, tip: str) -> str:
    h = max(yb - ya, 1.0)
    return (
        f'<rect x="{num(xa)}" y="{num(ya)}" width="{num(max(xb - xa, 1.0))}" height="{num(h)}" fill="{fill}" '
        f'stroke="#ffffff" stroke-width="0.5"><title>{esc(tip)}</title></rect>'
    )


def _tip(t: TensorPlacement) -> str:
    return (
        f"{t.anchor}: offset {t.offset}, {human_bytes(t.size)} (raw {t.raw_size}), steps {t.first}..{t.last}, "
        f"unit {t.unit}"
    )


def _groups(tensors: Sequence[TensorPlacement], x: Scale, y: Scale) -> list[str]:
    units: dict[str, list[TensorPlacement]] = {}
    for t in tensors:
        units.setdefault(t.unit, []).append(t)
    out = []
    for unit, members in sorted(units.items()):
        if len(members) < 2:
            continue
        lo, hi = min(t.offset for t in members), max(t.offset + t.size for t in members)
        first, last = min(t.first for t in members), max(t.last for t in members)
        xa, xb = x(first), x(last + 1)
        ya, yb = y(hi), y(lo)
        names = ", ".join(
            f"{t.anchor} at +{t.offset - lo}" for t in sorted(members, key=lambda t: (t.offset, t.anchor))
        )
        out.append(
            f'<rect x="{num(xa)}" y="{num(ya)}" width="{num(max(xb - xa, 1.0))}" height="{num(max(yb - ya, 1.0))}" '
            f'fill="none" stroke="{GROUP}" stroke-width="2" stroke-dasharray="6,3" class="zero-copy">'
            f"<title>{esc(f'zero-copy group {unit}: {names}')}</title></rect>"
        )
    return out


def _line(px: float, ly: float, colour: str, dash: str, label: str, anchor: str) -> list[str]:
    tx = px + 4 if anchor == "start" else px + PLOT_W - 4
    return [
        f'<line x1="{num(px)}" y1="{num(ly)}" x2="{num(px + PLOT_W)}" y2="{num(ly)}" stroke="{colour}" '
        f'stroke-width="1.5"{dash}/>',
        f'<text x="{num(tx)}" y="{num(ly - 3)}" text-anchor="{anchor}" fill="{colour}" '
        f'font-size="10">{esc(label)}</text>',
    ]
