"""Small helpers for the SVG pictures rulepass writes itself: escaping, numbers, colours, byte sizes."""

from __future__ import annotations

import html
import zlib

__all__ = ["PALETTE", "colour_of", "esc", "human_bytes", "num", "short_bytes", "svg_document"]

# mid-light fills that read on white and under dark text (Tableau 10, lightened)
PALETTE = (
    "#8fb8de",
    "#f6b26b",
    "#93c47d",
    "#e06666",
    "#b4a7d6",
    "#c9a27e",
    "#ea9999",
    "#b7b7b7",
    "#d5d86b",
    "#76d7c4",
)
FONT = 'font-family="Helvetica, Arial, sans-serif"'


def esc(text: str) -> str:
    """`text` escaped for XML text and attribute values."""
    return html.escape(text, quote=True)


def num(x: float) -> str:
    """A coordinate, with one decimal at most (the same text for the same number everywhere)."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def colour_of(key: str) -> str:
    """A palette colour chosen by `key` (stable across runs and machines)."""
    return PALETTE[zlib.crc32(key.encode()) % len(PALETTE)]


def binary_unit(n: float) -> tuple[float, str] | None:
    """`n` bytes in the largest binary unit it reaches (`(192.0, "Mi")`), or None under 1 KiB."""
    for prefix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if abs(n) >= size:
            return n / size, prefix
    return None


def human_bytes(n: int) -> str:
    """`201327616 B (192.00 MiB)`: the exact count and, from 1 KiB on, a readable size."""
    unit = binary_unit(n)
    return f"{n} B" if unit is None else f"{n} B ({unit[0]:.2f} {unit[1]}B)"


def short_bytes(n: int) -> str:
    """A size in at most four significant characters and a unit, for axis ticks: `192M`, `12K`, `512`."""
    unit = binary_unit(n)
    if unit is None:
        return str(n)
    value, prefix = unit
    return f"{value:.0f}{prefix[0]}" if value >= 10 or value == int(value) else f"{value:.1f}{prefix[0]}"


def svg_document(width: float, height: float, body: list[str], title: str) -> str:
    """A self-contained SVG document (no external references) of `body`'s elements."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}" height="{num(height)}" '
        f'viewBox="0 0 {num(width)} {num(height)}" {FONT} font-size="11">\n'
        f"<title>{esc(title)}</title>\n"
        f'<rect x="0" y="0" width="{num(width)}" height="{num(height)}" fill="#ffffff"/>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
