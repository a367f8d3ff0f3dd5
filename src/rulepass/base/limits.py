"""Limits on what an input may hold, stated once; docs/limits.md lists them with the flag that raises each.

Every overrun is one error naming the limit: no input reaches Python's own limits (the int/str conversion
limit, the recursion limit) or makes rulepass read, allocate or search without bound.
"""

from __future__ import annotations

MAX_INT_DIGITS = 1000
"""Digits of an integer literal in a graph file, rule file or expression (Python's own limit is 4300)."""


class LimitError(ValueError):
    """An input over one of these limits; the caller adds where it is."""


def int_literal(text: str, base: int = 10) -> int:
    """The value of an integer literal of at most MAX_INT_DIGITS digits (sign and base prefix excluded)."""
    digits = len(text.lstrip("+-"))
    if digits > MAX_INT_DIGITS:
        raise LimitError(f"integer literal of {digits} digits; the limit is {MAX_INT_DIGITS}")
    return int(text, base)
