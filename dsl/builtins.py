"""Helpers every rule can call whatever the domain: sizes, ranges, positions, string tests, min/max/sum.

They know nothing of graphs; the domain adds its own helpers to the catalogue beside these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .catalogue import Catalogue

RANGE_CAP = 1 << 20  # range(n) holds at most this many integers


def _range(n: int) -> list[int]:
    return list(range(max(0, min(n, RANGE_CAP))))


def _len(x: Any) -> int:
    if isinstance(x, (list, tuple, str)):
        return len(x)
    raise TypeError(f"len() needs a list or a string, got {type(x).__name__}")


def _index_of(xs: Sequence[Any], x: Any) -> int:
    for i, v in enumerate(xs):
        if v == x:
            return i
    return -1


def _minmax(xs: Sequence[Any], default: Any, pick: Any) -> Any:
    return pick(xs) if xs else default


def builtin_catalogue() -> Catalogue:
    """The language's own helpers."""
    c = Catalogue()
    c.add_helper("len", "x: any", "int", "Number of elements of a list, or characters of a string.", _len)
    c.add_helper(
        "range",
        "n: int",
        "list[int]",
        "The integers 0, 1, ..., n-1 (empty when n <= 0).",
        _range,
    )
    c.add_helper(
        "index_of",
        "xs: list[any], x: any",
        "int",
        "Position of the first element equal to x, or -1.",
        _index_of,
        reads_views=True,
    )
    c.add_helper(
        "min",
        "xs: list[int], default: int",
        "int",
        "Smallest element, or `default` for an empty list.",
        lambda xs, default=0: _minmax(xs, default, min),
        defaults={"default": 0},
        reads_views=True,
    )
    c.add_helper(
        "max",
        "xs: list[int], default: int",
        "int",
        "Largest element, or `default` for an empty list.",
        lambda xs, default=0: _minmax(xs, default, max),
        defaults={"default": 0},
        reads_views=True,
    )
    c.add_helper("sum", "xs: list[int]", "int", "Sum of the elements.", lambda xs: sum(xs), reads_views=True)
    c.add_helper(
        "product",
        "xs: list[int]",
        "int",
        "Product of the elements (1 for an empty list).",
        lambda xs: _product(xs),
        reads_views=True,
    )
    c.add_helper("abs", "x: int", "int", "Absolute value.", abs)
    # the string tests inline: their arguments are typed str (never null), where these cannot fault
    c.add_helper(
        "contains",
        "s: str, part: str",
        "bool",
        "Whether `part` occurs in string `s`.",
        lambda s, part: part in s,
        inline={"str/2": "{1} in {0}"},
    )
    c.add_helper(
        "starts_with",
        "s: str, prefix: str",
        "bool",
        "Whether `s` starts with `prefix`.",
        lambda s, prefix: s.startswith(prefix),
        inline={"str/2": "{0}.startswith({1})"},
    )
    c.add_helper(
        "ends_with",
        "s: str, suffix: str",
        "bool",
        "Whether `s` ends with `suffix`.",
        lambda s, suffix: s.endswith(suffix),
        inline={"str/2": "{0}.endswith({1})"},
    )
    return c


def _product(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
