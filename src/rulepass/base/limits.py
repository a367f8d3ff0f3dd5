"""Limits on what an input may hold, stated once; docs/limits.md lists them with the flag that raises each.

Every overrun is one error naming the limit: no input reaches Python's own limits (the int/str conversion
limit, the recursion limit) or makes rulepass read, allocate or search without bound.
"""

from __future__ import annotations

import os

from .diagnostics import error

MAX_INT_DIGITS = 1000
"""Digits of an integer literal in a graph file, rule file or expression (Python's own limit is 4300)."""

MAX_EXPR_DEPTH = 64
"""Nesting of a rule expression, counting the lets it reads (so no input reaches Python's recursion limit)."""

MAX_RULE_FILE_BYTES = 16 * 1024 * 1024
"""Size of a rule or fixture file (the bundled rules are a few KiB each; graph files may be far larger: 512 MiB)."""


class LimitError(ValueError):
    """An input over one of these limits; the caller adds where it is."""


def int_literal(text: str, base: int = 10) -> int:
    """The value of an integer literal of at most MAX_INT_DIGITS digits (sign and base prefix excluded)."""
    digits = len(text.lstrip("+-"))
    if digits > MAX_INT_DIGITS:
        raise LimitError(f"integer literal of {digits} digits; the limit is {MAX_INT_DIGITS}")
    return int(text, base)


MAX_THREADS = 256
"""Task generation threads (`--threads`, MAX_COMPILE_CORE_NUMBER): more only adds contention under the GIL."""

MEMORY_FRACTION = 0.5
"""The share of the machine's available memory `run` may allocate by default (`--max-memory` sets it)."""

_FALLBACK_MEMORY = 4 << 30  # where the available memory cannot be read


def available_memory() -> int:
    """The memory available to a new allocation, in bytes: MemAvailable of /proc/meminfo (Linux), else the free
    physical pages, else 4 GiB; never more than the process's address-space limit (ulimit -v) allows."""
    return min(_free_memory(), _address_space_left())


def _free_memory() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return _FALLBACK_MEMORY


def _address_space_left() -> int:
    """RLIMIT_AS less the address space in use (unbounded: a very large number)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return 1 << 62
        with open("/proc/self/statm", encoding="ascii") as f:
            used = int(f.read().split()[0]) * int(os.sysconf("SC_PAGE_SIZE"))
        return max(soft - used, 0)
    except (ImportError, OSError, ValueError, IndexError):
        return 1 << 62


def default_memory_budget() -> int:
    """The bytes `run` may allocate when no budget is given: MEMORY_FRACTION of the available memory."""
    return int(available_memory() * MEMORY_FRACTION)


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20}
_UNITS |= {"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}


def parse_byte_size(text: str) -> int:
    """Bytes from `N`, `N K`, `N M`, `N G` or `N T` (binary units; `MiB`, `MB` alike); LimitError when not."""
    s = text.strip().upper()
    digits = len(s) - len(s.lstrip("0123456789"))
    number, unit = s[:digits], s[digits:].strip()
    if not number or unit not in _UNITS or digits > 30:
        raise LimitError(f"expected a size in bytes like 512M or 8G, got {text!r}")
    return int(number) * _UNITS[unit]


def check_memory(needed: int, budget: int | None, what: str) -> None:
    """Raise the error for `what` needing `needed` bytes when that is over `budget` (None: the default)."""
    limit = default_memory_budget() if budget is None else budget
    if needed > limit:
        raise error(
            "memory-budget",
            f"{what} needs {needed} bytes ({needed / (1 << 30):.2f} GiB), over the memory budget of {limit} bytes "
            f"({limit / (1 << 30):.2f} GiB)",
            hint="raise it with --max-memory SIZE (e.g. --max-memory 64G), or max_memory= in the API",
        )
