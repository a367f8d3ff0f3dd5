"""Offset planner core: assign arena offsets to buffers with known lifetimes (dynamic storage allocation).

Memory assignment needs, for every tensor buffer, an offset in one arena so that buffers that are live at the
same step never share a byte, with the arena as small as possible. This module is the graph-free algorithm
behind it: buffers in, offsets out. A later stage feeds it with a graph's tensors.

How :func:`plan` works (ideas from TFLite's greedy-by-size planner, XLA's heap simulator, MindSpore SOMAS,
Google's MiniMalloc and TelaMalloc, and omnimalloc's greedy orders):

0. Quick try. A sparse (or small) input is first packed by the size, area and conflict x size orders (first
   fit over one set of neighbour lists; one native call on a small input); the first that reaches the lower
   bound, as one does for most compile traces, is the plan. Otherwise its lists and orders serve the portfolio
   when the input is one piece.
1. Decomposition. Steps where nothing is live split the timeline into independent components; buffers live
   over a whole component are stacked at its bottom (lossless: such a buffer conflicts with every other
   buffer of the component, so any packing can be rearranged to have it at the bottom), after which the rest
   may split again where only the stacked buffers were live.
2. Greedy portfolio. Each leaf component is packed by several members, each buffer at the lowest offset (or
   in the tightest gap) free among the overlapping buffers already placed: orders over neighbour lists (size,
   conflict degree x size, area, lifetime, start, largest live total, end; first and best fit), whose cost
   is the overlapping pairs, and time sweeps (start order, ties by size or lifetime; first and best fit over
   the gaps between the buffers live at each step), whose cost is n log n whatever the overlaps. Dense
   components (more than :data:`PAIR_LIMIT` pairs and :data:`DENSE_PAIRS_PER_BUFFER` a buffer) get the
   size order over a time index first when the budget pays for it and a sweep, then the sweeps, with lifetime
   splits second (the long-lived buffers swept as a stack of their own, then the short-lived ones above the
   long-lived ones they meet: a training step's saved activations below its transient tensors; cut at a few
   multiples of the median lifetime), then the conflict x size, area, ... orders over a time index while the
   budget pays their pairs. The best height is kept: the result is never worse than any member. A first-fit
   sweep whose start order ran over neighbour lists is that member, and is skipped.
3. Peak repair. The buffers living inside a window of steps around the first ones at the top are lifted out
   and placed again by several orders among the buffers crossing the window's borders and those spanning it;
   a re-pack below the top is kept (one place fewer at the top: a layered model has one a layer) and the next
   place attacked, else the window doubles. Max trees over the start order find the top and a window's members,
   and the window is re-packed on arrays of its own: a round costs its window, not the piece. While the top
   stays, the rounds it still needs are estimated from those so far; the repair stops when the budget cannot
   pay for them (a top of hundreds of buffers apart in time, one a round, is not chipped at for nothing).
4. Exact search. While the highest component is above the lower bound, a MiniMalloc-style branch and bound
   tries to pack it within the lower bound: buffers placed in canonical order (non-decreasing offset, each
   at its lowest legal offset), pruned by section inference, the unallocated floor, dominance and dynamic
   decomposition; three static orders run side by side and the first success wins. If the lower bound is out
   of reach, the remaining budget probes arenas between the lower bound and the best height found.
5. Safety net: the result is never worse than the plain size-descending first-fit baseline (not run again when
   the portfolio's first member was that baseline, on one piece of every buffer).

All the work is charged to one budget (``budget_s``) counted in work units, not seconds, so results never depend
on the machine's speed; the units are calibrated so that the budget is not exceeded in CPU time on the reference
machine. Only one greedy member a component (an n log n sweep when the budget cannot pay for more) runs whatever
the budget.

Fixed-offset buffers are honoured (placed first), offsets respect each buffer's alignment, and the same input
always gives the same output.

The hot loops (neighbour lists, first/best fit over them, the time sweep and the lifetime split, the greedy
orders' sorts, the lower bound, the pair count, the repair's window members, the whole exact search) have native
twins in the optional C extension ``_native`` (``_native.c``, built by ``pip install`` when a compiler is there);
they give the same offsets, and the pure-Python loops run when it is absent or a value exceeds int64.
The work units stay those of the Python loops, so the plans do not depend on it: with it, the budget is spent
in a fraction of its seconds.
"""

from __future__ import annotations

import csv
import gc
import heapq
import importlib
import itertools
import math
import sys
import time
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Generator, Iterable, Iterator, MutableSequence, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, mul, sub
from pathlib import Path
from typing import Any

from ...base.files import read_text
from ...base.limits import LimitError, int_literal

__all__ = [
    "DEFAULT_BUDGET_S",
    "DENSE_PAIRS_PER_BUFFER",
    "EXACT_HEURISTICS",
    "PAIR_LIMIT",
    "PORTFOLIO_PAIR_VISITS",
    "PORTFOLIO_VISITS_PER_BUFFER",
    "WORK_PER_SECOND",
    "Buffer",
    "Placement",
    "PlannerClock",
    "check_placement",
    "greedy_best_fit",
    "lower_bound",
    "plan",
    "planner_clock",
    "read_csv",
    "wall_clock_budget",
]

#: Speed used to turn ``budget_s`` into work units (roughly: items looked at), measured in CPU time on the
#: 2-core reference machine (``benchmarks/memplan_peer.py --budgets``): every kind of work (greedy orders,
#: sweeps, peak repair, exact search) ran at 6.5-16 M units a second there, so a budget of S seconds ends
#: within S seconds of CPU. Real time varies with the machine; results never do.
WORK_PER_SECOND = 5_000_000

#: Default of ``plan``'s ``budget_s``: seconds of planning, turned into work units with
#: :data:`WORK_PER_SECOND` (the first greedy member of each piece runs even when it costs more).
DEFAULT_BUDGET_S = 8.0

#: Above this many time-overlapping pairs a component is "huge" (if also dense, see below): the greedy portfolio
#: then avoids neighbour lists (memory and time grow with the pairs) and runs time sweeps plus the size order
#: over a time index.
PAIR_LIMIT = 2_000_000

#: A component with more pairs than PAIR_LIMIT is huge only if it has more than this many a buffer on average:
#: a long sparse one (a pipeline's few overlaps a buffer) keeps its neighbour lists, whose memory and time stay
#: linear in its buffers, and gets the same planning at 1M nodes as at 100k.
DENSE_PAIRS_PER_BUFFER = 16

#: The greedy portfolio runs its orders (most useful first) until their neighbour visits pass this many, or
#: :data:`PORTFOLIO_VISITS_PER_BUFFER` times the piece's buffers if that is more, so a dense piece gets fewer
#: orders; every piece gets at least the size order.
PORTFOLIO_PAIR_VISITS = 8_000_000

#: The portfolio's visit budget grows with the piece: a sparse piece (a few overlaps a buffer, as a long
#: pipeline's) gets every order however long it is, so the plan of a 1M-node graph is as good as a 100k one's,
#: for work that stays linear in the buffers.
PORTFOLIO_VISITS_PER_BUFFER = 64


@dataclass(frozen=True)
class Buffer:
    """A buffer live over the inclusive step interval [first, last], needing ``size`` bytes."""

    id: str
    first: int
    last: int
    size: int
    alignment: int = 1
    offset: int | None = None


@dataclass(frozen=True)
class Placement:
    """Offsets for every buffer, the arena height they need, and how they were found."""

    offsets: dict[str, int]
    arena: int
    lower_bound: int
    strategy: str
    components: int = 0
    exact_components: int = 0
    exact_nodes: int = 0
    exact_work: int = 0
    component_strategies: tuple[str, ...] = field(default_factory=tuple)
    work: int = 0  # work units charged (every greedy member, exact search, repair, safety net)
    budget: int = 0  # the work units allowed for it (``budget_s`` times WORK_PER_SECOND)

    @property
    def ratio(self) -> float:
        """Arena divided by the lower bound (1.0 for an empty problem)."""
        return self.arena / self.lower_bound if self.lower_bound else 1.0


def _placement(**fields: Any) -> Placement:
    """``Placement(**fields)`` without the frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field: a
    tenth of a small input's plan); fields not given take their defaults."""
    made = object.__new__(Placement)
    vars(made).update(_PLACEMENT_DEFAULTS, **fields)
    return made


#: The defaults of :class:`Placement`'s optional fields (all immutable: shared by every :func:`_placement`).
_PLACEMENT_DEFAULTS: dict[str, Any] = {
    k: v for k, v in vars(Placement({}, 0, 0, "")).items() if k not in ("offsets", "arena", "lower_bound", "strategy")
}


# ----------------------------------------------------------------------------------------------------------
# Input: CSV reader, validation, lower bound
# ----------------------------------------------------------------------------------------------------------

_HEADER = ("id", "lower", "upper", "size")


def read_csv(path: str | Path) -> list[Buffer]:
    """Read ``id,lower,upper,size`` rows (half-open [lower, upper)) into buffers live over [lower, upper-1]."""
    name = str(path)
    text = read_text(path, what="buffer CSV")
    lines = text.splitlines()
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    header_seen = False
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            rows = list(csv.reader([raw], strict=True))
        except csv.Error as exc:
            raise ValueError(f"{name}: line {lineno}: malformed CSV ({exc})") from None
        fields = [f.strip() for f in rows[0]] if rows else []
        if not header_seen:
            if tuple(f.lower() for f in fields) != _HEADER:
                raise ValueError(f"{name}: line {lineno}: missing header 'id,lower,upper,size' (got {raw.strip()!r})")
            header_seen = True
            continue
        if len(fields) != len(_HEADER):
            raise ValueError(f"{name}: line {lineno}: expected 4 columns (id,lower,upper,size), got {len(fields)}")
        ident = fields[0]
        if not ident:
            raise ValueError(f"{name}: line {lineno}, column 'id': empty id")
        values: list[int] = []
        for column, text_value in zip(_HEADER[1:], fields[1:], strict=True):
            try:
                values.append(int_literal(text_value))
            except LimitError as exc:
                raise ValueError(f"{name}: line {lineno}, column '{column}': {exc}") from None
            except ValueError:
                shown = text_value if len(text_value) <= 40 else text_value[:40] + "..."
                raise ValueError(
                    f"{name}: line {lineno}, column '{column}': expected an integer, got {shown!r}"
                ) from None
        lower, upper, size = values
        if size < 0:
            raise ValueError(f"{name}: line {lineno}, column 'size': size must be >= 0, got {size}")
        if upper <= lower:
            raise ValueError(
                f"{name}: line {lineno}, column 'upper': upper ({upper}) must be greater than lower ({lower})"
            )
        if ident in seen:
            raise ValueError(
                f"{name}: line {lineno}, column 'id': duplicate id {ident!r} (first on line {seen[ident]})"
            )
        seen[ident] = lineno
        buffers.append(Buffer(ident, lower, upper - 1, size))
    if not header_seen:
        raise ValueError(f"{name}: line 1: missing header 'id,lower,upper,size' (empty file)")
    return buffers


def _validate(buffers: Sequence[Buffer]) -> None:
    """Raise ValueError for an input no placement can satisfy or that is ambiguous."""
    seen: set[str] = set()
    for b in buffers:
        if b.id in seen:
            raise ValueError(f"duplicate buffer id {b.id!r}")
        seen.add(b.id)
        if b.size < 0:
            raise ValueError(f"buffer {b.id!r}: negative size {b.size}")
        if b.last < b.first:
            raise ValueError(f"buffer {b.id!r}: last step {b.last} before first step {b.first}")
        if b.alignment < 1:
            raise ValueError(f"buffer {b.id!r}: alignment must be >= 1, got {b.alignment}")
        if b.offset is not None:
            if b.offset < 0:
                raise ValueError(f"buffer {b.id!r}: negative fixed offset {b.offset}")
            if b.offset % b.alignment:
                raise ValueError(
                    f"buffer {b.id!r}: fixed offset {b.offset} is not a multiple of alignment {b.alignment}"
                )


def _peak(items: Iterable[tuple[int, int, int]]) -> int:
    """Peak over steps of the total size live, for (first, last, size) triples."""
    events: list[tuple[int, int]] = []
    for first, last, size in items:
        if size:
            events.append((first, size))
            events.append((last + 1, -size))
    events.sort()  # at equal steps the releases (negative) come first
    live = peak = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def lower_bound(buffers: Sequence[Buffer]) -> int:
    """Largest total size live at one step (and no less than the top of any fixed-offset buffer)."""
    fixed_top = max((b.offset + b.size for b in buffers if b.offset is not None), default=0)
    return max(_peak((b.first, b.last, b.size) for b in buffers), fixed_top)


# ----------------------------------------------------------------------------------------------------------
# Shared helpers on index arrays
# ----------------------------------------------------------------------------------------------------------


def _align_up(value: int, alignment: int) -> int:
    """Smallest multiple of ``alignment`` that is >= ``value``."""
    return value + (-value) % alignment


#: The :class:`Buffer` fields :class:`_Arrays` reads, in its order.
_FIELDS = ("id", "first", "last", "size", "alignment", "offset")


class _Arrays:
    """Buffers as parallel lists indexed 0..n-1 (the form all algorithms below work on)."""

    def __init__(self, buffers: Sequence[Buffer]) -> None:
        self.ids: list[str]
        self.first: list[int]
        self.last: list[int]
        self.size: list[int]
        self.align: list[int]
        offsets: list[int | None]
        if _NATIVE is not None:  # one pass over the buffers
            self.ids, self.first, self.last, self.size, self.align, offsets = _NATIVE.fields(buffers, _FIELDS)
        else:
            self.ids = [b.id for b in buffers]
            self.first = [b.first for b in buffers]
            self.last = [b.last for b in buffers]
            self.size = [b.size for b in buffers]
            self.align = [b.alignment for b in buffers]
            offsets = [b.offset for b in buffers]
        self.has_fixed = offsets.count(None) != len(offsets)
        self.fixed = [-1 if o is None else o for o in offsets] if self.has_fixed else [-1] * len(offsets)
        self.pair_counts: list[tuple[list[int], int]] = []  # :func:`_pairs`' last answers (copies of the items)
        self._fixed64: array[int] | None = None
        self.arrays()

    def fixed64(self) -> array[int]:
        """``fixed`` as an int64 array (made once)."""
        if self._fixed64 is None:
            self._fixed64 = array("q", self.fixed)
        return self._fixed64

    def arrays(self, native: bool | None = None) -> None:
        """Set the lists' int64 arrays for the native loops (empty when they do not run), ``native`` (whether they
        do: given, or :func:`_fits_int64`) and ``bounds``: (smallest size, smallest alignment, smallest last -
        first) when the native pass that makes the arrays found them (else None)."""
        ingested = _NATIVE.ingest(self.first, self.last, self.size, self.align) if _NATIVE and self.size else None
        self.bounds: tuple[int, int, int] | None = None
        if ingested is None:
            self.native = (_NATIVE is not None and _fits_int64(self)) if native is None else native
            self.first64 = array("q", self.first if self.native else ())
            self.last64 = array("q", self.last if self.native else ())
            self.size64 = array("q", self.size if self.native else ())
            self.align64 = array("q", self.align if self.native else ())
            return
        made, (min_size, min_align, min_length, total, max_size, max_align, max_last, min_first) = (
            ingested[:4],
            ingested[4:],
        )
        self.bounds = (min_size, min_align, min_length)
        if native is None:  # as _fits_int64, from the native pass's figures
            reach = total + len(self.size) * max_align + (max(self.fixed) if self.has_fixed else -1) + max_size
            native = max(reach, max_last, -min_first) < 1 << 62
        self.native = native
        self.first64, self.last64, self.size64, self.align64 = made if native else [array("q")] * 4


def _checked_arrays(buffers: Sequence[Buffer]) -> _Arrays:
    """The buffers as arrays, checked as :func:`_validate` checks them (in bulk; its loop names the culprit)."""
    arr = _Arrays(buffers)
    bounds = arr.bounds
    if arr.size and (
        arr.has_fixed
        or len(set(arr.ids)) != len(arr.ids)
        or (bounds[0] if bounds else min(arr.size)) < 0
        or (bounds[1] if bounds else min(arr.align)) < 1
        or (bounds[2] if bounds else min(map(sub, arr.last, arr.first))) < 0
    ):
        _validate(buffers)
    return arr


def _offsets_dict(arr: _Arrays, off: list[int]) -> dict[str, int]:
    """The offsets by buffer id, in input order (the native loops build the dict at its final size)."""
    if arr.native and _NATIVE is not None:
        offsets: dict[str, int] = _NATIVE.offsets_dict(arr.ids, off)
        return offsets
    return dict(zip(arr.ids, off, strict=True))


def _fits_int64(arr: _Arrays) -> bool:
    """Whether every step, size, alignment and every offset a plan can reach fits the native loops' int64."""
    if not arr.size:
        return True
    reach = sum(arr.size) + len(arr.size) * max(arr.align) + (max(arr.fixed) if arr.has_fixed else -1) + max(arr.size)
    steps = max(max(arr.last), -min(arr.first))
    return max(reach, steps) < 1 << 62


def _load_native() -> Any:
    """The optional C extension of the inner loops (``_native.c``), or None when it was not built."""
    try:
        return importlib.import_module(f"{__package__}._native")
    except ImportError:
        return None


#: The native inner loops, or None (then the pure-Python ones run: same plans, slower).
_NATIVE: Any = _load_native()


class _Adj:
    """Neighbour lists: the items overlapping item i in time, ascending, are ``lists[i]``."""

    def __init__(self, lists: dict[int, list[int]]) -> None:
        self.lists = lists

    def of(self, i: int) -> Sequence[int]:
        """The items overlapping item ``i``."""
        return self.lists[i]

    def degree(self, i: int) -> int:
        """Number of items overlapping item ``i``."""
        return len(self.lists[i])

    def pairs(self) -> int:
        """Number of overlapping (ordered) pairs: twice the unordered ones."""
        return sum(map(len, self.lists.values()))


class _CSR(_Adj):
    """Neighbour lists built by the native loops, in CSR form over every buffer index: the items overlapping
    item i are ``indices[indptr[i]:indptr[i+1]]`` (int64 arrays; each list in sweep order, not sorted)."""

    def __init__(self, indptr: array[int], indices: array[int]) -> None:
        super().__init__({})
        self.indptr = indptr
        self.indices = indices

    def of(self, i: int) -> Sequence[int]:
        """The items overlapping item ``i``."""
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def degree(self, i: int) -> int:
        """Number of items overlapping item ``i``."""
        return self.indptr[i + 1] - self.indptr[i]

    def pairs(self) -> int:
        """Number of overlapping (ordered) pairs: twice the unordered ones."""
        return len(self.indices)


def _worth_native(arr: _Arrays, items: int) -> bool:
    """Whether the native loops run for a step over ``items`` buffers: they take arrays over every buffer, so
    only when the step is a fair share of them (else the pure-Python loops: the same answers)."""
    return arr.native and _NATIVE is not None and 4 * items >= len(arr.size)


class _Dense(_Adj):
    """Neighbour degrees only, for a dense input the native loops place without lists (each buffer scans every
    placed one: cheaper than gathering and sorting its neighbours when most pairs overlap)."""

    def __init__(self, items: array[int], degrees: dict[int, int] | Callable[[], dict[int, int]]) -> None:
        self.lists = {}
        self.items = items
        self._degrees = degrees

    @property
    def degrees(self) -> dict[int, int]:
        """Number of items overlapping each item, counted on first use (the size order, often the only one run,
        needs none)."""
        if callable(self._degrees):
            self._degrees = self._degrees()
        return self._degrees

    def of(self, i: int) -> Sequence[int]:
        """Not kept: the native loop finds the neighbours itself."""
        raise NotImplementedError("dense neighbour lists are not kept")

    def degree(self, i: int) -> int:
        """Number of items overlapping item ``i``."""
        return self.degrees[i]

    def pairs(self) -> int:
        """Number of overlapping (ordered) pairs: twice the unordered ones."""
        return sum(self.degrees.values())


#: Inputs with more overlapping (ordered) pairs than their buffers squared over this are "dense": the native loops
#: place them by scanning every placed buffer instead of gathering and sorting neighbour lists.
DENSE_SCAN_RATIO = 40


def _dense(pairs: int, items: int, ratio: int) -> bool:
    """Whether ``items`` buffers with ``pairs`` overlapping (unordered) pairs are dense: more ordered pairs than
    their number squared over ``ratio`` (see :data:`DENSE_SCAN_RATIO`)."""
    return 2 * pairs * ratio >= items**2


def _neighbours(arr: _Arrays, items: Sequence[int], dense_ok: bool = True, pairs: int | None = None) -> _Adj:
    """Neighbour lists of time-overlapping pairs among ``items`` (cost n log n + pairs), by the native loops
    when the extension is there (the same lists as :func:`_overlaps`, in another order; or, for a dense input,
    none: see :class:`_Dense`). ``pairs`` is their :func:`_pairs`, when the caller has it."""
    if not _worth_native(arr, len(items)):
        return _overlaps(items, arr.first, arr.last)
    items64 = array("q", items)
    if dense_ok and _dense(_pairs(arr, items) if pairs is None else pairs, len(items), DENSE_SCAN_RATIO):
        return _Dense(items64, lambda: _degrees(items, arr.first, arr.last))
    indptr, indices = _NATIVE.overlaps(items64, arr.first64, arr.last64, len(arr.size))
    return _CSR(indptr, indices)


def _overlaps(items: Sequence[int], first: Sequence[int], last: Sequence[int]) -> _Adj:
    """Neighbour lists of time-overlapping pairs among ``items``: a sweep keeping the live items, cost
    n log n + pairs."""
    adj: dict[int, list[int]] = {i: [] for i in items}
    active: list[tuple[int, int]] = []  # heap of (last, item)
    live: set[int] = set()
    for i in sorted(items, key=lambda k: (first[k], k)):
        f = first[i]
        while active and active[0][0] < f:
            live.discard(heapq.heappop(active)[1])
        mine = adj[i]
        for j in live:
            mine.append(j)
            adj[j].append(i)
        live.add(i)
        heapq.heappush(active, (last[i], i))
    for lst in adj.values():
        lst.sort()
    return _Adj(adj)


def _count_pairs(items: Sequence[int], first: Sequence[int], last: Sequence[int]) -> int:
    """Number of time-overlapping pairs among ``items`` (sweep, n log n)."""
    active: list[int] = []  # heap of last steps
    pairs = 0
    for i in sorted(items, key=lambda k: first[k]):
        while active and active[0] < first[i]:
            heapq.heappop(active)
        pairs += len(active)
        heapq.heappush(active, last[i])
    return pairs


#: :func:`_pairs` remembers its answer for item lists at least this long (a plan counts the same ones up to
#: three times: the quick try, the portfolio of a single piece, the safety net).
PAIRS_MEMO_ITEMS = 4096


def _pairs(arr: _Arrays, items: Sequence[int]) -> int:
    """:func:`_count_pairs` over the buffers' steps, by the native loops when the extension is there (a long
    list's count is kept in ``arr``: the next call with an equal list reuses it)."""
    memo = len(items) >= PAIRS_MEMO_ITEMS
    if memo:
        for seen, count in arr.pair_counts:
            if len(seen) == len(items) and seen == items:
                return count
    if arr.native and _NATIVE is not None:
        pairs: int = _NATIVE.count_pairs(array("q", items), arr.first64, arr.last64)
    else:
        pairs = _count_pairs(items, arr.first, arr.last)
    if memo:
        arr.pair_counts[:] = [(list(items), pairs), *arr.pair_counts[:1]]
    return pairs


def _lower_bound(arr: _Arrays) -> int:
    """:func:`lower_bound` of the buffers of ``arr``, by the native loops when the extension is there."""
    fixed_top = (
        max((f + s for f, s in zip(arr.fixed, arr.size, strict=True) if f >= 0), default=0) if arr.has_fixed else 0
    )
    if arr.native and _NATIVE is not None:
        peak: int = _NATIVE.peak(arr.first64, arr.last64, arr.size64)
        return max(peak, fixed_top)
    return max(_peak(zip(arr.first, arr.last, arr.size, strict=True)), fixed_top)


def _huge(arr: _Arrays, items: Sequence[int]) -> bool:
    """Whether ``items`` are too many overlapping pairs for neighbour lists (see :data:`PAIR_LIMIT`)."""
    pairs = _pairs(arr, items)
    return pairs > PAIR_LIMIT and pairs > DENSE_PAIRS_PER_BUFFER * len(items)


class _TimeIndex:
    """Placed buffers indexed by step, to find those overlapping [f, last] without neighbour lists.

    Two segment trees over the (compressed) steps: one holds each buffer at the O(log T) nodes that cover its
    lifetime (so the buffers live at step f lie on the path from f's leaf to the root), the other at every
    ancestor of its first step's leaf (so the buffers starting inside (f, last] sit at O(log T) nodes). A
    query gathers both with a few list extensions: the per-buffer work runs in C, not in Python.
    """

    def __init__(self, steps: Iterable[int]) -> None:
        self.steps = sorted(set(steps))
        self.leaves = 1 << max(len(self.steps) - 1, 0).bit_length()
        self.cover: list[list[tuple[int, int]]] = [[] for _ in range(2 * self.leaves)]
        self.start: list[list[tuple[int, int]]] = [[] for _ in range(2 * self.leaves)]

    def add(self, f: int, last: int, item: tuple[int, int]) -> None:
        """Record the byte range ``item`` as occupied during steps [f, last] (both indexed steps)."""
        a = bisect_left(self.steps, f) + self.leaves
        b = bisect_left(self.steps, last) + self.leaves + 1
        node = a
        start = self.start
        while node:
            start[node].append(item)
            node >>= 1
        cover = self.cover
        while a < b:
            if a & 1:
                cover[a].append(item)
                a += 1
            if b & 1:
                b -= 1
                cover[b].append(item)
            a >>= 1
            b >>= 1

    def query(self, f: int, last: int) -> list[tuple[int, int]]:
        """Byte ranges recorded at some step of [f, last], each once."""
        out: list[tuple[int, int]] = []
        leaf = bisect_left(self.steps, f) + self.leaves
        node = leaf
        cover = self.cover
        while node:
            if cover[node]:
                out.extend(cover[node])
            node >>= 1
        a = leaf + 1
        b = bisect_left(self.steps, last) + self.leaves + 1
        start = self.start
        while a < b:
            if a & 1:
                out.extend(start[a])
                a += 1
            if b & 1:
                b -= 1
                out.extend(start[b])
            a >>= 1
            b >>= 1
        return out


def _lowest_fit(obstacles: list[tuple[int, int]], s: int, a: int, base: int, best_fit: bool) -> int:
    """Lowest aligned offset >= base where ``s`` bytes avoid the sorted byte ranges; or the tightest gap.

    First fit stops at the first gap that holds ``s`` bytes; best fit takes the smallest such gap (and the
    top, above every obstacle, when none holds them).
    """
    cand = base if a == 1 else _align_up(base, a)
    if not best_fit:
        for lo, hi in obstacles:
            if lo >= cand + s:
                break
            if hi > cand:
                cand = hi if a == 1 else _align_up(hi, a)
        return cand
    best = -1
    best_gap = 0
    for lo, hi in obstacles:
        if lo >= cand + s:
            gap = lo - cand
            if best < 0 or gap < best_gap:
                best, best_gap = cand, gap
        if hi > cand:
            cand = hi if a == 1 else _align_up(hi, a)
    return best if best >= 0 else cand


def _int64(off: MutableSequence[int]) -> array[int]:
    """``off`` itself if it is an int64 array (the native loops then write it in place), else an int64 copy."""
    return off if isinstance(off, array) and off.typecode == "q" else array("q", off)


def _written(off: MutableSequence[int], placed: array[int]) -> None:
    """Copy what the native loops wrote into ``placed`` back into ``off``, unless it was ``off`` itself."""
    if placed is not off:
        off[:] = placed.tolist()


def _place(
    order: Sequence[int],
    arr: _Arrays,
    adj: _Adj,
    off: MutableSequence[int],
    base: int,
    best_fit: bool,
    limit: int | None = None,
    static: list[tuple[int, int]] | None = None,
) -> int:
    """Place ``order`` one by one among already placed neighbours (off >= 0); return the height reached.

    First fit puts each buffer at the lowest aligned offset >= ``base`` that is free over its lifetime; best
    fit puts it into the smallest free gap that holds it (the top, if no gap does). Neighbours come from
    precomputed adjacency lists: cost per buffer is its number of neighbours (sort + sweep).

    With a ``limit``, stops as soon as the height reaches it (the placement is then incomplete): the height
    only grows, so such an order cannot beat a plan of that height. ``static`` byte ranges are occupied for
    every buffer of ``order`` (the repair's buffers spanning its window). Runs the native loop when the
    extension is there (:func:`_place_py` is its pure-Python twin: the same offsets).
    """
    stop = -1 if limit is None else limit
    if type(adj) is not _Dense and not isinstance(adj, _CSR):
        return _place_py(order, arr, adj, off, (base, stop), best_fit, static)
    placed = _int64(off)
    height = _place_native(order, arr, adj, placed, base, best_fit, stop, static)
    _written(off, placed)
    return height


def _place_native(
    order: Sequence[int],
    arr: _Arrays,
    adj: _Adj,
    placed: array[int],
    base: int,
    best_fit: bool,
    stop: int,
    static: list[tuple[int, int]] | None = None,
) -> int:
    """:func:`_place`'s native loop over neighbour lists (or the dense scan), on offsets held in an int64 array
    (``stop``: the limit, or -1)."""
    height: int
    if type(adj) is _Dense:
        assert not static  # the repair asks for lists (dense_ok=False)
        height = _NATIVE.place_dense(
            array("q", order), adj.items, arr.first64, arr.last64, arr.size64, arr.align64, placed, base,
            best_fit, stop,
        )  # fmt: skip
        return height
    assert isinstance(adj, _CSR)
    flat = array("q", [x for span in static for x in span] if static else [])
    height = _NATIVE.place(
        array("q", order), arr.size64, arr.align64, adj.indptr, adj.indices, placed, base,
        best_fit, stop, flat,
    )  # fmt: skip
    return height


def _place_py(order: Sequence[int], arr: _Arrays, adj: _Adj, off: MutableSequence[int], bounds: tuple[int, int],
              best_fit: bool, static: list[tuple[int, int]] | None) -> int:  # fmt: skip
    """:func:`_place` in pure Python; ``bounds`` is (base, limit or -1)."""
    base, stop = bounds
    size, align = arr.size, arr.align
    height = base
    for b in order:
        obstacles = [(off[o], off[o] + size[o]) for o in adj.of(b) if off[o] >= 0]
        if static:
            obstacles += static
        obstacles.sort()
        cand = _lowest_fit(obstacles, size[b], align[b], base, best_fit)
        off[b] = cand
        top = cand + size[b]
        if top > height:
            height = top
            if height >= stop >= 0:
                return height
    return height


def _place_indexed(
    order: Sequence[int],
    arr: _Arrays,
    items: Sequence[int],
    off: MutableSequence[int],
    base: int,
    best_fit: bool = False,
    limit: int | None = None,
) -> int:
    """First (or best) fit like :func:`_place`, finding placed neighbours with a :class:`_TimeIndex` (no pair
    lists); with a ``limit``, stops once the height reaches it (the placement is then incomplete)."""
    index = _TimeIndex([arr.first[i] for i in items] + [arr.last[i] for i in items])
    size = arr.size
    for i in items:
        if off[i] >= 0:
            index.add(arr.first[i], arr.last[i], (off[i], off[i] + size[i]))
    height = base
    for b in order:
        f, t = arr.first[b], arr.last[b]
        obstacles = index.query(f, t)
        obstacles.sort()
        cand = _lowest_fit(obstacles, size[b], arr.align[b], base, best_fit)
        off[b] = cand
        index.add(f, t, (cand, cand + size[b]))
        height = max(height, cand + size[b])
        if limit is not None and height >= limit:
            return height
    return height


class _Gaps:
    """Free byte ranges between the buffers live at the current step, for a sweep over time.

    Gaps are kept by length class (bit length) in offset order, so the lowest gap that fits a size is found
    by looking at the first gap of each larger class and scanning only the size's own class.
    """

    def __init__(self, base: int) -> None:
        self.base = base
        self.starts: list[int] = []  # offsets of the live buffers, ascending (they are disjoint)
        self.ends: dict[int, int] = {}  # offset -> end of each live buffer
        self.gap: dict[int, int] = {}  # gap start -> gap end, for gaps below the top live buffer
        self.classes: dict[int, list[int]] = {}  # bit length of a gap's size -> its starts, ascending
        self.mask = 0  # bit c set when classes[c] is non-empty

    def _add_gap(self, lo: int, hi: int) -> None:
        """Record the free range [lo, hi) (ignored if empty)."""
        if hi <= lo:
            return
        self.gap[lo] = hi
        c = (hi - lo).bit_length()
        lst = self.classes.setdefault(c, [])
        lst.insert(bisect_left(lst, lo), lo)
        self.mask |= 1 << c

    def _drop_gap(self, lo: int) -> None:
        """Forget the free range starting at ``lo`` (if recorded)."""
        hi = self.gap.pop(lo, None)
        if hi is None:
            return
        c = (hi - lo).bit_length()
        lst = self.classes[c]
        del lst[bisect_left(lst, lo)]
        if not lst:
            self.mask &= ~(1 << c)

    def top(self) -> int:
        """End of the highest live buffer (or the base): everything above is free."""
        return self.ends[self.starts[-1]] if self.starts else self.base

    def find(self, s: int, a: int, best_fit: bool = False) -> int:
        """Lowest aligned offset where ``s`` bytes are free now; or, for best fit, one in a tight gap.

        Best fit takes the tightest gap of the size's own length class that holds ``s`` bytes, else the
        lowest gap of the next non-empty class (every gap there holds them), else the top.
        """
        if best_fit:
            return self._find_tight(s, a)
        best = _align_up(self.top(), a)
        cs = s.bit_length()
        mask = self.mask >> cs
        c = cs
        gap = self.gap
        while mask:
            if mask & 1:
                for g in self.classes[c]:
                    if g >= best:
                        break
                    x = g if a == 1 else _align_up(g, a)
                    if x + s <= gap[g]:
                        best = x
                        break
            mask >>= 1
            c += 1
        return best

    def _find_tight(self, s: int, a: int) -> int:
        """Best fit by length class (see :meth:`find`)."""
        cs = s.bit_length()
        mask = self.mask >> cs
        c = cs
        gap = self.gap
        while mask:
            if mask & 1:
                best, room = -1, 0
                for g in self.classes[c]:
                    x = g if a == 1 else _align_up(g, a)
                    r = gap[g] - x
                    if r >= s and (best < 0 or r < room):
                        best, room = x, r
                        if c > cs:
                            break
                if best >= 0:
                    return best
            mask >>= 1
            c += 1
        return _align_up(self.top(), a)

    def occupy(self, x: int, s: int) -> None:
        """Mark [x, x+s) (inside a free range) as taken by a live buffer."""
        starts = self.starts
        j = bisect_left(starts, x)
        below = self.ends[starts[j - 1]] if j else self.base
        if j < len(starts):
            self._drop_gap(below)
            self._add_gap(below, x)
            self._add_gap(x + s, starts[j])
        else:
            self._add_gap(below, x)
        starts.insert(j, x)
        self.ends[x] = x + s

    def release(self, x: int) -> None:
        """Free the live buffer at offset ``x``."""
        starts = self.starts
        j = bisect_left(starts, x)
        end = self.ends.pop(x)
        below = self.ends[starts[j - 1]] if j else self.base
        self._drop_gap(below)
        if j + 1 < len(starts):
            self._drop_gap(end)
            self._add_gap(below, starts[j + 1])
        del starts[j]


def _sweep(order: Sequence[int], arr: _Arrays, off: MutableSequence[int], base: int, best_fit: bool = False) -> int:
    """First (or best) fit in time order (``order`` sorted by first step), among the buffers live at its start.

    Valid for any gap choice: in start order every placed buffer that overlaps the next one in time is live
    at its first step. First fit equals :func:`_place` on a start-sorted order, in n log n-ish time without
    neighbour lists. Needs no fixed-offset buffers among ``order``'s component. Runs the native loop when the
    extension is there (:func:`_sweep_py` is its pure-Python twin: the same offsets).
    """
    if not _worth_native(arr, len(order)):
        return _sweep_py(order, arr, off, base, best_fit)
    placed = _int64(off)
    order64 = order if isinstance(order, array) and order.typecode == "q" else array("q", order)
    height: int = _NATIVE.sweep(order64, arr.first64, arr.last64, arr.size64, arr.align64, placed, base, best_fit)
    _written(off, placed)
    return height


def _sweep_py(order: Sequence[int], arr: _Arrays, off: MutableSequence[int], base: int, best_fit: bool = False) -> int:
    """:func:`_sweep` in pure Python."""
    gaps = _Gaps(base)
    live: list[tuple[int, int]] = []  # heap of (last step, offset)
    height = base
    first, last, size, align = arr.first, arr.last, arr.size, arr.align
    for b in order:
        f = first[b]
        while live and live[0][0] < f:
            gaps.release(heapq.heappop(live)[1])
        x = gaps.find(size[b], align[b], best_fit)
        gaps.occupy(x, size[b])
        heapq.heappush(live, (last[b], x))
        off[b] = x
        height = max(height, x + size[b])
    return height


def _live_max(items: Sequence[int], first: Sequence[int], last: Sequence[int], size: Sequence[int]) -> list[int]:
    """For each item (in ``items`` order), the largest total size live at one step of its lifetime."""
    times = sorted({first[i] for i in items} | {last[i] + 1 for i in items})
    index = {t: k for k, t in enumerate(times)}
    delta = [0] * (len(times) + 1)
    for i in items:
        delta[index[first[i]]] += size[i]
        delta[index[last[i] + 1]] -= size[i]
    profile: list[int] = []
    live = 0
    for d in delta[:-1]:
        live += d
        profile.append(live)
    return _range_maxima(profile, [(index[first[i]], index[last[i] + 1]) for i in items])


def _range_maxima(values: Sequence[int], spans: Iterable[tuple[int, int]]) -> list[int]:
    """``max(values[lo:hi])`` for each (lo, hi) with lo < hi, by a sparse table (n log n, then O(1) a query)."""
    table = [list(values)]
    width = 1
    while 2 * width <= len(values):
        prev = table[-1]
        table.append(list(map(max, prev, prev[width:])))  # pairwise maxima, len(prev) - width of them
        width *= 2
    out: list[int] = []
    for lo, hi in spans:
        level = (hi - lo).bit_length() - 1
        row = table[level]
        out.append(max(row[lo], row[hi - (1 << level)]))
    return out


# ----------------------------------------------------------------------------------------------------------
# Baseline
# ----------------------------------------------------------------------------------------------------------


def _baseline_order(arr: _Arrays, items: Sequence[int]) -> list[int]:
    """Size descending, ties by earlier first step, then input order."""
    return sorted(items, key=lambda i: (-arr.size[i], arr.first[i], i))


def _baseline(arr: _Arrays, limit: int | None = None) -> list[int] | None:
    """Offsets of the plain size-descending first-fit greedy (fixed offsets honoured, placed first).

    With a ``limit`` (the plan's safety net): None for a huge input (the baseline alone is costly there), and
    the placement stops once it reaches ``limit`` (the offsets left are then incomplete, and their arena at
    least ``limit``)."""
    n = len(arr.size)
    off = list(arr.fixed)
    for i in range(n):
        if off[i] < 0 and arr.size[i] == 0:
            off[i] = 0
    positive = [i for i in range(n) if arr.size[i] > 0]
    huge = _huge(arr, positive)
    if huge and limit is not None:
        return None
    order = _baseline_order(arr, [i for i in positive if off[i] < 0])
    if not huge:
        adj = _neighbours(arr, positive)
        _place(order, arr, adj, off, 0, False, limit)
    else:
        _place_indexed(order, arr, positive, off, 0)
    return off


def greedy_best_fit(buffers: Sequence[Buffer]) -> Placement:
    """The plain baseline: size-descending (ties: earlier first step), each at the lowest offset that fits."""
    arr = _checked_arrays(buffers)
    off = _baseline(arr)
    assert off is not None  # no limit: always placed
    return Placement(
        offsets=_offsets_dict(arr, off),
        arena=max(map(add, off, arr.size), default=0),
        lower_bound=_lower_bound(arr),
        strategy="greedy-size-first-fit",
        components=1 if any(arr.size) else 0,
    )


# ----------------------------------------------------------------------------------------------------------
# Decomposition
# ----------------------------------------------------------------------------------------------------------


@dataclass
class _Piece:
    """A leaf component: items to pack above ``base`` (fixed items among them are already placed)."""

    items: list[int]
    base: int
    has_fixed: bool


def _time_components(items: Sequence[int], first: Sequence[int], last: Sequence[int]) -> list[list[int]]:
    """Split items into groups whose lifetimes chain-overlap (a step where none is live separates groups)."""
    groups: list[list[int]] = []
    reach = None
    for i in sorted(items, key=lambda k: (first[k], k)):
        if reach is None or first[i] > reach:
            groups.append([])
            reach = last[i]
        else:
            reach = max(reach, last[i])
        groups[-1].append(i)
    return groups


def _groups(arr: _Arrays, items: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The time components of ``items`` (see :func:`_time_components`), each as (its items, those of them live
    over all of it), both ascending; by the native loops when the extension is there (the same groups)."""
    if not _worth_native(arr, len(items)):
        first, last = arr.first, arr.last
        out: list[tuple[list[int], list[int]]] = []
        for group in _time_components(items, first, last):
            lo = min(first[i] for i in group)
            hi = max(last[i] for i in group)
            out.append((sorted(group), sorted(i for i in group if first[i] <= lo and last[i] >= hi)))
        return out
    grouped, ends, spanning, span_ends = _NATIVE.components(array("q", items), arr.first64, arr.last64)
    cut = [0, *ends]
    span_cut = [0, *span_ends]
    return [
        (grouped[cut[g] : cut[g + 1]].tolist(), spanning[span_cut[g] : span_cut[g + 1]].tolist())
        for g in range(len(ends))
    ]


def _decompose(arr: _Arrays, items: list[int], off: list[int]) -> list[_Piece]:
    """Split into independent leaf pieces, stacking whole-component buffers at each piece's bottom.

    A buffer live over its whole component conflicts with every other one there, so some optimal packing has
    it at the bottom (move it down, shift what was below it up by its size). With alignments that shift must
    keep everyone aligned, so a buffer is stacked only if its size is a multiple of every alignment in the
    component and the current bottom is aligned for it.
    """
    pieces: list[_Piece] = []
    stack = [(group, spanning, 0) for group, spanning in _groups(arr, items)]
    while stack:
        group, spanning, base = stack.pop()
        if arr.has_fixed and any(arr.fixed[i] >= 0 for i in group):
            pieces.append(_Piece(group, base, True))
            continue
        taken: set[int] = set()
        if spanning:
            spanning.sort(key=lambda i: (-arr.align[i], -arr.size[i], i))
            common = math.lcm(*(arr.align[i] for i in group))
            for i in spanning:
                if base % arr.align[i] == 0 and arr.size[i] % common == 0:
                    off[i] = base
                    base += arr.size[i]
                    taken.add(i)
        if not taken:
            pieces.append(_Piece(group, base, False))
            continue
        rest = [i for i in group if i not in taken]
        stack.extend((g, sp, base) for g, sp in reversed(_groups(arr, rest)))
    pieces.sort(key=lambda p: p.items[0])
    return pieces


# ----------------------------------------------------------------------------------------------------------
# Greedy portfolio
# ----------------------------------------------------------------------------------------------------------

_Key = Callable[[int], tuple[int, ...]]

#: Work units charged per buffer for one n log n time sweep (calibrated like :data:`WORK_PER_SECOND`).
SWEEP_UNITS_PER_BUFFER = 50

#: Work units charged per buffer for reading the input: validation, lower bound, decomposition, pair count.
INPUT_UNITS_PER_BUFFER = 60


class _Budget:
    """Work units left for the optional work (greedy orders beyond the first, peak repair, exact search), and
    the wall-clock deadline (``time.perf_counter``) it also ends at, if any (see :func:`wall_clock_budget`)."""

    def __init__(self, units: int, deadline: float | None = None) -> None:
        self.left = units
        self.spent = 0
        self.deadline = deadline
        self.refused = False  # whether allows() ever said no (the budget then shaped the outcome)

    def spend(self, units: int) -> None:
        """Charge ``units`` of work done."""
        self.left -= units
        self.spent += units

    def allows(self, units: int) -> bool:
        """Whether ``units`` more fit in what is left (and the deadline, if any, has not passed); a refusal is
        remembered in ``refused``."""
        if units <= self.left and (self.deadline is None or time.perf_counter() < self.deadline):
            return True
        self.refused = True
        return False

    def expired(self) -> bool:
        """Whether the wall-clock deadline, if any, has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline


def _degrees(items: Sequence[int], first: Sequence[int], last: Sequence[int]) -> dict[int, int]:
    """Number of other items overlapping each item in time, by counting (n log n, no pair lists)."""
    starts = sorted(first[i] for i in items)
    ends = sorted(last[i] for i in items)
    return {i: bisect_right(starts, last[i]) - bisect_left(ends, first[i]) - 1 for i in items}


class _Members:
    """The portfolio's running best for one piece: offsets, height, the winning member's name."""

    def __init__(self, arr: _Arrays, piece: _Piece) -> None:
        self.arr = arr
        self.piece = piece
        # an int64 array when the native loops run: they write it in place (no list round trip a member)
        self.off: MutableSequence[int] = array("q", arr.fixed64()) if arr.native else [-1] * len(arr.size)
        if arr.has_fixed:
            self.fixed = [i for i in piece.items if arr.fixed[i] >= 0]
            self.movable = [i for i in piece.items if arr.fixed[i] < 0]
        else:  # every item moves (the list is only read)
            self.fixed, self.movable = [], piece.items
        self.best: tuple[int, list[int], str] | None = None
        self.first = ""  # the first member's name
        self.ran: set[tuple[str, bool]] = set()  # the orders run over neighbour lists, (name, best fit)
        self.sorted: dict[str, Sequence[int]] = {}  # the sweeps' orders by name, each sorted once

    def reset(self) -> MutableSequence[int]:
        """Offsets with only the fixed buffers placed (the others at -1); a piece of a fair share of the buffers
        has them all reset by one copy (the members read no offset outside their piece)."""
        if 4 * len(self.piece.items) >= len(self.off):
            self.off[:] = self.arr.fixed64() if isinstance(self.off, array) else self.arr.fixed
            return self.off
        for i in self.piece.items:
            self.off[i] = self.arr.fixed[i]
        return self.off

    def plan(self) -> tuple[int, list[int], str]:
        """The best member's (height, offsets of the piece's items, name)."""
        assert self.best is not None, "the first member always runs"
        return self.best

    def limit(self) -> int | None:
        """The best height so far (an order reaching it cannot win), or None."""
        return self.best[0] if self.best is not None else None

    def consider(self, label: str, height: int) -> None:
        """Keep the current offsets if they beat the best (strictly: earlier members win ties)."""
        size, off = self.arr.size, self.off
        height = max([height, *(off[i] + size[i] for i in self.fixed)])
        if self.best is None:
            self.first = label  # the first member runs without a limit: its height is its plan's
        if self.best is None or height < self.best[0]:
            self.best = (height, [off[i] for i in self.piece.items], label)


def _order_keys(arr: _Arrays, items: Sequence[int], degree: Callable[[int], int]) -> dict[str, _Key]:
    """The greedy orders' sort keys (all ties broken by input position, so orders are deterministic)."""
    size, first, last = arr.size, arr.first, arr.last
    total: dict[int, int] = {}

    def live_max(i: int) -> int:
        if not total:
            total.update(zip(items, _live_max(items, first, last, size), strict=True))
        return total[i]

    return {  # lifetime: last - first + 1 steps
        **_quick_keys(arr, degree),
        "lifetime": lambda i: (first[i] - last[i] - 1, -size[i], first[i], i),
        "start": lambda i: (first[i], -size[i], i),
        "total": lambda i: (-live_max(i), -size[i], first[i], i),
        "total-lifetime": lambda i: (-live_max(i), first[i] - last[i] - 1, -size[i], i),
        "end": lambda i: (-last[i], -size[i], i),
        "conflict": lambda i: (-degree(i), -size[i], first[i], i),
    }


def _quick_keys(arr: _Arrays, degree: Callable[[int], int]) -> dict[str, _Key]:
    """The keys of :func:`_order_keys` that the quick try's orders use (fewer to make: a small input's plan)."""
    size, first, last = arr.size, arr.first, arr.last
    return {
        "size": lambda i: (-size[i], first[i], i),
        "area": lambda i: (-size[i] * (last[i] - first[i] + 1), -size[i], first[i], i),
        "conflict-size": lambda i: (-degree(i) * size[i], -size[i], first[i], i),
    }


#: :func:`_order_keys` as int64 key columns for the native radix sort: (column, descending), most significant first,
#: ties by the item as there (``length``: last - first + 1 steps; ``total``: the largest live total in the
#: lifetime; ``degree``: overlapping items; products as named). A test holds the two to the same orders.
_ORDER_COLUMNS: dict[str, tuple[tuple[str, bool], ...]] = {
    "size": (("size", True), ("first", False)),
    "area": (("area", True), ("size", True), ("first", False)),
    "conflict-size": (("degree-size", True), ("size", True), ("first", False)),
    "lifetime": (("length", True), ("size", True), ("first", False)),
    "start": (("first", False), ("size", True)),
    "total": (("total", True), ("size", True), ("first", False)),
    "total-lifetime": (("total", True), ("length", True), ("size", True)),
    "end": (("last", True), ("size", True)),
    "conflict": (("degree", True), ("size", True), ("first", False)),
}

#: Orders of fewer items are sorted in Python (the native sort's columns cost more there).
NATIVE_SORT_ITEMS = 64


class _Orders:
    """The greedy orders of ``items`` by name (each made once): :func:`_order_keys`' sorts, or the native radix
    sort over :data:`_ORDER_COLUMNS` when the native loops run, there are enough items and the keys fit int64."""

    def __init__(
        self, arr: _Arrays, items: Sequence[int], keys: dict[str, _Key], adj: _Adj, scope: Sequence[int] | None = None
    ) -> None:
        """``adj``: the items' overlaps (their degrees); ``scope``: the items the keys were made over (their live
        totals), if more than ``items``."""
        self.arr, self.items, self.keys, self.adj = arr, items, keys, adj
        self.scope = items if scope is None else scope
        self.native = arr.native and _NATIVE is not None and len(items) >= NATIVE_SORT_ITEMS
        self.columns: dict[str, array[int]] = {}
        self.made: dict[str, Sequence[int]] = {}

    def __getitem__(self, name: str) -> Sequence[int]:
        """The items in order ``name``."""
        if name not in self.made:
            order = self._native(name) if self.native else None
            self.made[name] = sorted(self.items, key=self.keys[name]) if order is None else order
        return self.made[name]

    def _native(self, name: str) -> Sequence[int] | None:
        """The order by the native sort, or None when a key column does not fit int64."""
        try:
            spec = tuple((self._column(c), desc) for c, desc in _ORDER_COLUMNS[name])
        except OverflowError:
            return None
        order: Sequence[int] = _NATIVE.sort_items(array("q", self.items), spec)
        return order

    def _column(self, name: str) -> array[int]:
        """The key column ``name`` over every buffer index (0 off the items where it depends on them), made by
        the native loops (``derive``; an OverflowError when a product passes int64)."""
        arr = self.arr
        if name in ("size", "first", "last"):
            return {"size": arr.size64, "first": arr.first64, "last": arr.last64}[name]
        if name not in self.columns:
            n = len(arr.size)
            if name == "length":
                col = _NATIVE.derive("length", arr.last64, arr.first64, n)
            elif name == "area":
                col = _NATIVE.derive("product", arr.size64, self._column("length"), n)
            elif name == "total":
                items = array("q", self.scope)
                totals = _NATIVE.live_max(items, arr.first64, arr.last64, arr.size64)
                col = _NATIVE.derive("scatter", items, totals, n)
            elif name == "degree" and isinstance(self.adj, _CSR):  # list lengths
                col = _NATIVE.derive("diff", self.adj.indptr, self.adj.indptr, n)
            elif name == "degree-size":
                col = _NATIVE.derive("product", self._column("degree"), arr.size64, n)
            else:  # degrees without lists (a dense piece)
                col = array("q", bytes(8 * n))
                for i in self.items:
                    col[i] = self.adj.degree(i)
            self.columns[name] = col
        return self.columns[name]


#: Orders over neighbour lists, most useful first: the portfolio is cut short on dense pieces.
_RUNS = [
    ("size", False), ("area", False), ("conflict-size", False), ("start", True), ("total", False), ("size", True),
    ("lifetime", False), ("end", True), ("start", False), ("total-lifetime", False),
    ("area", True), ("conflict-size", True), ("total", True), ("lifetime", True), ("conflict", False),
    ("end", False), ("total-lifetime", True), ("conflict", True),
]  # fmt: skip

#: Time sweeps (start order with tie-breaks; first or best fit), n log n each whatever the overlaps.
_SWEEPS: list[tuple[str, bool]] = [
    ("start", False), ("start", True), ("start-lifetime", False), ("start-lifetime", True),
    ("start-short", True), ("start-short", False),
]  # fmt: skip


#: The :func:`_split_sweep` members' thresholds, as multiples of a piece's median lifetime: the member splits the
#: piece into the buffers living at most that many steps and the others.
SPLIT_FACTORS = (4, 8, 2, 16, 32)


def _split_thresholds(arr: _Arrays, items: Sequence[int]) -> list[int]:
    """Lifetimes (in steps) to split ``items`` at, in :data:`SPLIT_FACTORS` order: the factors times the median
    lifetime, each below the longest lifetime (else the split leaves no long-lived buffer)."""
    lengths = sorted(arr.last[i] - arr.first[i] + 1 for i in items)
    median = lengths[len(lengths) // 2] if lengths else 0
    return [f * median for f in SPLIT_FACTORS if f * median < lengths[-1]] if lengths else []


def _split_sweep(
    arr: _Arrays, items: Sequence[int], threshold: int, off: MutableSequence[int], base: int, best_fit: bool
) -> int:
    """Long-lived buffers first, then the short-lived ones above them; return the height reached.

    Buffers living more than ``threshold`` steps are placed by a time sweep (start order, longest first on
    ties), as a stack of their own. Then the short-lived ones, in start order (largest first on ties), each at
    the lowest (or tightest) free offset among the short-lived buffers live at its start, at or above a floor:
    the highest end of the long-lived buffers that overlap it in time (those live at its start and those
    starting by its last step; a long-lived buffer starting by the last step of an earlier short-lived one
    counts too, which keeps the floor's upkeep a single sweep). Valid for any order of equal starts: every
    placed short-lived buffer overlapping the next one is live at its start. Cost: a sweep, plus the short-lived
    pairs (each placement scans the short-lived buffers live then).
    """
    first, last, size = arr.first, arr.last, arr.size
    long_ = sorted((i for i in items if last[i] - first[i] + 1 > threshold), key=lambda i: (first[i], -last[i], i))
    short = sorted(_short_lived(arr, items, threshold), key=lambda i: (first[i], -size[i], i))
    height = _sweep(long_, arr, off, base, best_fit) if long_ else base
    if _worth_native(arr, len(items)):
        placed = _int64(off)
        top: int = _NATIVE.split_place(
            array("q", short), array("q", long_), arr.first64, arr.last64, arr.size64, arr.align64, placed, base,
            best_fit,
        )  # fmt: skip
        _written(off, placed)
        return max(height, top)
    return max(height, _split_short(arr, short, long_, off, base, best_fit))


def _short_lived(arr: _Arrays, items: Sequence[int], threshold: int) -> list[int]:
    """The ``items`` living at most ``threshold`` steps (the short-lived side of a lifetime split)."""
    first, last = arr.first, arr.last
    return [i for i in items if last[i] - first[i] + 1 <= threshold]


def _split_short(
    arr: _Arrays, short: list[int], long_: list[int], off: MutableSequence[int], base: int, best_fit: bool
) -> int:
    """The short-lived phase of :func:`_split_sweep` in pure Python (the native ``split_place`` is its twin)."""
    first, last, size, align = arr.first, arr.last, arr.size, arr.align
    height = base
    tops: list[tuple[int, int]] = []  # max-heap of (-end, last step) of the long-lived buffers reached
    live: list[tuple[int, int]] = []  # byte ranges of the live short-lived buffers, ascending
    expiry: list[tuple[int, int]] = []  # heap of (last step, offset) of the live short-lived buffers
    k = 0
    for b in short:
        f, t = first[b], last[b]
        while k < len(long_) and first[long_[k]] <= t:
            heapq.heappush(tops, (-(off[long_[k]] + size[long_[k]]), last[long_[k]]))
            k += 1
        while tops and tops[0][1] < f:
            heapq.heappop(tops)
        while expiry and expiry[0][0] < f:
            x = heapq.heappop(expiry)[1]
            del live[bisect_left(live, (x,))]
        floor = max(base, -tops[0][0]) if tops else base
        x = _lowest_fit(live, size[b], align[b], floor, best_fit)
        off[b] = x
        insort(live, (x, x + size[b]))
        heapq.heappush(expiry, (t, x))
        height = max(height, x + size[b])
    return height


def _sweep_keys(arr: _Arrays) -> dict[str, _Key]:
    """Start orders for the sweeps: ties by size, by longest lifetime, by shortest lifetime."""
    size, first, last = arr.size, arr.first, arr.last
    return {
        "start": lambda i: (first[i], -size[i], i),
        "start-lifetime": lambda i: (first[i], -last[i], -size[i], i),
        "start-short": lambda i: (first[i], last[i], -size[i], i),
    }


#: :func:`_sweep_keys` as columns for the native sort: (column, descending), most significant first (ties by
#: the item, as there).
_SWEEP_COLUMNS = {
    "start": (("first", False), ("size", True)),
    "start-lifetime": (("first", False), ("last", True), ("size", True)),
    "start-short": (("first", False), ("last", False), ("size", True)),
}


def _sweep_order(arr: _Arrays, items: Sequence[int], name: str) -> Sequence[int]:
    """``items`` sorted by the sweep key ``name`` (an int64 array when the native loops sort them)."""
    if not _worth_native(arr, len(items)):
        return sorted(items, key=_sweep_keys(arr)[name])
    columns = {"first": arr.first64, "last": arr.last64, "size": arr.size64}
    order: array[int] = _NATIVE.sort_items(
        array("q", items), tuple((columns[c], desc) for c, desc in _SWEEP_COLUMNS[name])
    )
    return order


def _portfolio(arr: _Arrays, piece: _Piece, target: int, budget: _Budget, shared: _Orders | None = None) -> _Members:
    """Run the greedy members on a piece; return them (``best``: (height, offsets of its items, member name)).

    Members: orders over neighbour lists (first and best fit, size/conflict/area/... orders, most useful
    first) while their pair visits fit in the budget and :data:`PORTFOLIO_PAIR_VISITS` (or
    :data:`PORTFOLIO_VISITS_PER_BUFFER` a buffer, if more); then n log n time sweeps. A huge piece (more
    than :data:`PAIR_LIMIT` overlapping pairs and :data:`DENSE_PAIRS_PER_BUFFER` a buffer) skips the lists: the
    size order over a time index first if it and a sweep fit the budget, then sweeps and lifetime splits, then the
    other orders over the time index while the budget pays their pairs. The first member
    always runs; every member is charged to ``budget``. Stops as soon as one reaches ``target``. ``shared``: the
    quick try's lists and orders (over the whole input), used (and not paid again) when the piece is the whole
    input.
    """
    m = _Members(arr, piece)
    n = len(piece.items)
    pairs = _pairs(arr, piece.items)
    huge = pairs > PAIR_LIMIT and pairs > DENSE_PAIRS_PER_BUFFER * n
    sweep_cost = SWEEP_UNITS_PER_BUFFER * n
    cost = 2 * pairs + n  # one order over neighbour lists (building the lists costs about the same)
    lists = not huge and (bool(m.fixed) or budget.allows(2 * cost))
    if lists:
        if shared is not None and not m.fixed and shared.items == piece.items:
            adj, orders = shared.adj, shared
            orders.keys = _order_keys(arr, piece.items, adj.degree)  # the quick try's keys and the others
        else:
            budget.spend(cost)  # building the lists; the first order below is always run (and charged)
            adj = _neighbours(arr, piece.items)
            orders = _Orders(arr, m.movable, _order_keys(arr, piece.items, adj.degree), adj, piece.items)
        visits = max(PORTFOLIO_PAIR_VISITS, PORTFOLIO_VISITS_PER_BUFFER * n)
        runs = _RUNS[: max(1, visits // max(pairs, 1))]
        last_use = {name: k for k, (name, _) in enumerate(runs)}
        for k, (name, best_fit) in enumerate(runs):
            if k and not budget.allows(cost):
                break
            budget.spend(cost)
            height = _place(orders[name], arr, adj, m.reset(), piece.base, best_fit, m.limit())
            if last_use[name] == k and name != "start":  # the sweeps sort by start too: kept for them
                del orders.made[name]  # a large piece's orders are megabytes each
            m.ran.add((name, best_fit))
            m.consider(f"greedy-{name}-{'best' if best_fit else 'first'}-fit", height)
            if m.best is not None and m.best[0] <= target:
                return m
        if "start" in orders.made:  # the sweeps' start order too (the same key)
            m.sorted["start"] = orders.made["start"]
    index_cost = 3 * pairs + sweep_cost  # an order over a time index: gather, sort, fit
    indexed = _INDEXED_RUNS
    if not lists and not m.fixed and budget.allows(index_cost + sweep_cost):
        # the baseline's order (size, first fit) before the sweeps and splits, while it and a sweep fit the
        # budget: they must not leave it unpaid (the safety net, its twin, is skipped when the budget is spent)
        _indexed_orders(arr, m, index_cost, target, budget, indexed[:1])
        indexed = indexed[1:]
    if m.best is not None and m.best[0] <= target:
        return m
    if not m.fixed and _sweeps(arr, m, sweep_cost, target, budget, lists or m.best is not None, not lists):
        return m
    if not lists:
        _indexed_orders(arr, m, index_cost, target, budget, indexed)
    return m


def _sweeps(arr: _Arrays, m: _Members, cost: int, target: int, budget: _Budget, paid: bool, splits: bool) -> bool:
    """Run the time sweeps on a piece without fixed offsets while the budget pays ``cost`` a sweep; the first
    always runs unless ``paid`` (members ran before). With ``splits`` (a piece too dense for neighbour lists) the
    lifetime splits come second, each also paying its short-lived pairs. Return whether one reached ``target``.
    A first-fit sweep whose order ran over neighbour lists is skipped: it is that member (see :func:`_sweep`)."""
    for k, (name, best_fit, threshold) in enumerate(_sweep_members(arr, m, cost, budget, splits)):
        if threshold < 0 and not best_fit and (name, False) in m.ran:
            continue
        short = _short_lived(arr, m.movable, threshold) if threshold >= 0 else []
        extra = 2 * _pairs(arr, short) if short else 0
        if (k or paid) and not budget.allows(cost + extra):
            return False
        budget.spend(cost + extra)
        if threshold >= 0:
            height = _split_sweep(arr, m.movable, threshold, m.reset(), m.piece.base, best_fit)
            name = f"split-{threshold}"
        else:
            if name not in m.sorted:
                m.sorted[name] = _sweep_order(arr, m.movable, name)
            height = _sweep(m.sorted[name], arr, m.reset(), m.piece.base, best_fit)
            name = f"sweep-{name}"
        m.consider(f"{name}-{'best' if best_fit else 'first'}-fit", height)
        if m.best is not None and m.best[0] <= target:
            return True
    return False


def _sweep_members(
    arr: _Arrays, m: _Members, cost: int, budget: _Budget, splits: bool
) -> Iterator[tuple[str, bool, int]]:
    """The sweeps as (name, best fit, -1), with the lifetime splits as ("split", False, threshold) second when
    ``splits``; the thresholds (a sort of the lifetimes) are made only once the budget pays for a second member."""
    yield (*_SWEEPS[0], -1)
    if splits and budget.allows(cost):
        yield from (("split", False, t) for t in _split_thresholds(arr, m.movable))
    yield from ((name, best_fit, -1) for name, best_fit in _SWEEPS[1:])


#: Orders run over a time index on a huge piece (no neighbour lists), most useful first.
_INDEXED_RUNS = [
    ("size", False), ("conflict-size", False), ("size", True), ("area", False), ("total", False),
    ("conflict-size", True), ("lifetime", False), ("conflict", False),
]  # fmt: skip


def _indexed_orders(
    arr: _Arrays, m: _Members, cost: int, target: int, budget: _Budget, runs: list[tuple[str, bool]]
) -> None:
    """Greedy orders ``runs`` (of :data:`_INDEXED_RUNS`) over a :class:`_TimeIndex` (size, conflict x size, ...
    as omnimalloc's greedies order), while the budget pays ``cost`` an order; the first always runs if the piece
    has no plan yet."""
    items = m.piece.items
    degree: dict[int, int] = {}
    keys = _order_keys(arr, items, lambda i: degree[i])
    for name, best_fit in runs:
        if m.best is not None and (m.best[0] <= target or not budget.allows(cost)):
            return
        budget.spend(cost)
        if not degree and name.startswith("conflict"):
            degree.update(_degrees(items, arr.first, arr.last))
        order = sorted(m.movable, key=keys[name])
        height = _place_indexed(order, arr, items, m.reset(), m.piece.base, best_fit, m.limit())
        m.consider(f"greedy-{name}-{'best' if best_fit else 'first'}-fit", height)


# ----------------------------------------------------------------------------------------------------------
# Peak repair
# ----------------------------------------------------------------------------------------------------------

#: Buffers (by start) a repair window takes on each side of the top first; it doubles after a failed round.
REPAIR_WINDOW = 32

#: A repair gives up after its window has doubled this many times in a row without lowering the top.
REPAIR_GROWTHS = 4

#: Phase 2 of the exact search probes the arena at this fraction of the way from the lower bound to the best
#: height found (a probe that succeeds usually lands well below its capacity, so probing low pays).
BISECT_NUM, BISECT_DEN = 3, 8

#: Share of the budget left the repair may spend before the exact search (the rest of it runs after).
REPAIR_SHARE = 0.25

#: Orders tried on a repair window's buffers (over neighbour lists; the others stay put).
_REPAIR_RUNS = [
    ("size", True), ("size", False), ("conflict-size", True), ("area", True), ("total", False), ("start", True),
    ("lifetime", False), ("conflict-size", False),
]  # fmt: skip


class _MaxTree:
    """A max segment tree over a list, for the repair's searches in O(log n) a step: ``tree[leaves + p]`` holds
    value p (the list padded to ``leaves``, a power of two, with a value no search asks for), node k the larger
    of its children 2k and 2k + 1, node 1 the largest of all (an int64 array when the native loops built it)."""

    def __init__(self, tree: MutableSequence[int], leaves: int) -> None:
        self.tree, self.leaves = tree, leaves

    @staticmethod
    def build(values: list[int], pad: int) -> _MaxTree:
        """The tree over ``values``, padded with ``pad``."""
        leaves = 1 << (len(values) - 1).bit_length()
        rows = [values + [pad] * (leaves - len(values))]
        while len(rows[-1]) > 1:
            below = rows[-1]
            rows.append(list(map(max, below[0::2], below[1::2])))
        return _MaxTree(list(itertools.chain([pad], *reversed(rows))), leaves)

    def top(self) -> int:
        """The largest value."""
        return self.tree[1]

    def set(self, p: int, value: int) -> None:
        """Set the value at position ``p``."""
        tree = self.tree
        k = self.leaves + p
        tree[k] = value
        k >>= 1
        while k:
            high = max(tree[2 * k], tree[2 * k + 1])
            if tree[k] == high:
                return
            tree[k] = high
            k >>= 1

    def next_at_least(self, p: int, value: int) -> int:
        """The first position >= ``p`` holding at least ``value``, or -1."""
        tree, leaves = self.tree, self.leaves
        if p >= leaves:
            return -1
        k = leaves + p
        while tree[k] < value:
            while k & 1:  # a right child: the rest of its parent is done, look right of the parent
                k >>= 1
            if not k:
                return -1
            k += 1
        while k < leaves:
            k <<= 1
            if tree[k] < value:
                k += 1
        return k - leaves

    def at_least(self, end: int, value: int) -> list[int]:
        """The positions below ``end`` holding at least ``value``, ascending (cost: the answer times the
        levels, at most; a frontier of nodes is narrowed level by level)."""
        tree, leaves = self.tree, self.leaves
        if end <= 0 or tree[1] < value:
            return []
        frontier = [1]
        span = leaves  # the leaves under a node of the frontier
        while span > 1:
            span >>= 1
            last = (leaves + end - 1) // span  # the last node whose first leaf is below end
            frontier = [c for k in frontier for c in (2 * k, 2 * k + 1) if c <= last and tree[c] >= value]
        return [k - leaves for k in frontier]


@dataclass
class _Window:
    """A repair window's buffers: ``movers`` (living inside its steps; at ``positions`` in start order),
    ``partial`` (crossing a border) and ``spans``, the merged byte ranges of the buffers spanning it."""

    movers: list[int]
    positions: list[int]
    partial: list[int]
    spans: list[tuple[int, int]]


class _StartOrder:
    """A piece's buffers in start order with two :class:`_MaxTree` over it, their tops (offset + size, updated
    when a repair moves some) and their last steps: a repair round finds the buffers at the top and the
    window's members in O(window + log n) instead of scanning the piece (the members by the native loops when
    the extension is there)."""

    def __init__(self, arr: _Arrays, items: list[int], off: list[int]) -> None:
        first = arr.first
        self.arr, self.off = arr, off
        self.by_start = by_start = sorted(sorted(items), key=first.__getitem__)  # ties by index
        self.native = arr.native and _NATIVE is not None
        self.starts: Sequence[int]
        self.last: Sequence[int]
        if self.native:  # the same as below, as int64 arrays (also those the native window scan reads)
            leaves = 1 << (len(by_start) - 1).bit_length()
            self.first64, self.last64, self.size64, self.off64, tops, lasts = _NATIVE.start_order(
                by_start, off, arr.first64, arr.last64, arr.size64, leaves
            )
            self.starts, self.last = self.first64, self.last64
            self.tops, self.lasts = _MaxTree(tops, leaves), _MaxTree(lasts, leaves)
            return
        self.starts = list(map(first.__getitem__, by_start))
        self.last = list(map(arr.last.__getitem__, by_start))
        tops = list(map(add, map(off.__getitem__, by_start), map(arr.size.__getitem__, by_start)))
        self.tops = _MaxTree.build(tops, -1)
        self.lasts = _MaxTree.build(list(self.last), self.starts[0] - 1)

    def height(self) -> int:
        """The highest top."""
        return self.tops.top()

    def reaching(self, height: int, positions: list[int] | None = None) -> int:
        """How many buffers (of ``positions``, or of all) reach ``height``."""
        if positions is None:
            return len(self.tops.at_least(len(self.starts), height))
        tree, leaves = self.tops.tree, self.tops.leaves
        return sum(1 for p in positions if tree[leaves + p] >= height)

    def moved(self, positions: list[int]) -> None:
        """Take the new offsets of the buffers at ``positions`` (in start order)."""
        off, size, by_start = self.off, self.arr.size, self.by_start
        for p in positions:
            i = by_start[p]
            self.tops.set(p, off[i] + size[i])
            if self.native:
                self.off64[p] = off[i]

    def window(self, height: int, reach: int) -> _Window:
        """For the steps [lo, hi] around the first buffers at ``height`` (the earliest and those chained to it
        by overlapping lifetimes) widened by ``reach`` buffers each side: its movers (living inside), its
        partial obstacles (crossing a border) and the merged byte ranges of the buffers spanning it (obstacles
        at every step of the window)."""
        starts, last, tops = self.starts, self.last, self.tops
        p = tops.next_at_least(0, height)
        assert p >= 0, "no buffer reaches the height"
        a = z = p
        chain = last[p]
        while True:
            p = tops.next_at_least(p + 1, height)
            if p < 0 or starts[p] > chain:
                break
            z = p
            chain = max(chain, last[p])
        a = bisect_left(starts, starts[a])
        z = bisect_right(starts, starts[z]) - 1
        lo = starts[max(0, a - reach)]
        hi = max(chain, starts[min(len(starts) - 1, z + reach)])
        inside, end = bisect_left(starts, lo), bisect_right(starts, hi)  # the buffers starting in [lo, hi]
        by_start = self.by_start
        if self.native:
            movers, partial, flat = _NATIVE.window(
                self.lasts.tree, self.first64, self.last64, self.off64, self.size64, inside, end, lo, hi
            )
            positions = movers.tolist()
            spans = list(zip(flat[0::2], flat[1::2], strict=True))
        else:
            positions, partial, spans = self._members(inside, end, lo, hi)
        return _Window([by_start[q] for q in positions], positions, [by_start[q] for q in partial], spans)

    def _members(self, inside: int, end: int, lo: int, hi: int) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        """The window's movers and partial obstacles (positions) and merged spans: those live at ``lo`` that
        start before it (positions below ``inside``), then those starting in [lo, hi] (up to ``end``)."""
        starts, last, off, size, by_start = self.starts, self.last, self.off, self.arr.size, self.by_start
        movers: list[int] = []
        partial: list[int] = []
        spans: list[tuple[int, int]] = []
        for q in self.lasts.at_least(inside, lo):
            if last[q] >= hi:
                i = by_start[q]
                spans.append((off[i], off[i] + size[i]))
            else:
                partial.append(q)
        for q in range(inside, end):
            if last[q] <= hi:
                movers.append(q)
            elif starts[q] == lo:
                i = by_start[q]
                spans.append((off[i], off[i] + size[i]))
            else:
                partial.append(q)
        spans.sort()
        merged: list[tuple[int, int]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                if e > merged[-1][1]:
                    merged[-1] = (merged[-1][0], e)
            else:
                merged.append((s, e))
        return movers, partial, merged


def _repair(
    arr: _Arrays,
    piece: _Piece,
    result: tuple[int, list[int], str],
    target: int,
    budget: _Budget,
    memo: _RepairMemo | None = None,
) -> tuple[int, list[int], str]:
    """Lower a piece's top by re-packing the buffers of a time window around it, the others staying put.

    The buffers living inside a window of steps around those at the top are lifted out and placed again by
    several greedy orders among the buffers crossing its borders and those spanning it (the latter merged
    into one list of byte ranges). A re-pack below the top is kept and the new top is attacked with a small
    window again; after a failed round the window doubles. Every round is charged to ``budget`` (as a scan of
    the piece, though a :class:`_StartOrder` finds a window without one). ``memo`` keeps the piece's start
    order for the next call (see :class:`_RepairMemo`).

    A round that succeeds moves the buffers at the top that its window holds; while the top stays, the rounds
    still needed are estimated from those moved so far, and the repair stops (as if the budget had said no)
    when the budget cannot pay for them: a top of many buffers apart in time is not worth chipping at (``memo``
    remembers what they would cost: a later call with less budget left stops at once).
    """
    height, offsets, label = result
    if height <= target or (arr.has_fixed and any(arr.fixed[i] >= 0 for i in piece.items)):
        return result
    if memo is not None and memo.needs.get((id(piece), height), 0) > budget.left:
        budget.refused = True
        return result
    kept = memo.orders.get(id(piece)) if memo is not None else None
    order = kept[1] if kept is not None and kept[0] is offsets else None  # built once the budget allows a round
    off = order.off if order is not None else []
    reach = REPAIR_WINDOW
    improved = False
    scan = 2 * len(piece.items)
    progress = _TopProgress()
    while height > target and budget.allows(scan) and reach <= REPAIR_WINDOW << REPAIR_GROWTHS:
        budget.spend(scan)
        if order is None:
            off = [-1] * len(arr.size)
            for i, o in zip(piece.items, offsets, strict=True):
                off[i] = o
            order = _StartOrder(arr, piece.items, off)
        window = order.window(height, reach)
        at_top = order.reaching(height, window.positions)
        if _repack(arr, piece.base, window, off, height, budget):
            # the window's buffers now end below the top: fewer places at it (the top drops with the last)
            improved = True
            order.moved(window.positions)
            reach = REPAIR_WINDOW
            if order.height() < height:
                height, progress = order.height(), _TopProgress()
            elif not progress.affordable(order, height, at_top, scan, budget):
                budget.refused = True
                if memo is not None:
                    memo.needs[(id(piece), height)] = progress.needs(scan)
                break
        elif len(window.movers) == len(piece.items):
            break
        else:
            reach *= 2
    out = (height, [off[i] for i in piece.items], label + "+repair") if improved else result
    if memo is not None and order is not None:
        memo.orders[id(piece)] = (out[1], order)  # a failed re-pack restores its movers: off holds out's offsets
    return out


class _TopProgress:
    """A repair's rounds at one top height: the buffers at it (counted after the first success), and the rounds
    and buffers moved off it so far."""

    def __init__(self) -> None:
        self.left = -1
        self.rounds = self.moved = 0

    def affordable(self, order: _StartOrder, height: int, moved: int, scan: int, budget: _Budget) -> bool:
        """After a round that moved ``moved`` buffers off the top: whether the budget can pay ``scan`` for each
        round still needed at the rate so far."""
        if self.left < 0:
            self.left = order.reaching(height)
        else:
            self.left -= moved
        self.rounds += 1
        self.moved += moved
        return self.needs(scan) <= budget.left

    def needs(self, scan: int) -> int:
        """What the rounds still needed cost at least, at the rate so far (``scan`` a round)."""
        return -(-self.left * self.rounds // max(self.moved, 1)) * scan


def _sub_arrays(arr: _Arrays, group: list[int]) -> _Arrays:
    """The buffers ``group`` of ``arr`` as arrays of their own, renumbered 0..len(group)-1 (a repair window's:
    the native loops then run on it whatever the size of the input)."""
    sub = _Arrays(())
    sub.ids = [arr.ids[i] for i in group]
    sub.first = [arr.first[i] for i in group]
    sub.last = [arr.last[i] for i in group]
    sub.size = [arr.size[i] for i in group]
    sub.align = [arr.align[i] for i in group]
    sub.fixed = [-1] * len(group)
    sub.has_fixed = False
    sub._fixed64 = None
    sub.arrays(arr.native)
    return sub


def _repack(arr: _Arrays, base: int, window: _Window, off: list[int], height: int, budget: _Budget) -> bool:
    """Place the window's movers again below ``height`` by the repair orders; keep the first that fits (else
    they stay put).

    The movers and partial obstacles are renumbered 0..k-1 (movers first) into arrays of their own, so the cost
    is the window's (its pairs, and its movers times its spans), not the piece's."""
    movers, spans = window.movers, window.spans
    group = movers + window.partial
    sub = _sub_arrays(arr, group)
    adj = _neighbours(sub, range(len(group)), dense_ok=False)
    cost = adj.pairs() + len(movers) * (len(spans) + 8)
    local = {i: k for k, i in enumerate(movers)}
    keys = _order_keys(arr, movers, lambda i: adj.degree(local[i]) + len(spans))
    start = [-1] * len(movers) + [off[i] for i in window.partial]
    for name, best_fit in _REPAIR_RUNS:
        if not budget.allows(cost):
            break
        budget.spend(cost)
        trial = list(start)
        order = [local[i] for i in sorted(movers, key=keys[name])]
        if _place(order, sub, adj, trial, base, best_fit, height, static=spans) < height:
            for i, o in zip(movers, trial, strict=False):
                off[i] = o
            return True
    return False


# ----------------------------------------------------------------------------------------------------------
# Exact search (MiniMalloc-style branch and bound)
# ----------------------------------------------------------------------------------------------------------

_FOUND, _NOT_FOUND, _PAUSED = 0, 1, 2

#: What _Search._unplace needs: (neighbour, old lowest offset) pairs and (section, old, new witness) triples.
_Undo = tuple[list[tuple[int, int]], list[tuple[int, int, int]]]

#: Static orders tried side by side by the exact search (MiniMalloc's letters: T = largest section total,
#: W = lifetime width, A = area; all descending, ties by input order).
EXACT_HEURISTICS = ("TWA", "TAW", "WAT")


class _Frame:
    """The fixed structure of one piece for the exact search, with items renumbered 0..m-1."""

    def __init__(self, arr: _Arrays, piece: _Piece) -> None:
        self.items = piece.items
        self.base = piece.base
        self.size = [arr.size[g] for g in piece.items]
        self.align = [arr.align[g] for g in piece.items]
        first = [arr.first[g] for g in piece.items]
        last = [arr.last[g] for g in piece.items]
        self.width = [b - a + 1 for a, b in zip(first, last, strict=True)]
        self.area = [w * s for w, s in zip(self.width, self.size, strict=True)]
        m = len(piece.items)
        adj = _overlaps(range(m), first, last)
        self.adj = [adj.lists[k] for k in range(m)]
        # maximal cross-sections (cliques of the interval graph); each item spans a contiguous range of them
        events = sorted([(first[k], 1, k) for k in range(m)] + [(last[k] + 1, 0, k) for k in range(m)])
        self.lo = [0] * m
        self.hi = [0] * m
        members: list[list[int]] = []
        live: dict[int, None] = {}
        grew = False
        for _, kind, k in events:
            if kind == 1:
                live[k] = None
                self.lo[k] = len(members)
                grew = True
            else:
                if grew:
                    members.append(list(live))
                    grew = False
                del live[k]
                self.hi[k] = len(members)
        self.members = members
        self.total = [sum(self.size[k] for k in mem) for mem in members]
        self.cuts = [0] * max(len(members) - 1, 0)  # items live across the border of sections s and s+1
        for k in range(m):
            for sec in range(self.lo[k], self.hi[k] - 1):
                self.cuts[sec] += 1
        self._static64: tuple[array[int], ...] | None = None

    def static64(self) -> tuple[array[int], ...]:
        """Sizes, alignments, section ranges, widths, areas, neighbour lists and section members (the lists as
        CSR), section totals and cuts as int64 arrays, for the native search (built once a frame)."""
        if self._static64 is None:
            adj_ptr = array("q", itertools.accumulate(map(len, self.adj), initial=0))
            mem_ptr = array("q", itertools.accumulate(map(len, self.members), initial=0))
            adj_idx = array("q", itertools.chain.from_iterable(self.adj))
            mem_idx = array("q", itertools.chain.from_iterable(self.members))
            head = (self.size, self.align, self.lo, self.hi, self.width, self.area)
            tail = (self.total, self.cuts)
            arrays = (*head, adj_ptr, adj_idx, mem_ptr, mem_idx, *tail)
            self._static64 = tuple(array("q", x) for x in arrays)
        return self._static64

    def fits_int64(self, capacity: int) -> bool:
        """Whether every offset, section total, candidate key and order key of a search within ``capacity``
        fits int64."""
        if not self.size:
            return True
        reach = max(capacity, self.base, 0) + max(self.align) + max(self.size) + sum(self.size)
        fits = min(self.base, capacity) >= 0 and reach * (len(self.size) + 1) < 1 << 62
        return fits and max(self.area) < 1 << 62 and max(self.width) < 1 << 62


class _Search:
    """One depth-first search for a packing within ``capacity``, pausable so several can run side by side.

    Buffers are placed in canonical order: non-decreasing (offset, rank), each at its lowest legal offset
    ``mo`` given the buffers already placed. Pruning: section inference (every cross-section stacks its
    remaining size above max(current offset, its floor)), the unallocated floor (some remaining member of
    every section must be able to start low enough), a per-item check (mo + size within capacity) and
    dominance (never place at or above a height some remaining buffer could already fill). When a placement
    empties every cut between two sections, the two sides are solved independently.

    This class is the definition; with the extension (and values within int64) the same search runs in C
    (``_native.c``, exact_search / exact_resume), with the same placements, nodes and work at every pause.
    """

    def __init__(self, frame: _Frame, capacity: int, heuristic: str) -> None:
        self.f = frame
        self.capacity = capacity
        self.heuristic = heuristic
        m = len(frame.size)
        self.total = list(frame.total)
        self.cuts = list(frame.cuts)
        self.off = [-1] * m
        self.solution = [-1] * m
        # lowest legal offset of unplaced items
        self.mo = [_align_up(frame.base, a) for a in frame.align]
        # an unplaced member with mo <= capacity - total
        self.wit = [mem[0] for mem in frame.members]
        # the sections each item is witness of, in insertion order (the order _rewatch visits them, which
        # decides the work counted when it finds a section infeasible; the native search keeps it as lists)
        self.watch: list[dict[int, None]] = [{} for _ in range(m)]
        for sec, w in enumerate(self.wit):
            self.watch[w][sec] = None
        self.nodes = 0
        self.work = 0
        self.pause_at = 0
        self.native = _NATIVE is not None and frame.fits_int64(capacity)  # run the search in C

    def solve(self) -> Generator[None, None, int]:
        """Run to completion (pausing whenever ``work`` reaches ``pause_at``); return _FOUND or _NOT_FOUND."""
        mo, wit = self.mo, self.wit
        if any(mo[wit[sec]] + t > self.capacity for sec, t in enumerate(self.total)):
            return _NOT_FOUND
        if any(o + s > self.capacity for o, s in zip(mo, self.f.size, strict=True)):
            return _NOT_FOUND
        if self.native:
            return (yield from self._solve_native())
        return (yield from self._subsolve(list(range(len(mo))), 0, len(self.total)))

    def _solve_native(self) -> Generator[None, None, int]:
        """:meth:`solve` by the extension: the same search, paused at the same points with the same counts."""
        start = (array("q", self.mo), array("q", self.wit))
        run = _NATIVE.exact_search((*self.f.static64(), *start), self.capacity, self.heuristic)
        while True:
            status, self.nodes, self.work, solution = _NATIVE.exact_resume(run, self.pause_at)
            if status != _PAUSED:
                break
            yield
        if solution is not None:
            self.solution = solution
        return int(status)

    def _preorder(self, items: Sequence[int]) -> list[int]:
        """Items in the static order named by the heuristic letters (T, W, A, Z size); index = rank."""
        f = self.f
        lo = min(f.lo[k] for k in items)
        hi = max(f.hi[k] for k in items)
        peaks = _range_maxima(self.total[lo:hi], [(f.lo[k] - lo, f.hi[k] - lo) for k in items])
        self.work += (hi - lo) * max(hi - lo, 1).bit_length() + 12 * len(items)
        keys: dict[int, tuple[int, ...]] = {}
        for k, peak in zip(items, peaks, strict=True):
            by = {"T": -peak, "W": -f.width[k], "A": -f.area[k], "Z": -f.size[k]}
            keys[k] = (*(by[c] for c in self.heuristic), k)
        return sorted(items, key=keys.__getitem__)

    def _subsolve(self, items: list[int], lo: int, hi: int) -> Generator[None, None, int]:
        """Solve one independent partition (its items live only in sections lo..hi-1)."""
        pre = self._preorder(items)
        return (yield from self._search(pre, list(range(len(pre))), pre, lo, hi, 0))

    def _search(
        self, pre: list[int], ranks: list[int], items: list[int], lo: int, hi: int, start: int
    ) -> Generator[None, None, int]:
        """Try every canonical next placement among the unplaced ``items`` (ranks ``ranks`` in ``pre``).

        Candidates are keyed ``mo * len(pre) + rank``; canonical order means keys never decrease along a
        branch, so only keys >= ``start`` (the key of the previous placement) are tried.
        """
        if self.work >= self.pause_at:
            yield
        self.nodes += 1
        if not items:
            return _FOUND
        f = self.f
        scale = len(pre)
        work = 20 + len(items)
        adj = f.adj
        sec_lo, sec_hi = f.lo, f.hi
        for key in self._candidates(items, ranks, lo, hi, scale, start):
            o, r = divmod(key, scale)
            b = pre[r]
            work += 10 + len(adj[b]) + sec_hi[b] - sec_lo[b]
            ok, seen, undo = self._place(b, o)
            work += seen
            status = _NOT_FOUND
            if ok:
                self.work += work
                work = 0
                j = bisect_left(ranks, r)
                status = yield from self._place_next(
                    pre, ranks[:j] + ranks[j + 1 :], items[:j] + items[j + 1 :], lo, hi, key, b
                )
            self._unplace(b, undo)
            if status == _FOUND:
                return status
        self.work += work
        return _NOT_FOUND

    def _candidates(self, items: list[int], ranks: list[int], lo: int, hi: int, scale: int, start: int) -> list[int]:
        """The keys to try, ascending: those >= ``start`` up to the first one beyond the section inference or
        the dominance bound (each a placement at offset key // scale of the item of rank key % scale)."""
        mos = list(map(self.mo.__getitem__, items))
        keys = sorted(map(add, map(mul, mos, repeat(scale)), ranks))
        min_height = min(map(add, mos, map(self.f.size.__getitem__, items)))
        # section inference with a monotone floor: after placing any item at offset o, every section of the
        # partition still has to stack its remaining size above max(o, its floor); for the placed item's own
        # sections that is o + (total before placement), elsewhere o + total, so o <= capacity - max total.
        max_offset = self.capacity - max(self.total[lo:hi])
        out = keys[bisect_left(keys, start) :]
        for k, key in enumerate(out):
            o = key // scale
            if o > max_offset or o >= min_height:
                return out[:k]
        return out

    def _place(self, b: int, o: int) -> tuple[bool, int, _Undo]:
        """Place ``b`` at ``o``: raise its neighbours, take its size off its sections, find new witnesses.
        Return (still feasible, members looked at, what :meth:`_unplace` needs to take it back)."""
        s = self.f.size[b]
        self.off[b] = o
        changed, ok = self._raise(b, o + s)
        total = self.total
        for sec in range(self.f.lo[b], self.f.hi[b]):
            total[sec] -= s
        trail: list[tuple[int, int, int]] = []
        seen = 0
        if ok:
            ok, seen = self._rewatch([b] + [x for x, _ in changed], trail)
        return ok, seen, (changed, trail)

    def _unplace(self, b: int, undo: _Undo) -> None:
        """Take back the placement of ``b``: witnesses, section totals, neighbours' lowest offsets, offset."""
        changed, trail = undo
        wit, watch, total, mo, f = self.wit, self.watch, self.total, self.mo, self.f
        for sec, w, nw in reversed(trail):
            wit[sec] = w
            if nw >= 0:
                del watch[nw][sec]
            watch[w][sec] = None
        s = f.size[b]
        for sec in range(f.lo[b], f.hi[b]):
            total[sec] += s
        for x, v in reversed(changed):
            mo[x] = v
        self.off[b] = -1

    def _raise(self, b: int, h: int) -> tuple[list[tuple[int, int]], bool]:
        """Raise the lowest legal offset of ``b``'s unplaced neighbours to ``h`` (aligned up); return the
        (neighbour, old offset) pairs changed and whether every one still fits within the capacity."""
        f = self.f
        off, mo, size, align, capacity = self.off, self.mo, f.size, f.align, self.capacity
        changed: list[tuple[int, int]] = []
        for x in f.adj[b]:
            if off[x] < 0 and mo[x] < h:
                changed.append((x, mo[x]))
                a = align[x]
                m = h if a == 1 else _align_up(h, a)
                mo[x] = m
                if m + size[x] > capacity:
                    return changed, False
        return changed, True

    def _rewatch(self, moved: list[int], trail: list[tuple[int, int, int]]) -> tuple[bool, int]:
        """The unallocated floor after placing ``moved[0]`` and raising the others: every section's remaining
        items stack above the lowest offset any of them can take, so some unplaced member must have
        mo <= capacity - total. Each section watches one such member; offsets only grow while descending, so
        only sections whose watched member moved past that threshold (or was placed) need a new one. Changes
        go to ``trail`` (section, old witness, new witness or -1); return (still feasible, members looked at)."""
        b = moved[0]
        off, mo, total, wit, watch = self.off, self.mo, self.total, self.wit, self.watch
        members, capacity = self.f.members, self.capacity
        work = 0
        for x in moved:
            watched = watch[x]
            if not watched:
                continue
            mx = mo[x]
            for sec in list(watched):
                limit = capacity - total[sec]
                if x != b and mx <= limit:
                    continue
                found = -1
                pending = False
                group = members[sec]
                work += len(group)
                for y in group:
                    if off[y] < 0:
                        if mo[y] <= limit:
                            found = y
                            break
                        pending = True
                if found < 0 and pending:
                    return False, work
                trail.append((sec, x, found))
                del watched[sec]
                wit[sec] = found
                if found >= 0:
                    watch[found][sec] = None
        return True, work

    def _place_next(
        self, pre: list[int], ranks: list[int], items: list[int], lo: int, hi: int, key: int, b: int
    ) -> Generator[None, None, int]:
        """After placing ``b``: split at the cuts it emptied and solve the parts independently, else go on."""
        self.solution[b] = self.off[b]
        f = self.f
        cuts = self.cuts
        points = [lo]
        for sec in range(f.lo[b], f.hi[b] - 1):
            cuts[sec] -= 1
            if cuts[sec] == 0:
                points.append(sec + 1)
        status = _FOUND
        if len(points) == 1:
            status = yield from self._search(pre, ranks, items, lo, hi, key)
        else:
            points.append(hi)
            self.work += len(items) * len(points)
            for a, z in itertools.pairwise(points):
                part = [i for i in items if f.lo[i] < z and a < f.hi[i]]
                if part:
                    status = yield from self._subsolve(part, a, z)
                    if status != _FOUND:
                        break
        for sec in range(f.lo[b], f.hi[b] - 1):
            cuts[sec] += 1
        return status


@dataclass
class _ExactResult:
    """Outcome of the exact search on one piece."""

    offsets: list[int] | None  # per item of the piece, or None if no packing was found
    proven_infeasible: bool
    nodes: int
    work: int


def _exact(
    frame: _Frame, capacity: int, budget: int, quantum: int = 500_000, deadline: float | None = None
) -> _ExactResult:
    """Run the heuristics' searches side by side, ``quantum`` work units each in turn, within ``budget`` (and
    until the wall-clock ``deadline``, checked between quanta)."""
    if deadline is not None:
        quantum = min(quantum, 20_000)  # look at the clock every few milliseconds
    searches = [_Search(frame, capacity, h) for h in EXACT_HEURISTICS]
    runs = [s.solve() for s in searches]
    spent = 0
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 8 * len(frame.size) + 1000))
    try:
        while spent < budget and (deadline is None or time.perf_counter() < deadline):
            for search, run in zip(searches, runs, strict=True):
                before = search.work
                search.pause_at = before + min(quantum, budget - spent)
                try:
                    next(run)
                except StopIteration as stop:
                    spent += search.work - before
                    nodes = sum(x.nodes for x in searches)
                    if stop.value == _FOUND:
                        return _ExactResult(list(search.solution), False, nodes, spent)
                    return _ExactResult(None, True, nodes, spent)
                spent += search.work - before
                if spent >= budget:
                    break
    finally:
        sys.setrecursionlimit(old_limit)
        for run in runs:
            run.close()
    return _ExactResult(None, False, sum(x.nodes for x in searches), spent)


# ----------------------------------------------------------------------------------------------------------
# The planner
# ----------------------------------------------------------------------------------------------------------


class PlannerClock:
    """Seconds spent inside :func:`plan` while a :func:`planner_clock` block runs (for stage reports)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0


_CLOCKS: list[PlannerClock] = []
_WALL_CLOCK: list[bool] = []


@contextmanager
def wall_clock_budget() -> Iterator[None]:
    """While the block runs, :func:`plan` also ends its optional work once ``budget_s`` seconds of wall time
    have passed since it was called (the command line's ``--budget``: never longer than asked, even on a
    loaded machine, at the cost of plans that may then depend on the machine's load)."""
    _WALL_CLOCK.append(True)
    try:
        yield
    finally:
        _WALL_CLOCK.pop()


@contextmanager
def planner_clock() -> Iterator[PlannerClock]:
    """Measure the wall time :func:`plan` spends while the block runs (nested blocks each get it all)."""
    clock = PlannerClock()
    _CLOCKS.append(clock)
    try:
        yield clock
    finally:
        _CLOCKS.remove(clock)


#: :func:`plan` pauses the cyclic garbage collector (restoring it on the way out) for inputs of at least this many
#: buffers; a smaller one runs its quick try with it on (too few objects for a collection to cost more than the
#: pause) and pauses it after that, for the search.
GC_PAUSE_BUFFERS = 1000


def plan(
    buffers: Sequence[Buffer],
    *,
    budget_s: float | None = None,
    exact_budget_s: float | None = None,
    exact_work: int | None = None,
    exact_max_buffers: int = 3000,
) -> Placement:
    """Assign offsets aiming at the lower bound: decomposition, greedy portfolio, peak repair, exact search.

    ``budget_s`` (default :data:`DEFAULT_BUDGET_S`) bounds the planning, in seconds turned into work units
    with :data:`WORK_PER_SECOND` (so results never depend on the machine): greedy members, peak repair, exact
    search and the safety net are all charged, and only the first greedy member of each piece runs when the
    budget cannot pay for it. ``exact_budget_s`` (or ``exact_work``, in units) caps the exact search's share
    (default: no cap beyond the budget). Components with more than ``exact_max_buffers`` buffers skip the
    exact search.
    """
    for name, value in (("budget_s", budget_s), ("exact_budget_s", exact_budget_s)):
        if value is not None and not math.isfinite(value):
            raise ValueError(f"plan: {name} must be a finite number of seconds, got {value!r}")
    t0 = time.perf_counter()
    collecting = gc.isenabled()
    try:
        if len(buffers) >= GC_PAUSE_BUFFERS:
            gc.disable()  # millions of small lists and tuples, none of them cyclic garbage
        return _plan(buffers, budget_s, exact_budget_s, exact_work, exact_max_buffers)
    finally:
        if collecting:
            gc.enable()
        for clock in _CLOCKS:
            clock.seconds += time.perf_counter() - t0
            clock.calls += 1


def _plan(
    buffers: Sequence[Buffer],
    budget_s: float | None,
    exact_budget_s: float | None,
    exact_work: int | None,
    exact_max_buffers: int,
) -> Placement:
    """:func:`plan` itself."""
    seconds = DEFAULT_BUDGET_S if budget_s is None else max(budget_s, 0.0)
    total = int(seconds * WORK_PER_SECOND)
    # a tenth of a wall-clock budget is left for the steps after the deadline (assembling the result)
    allowance = _Budget(total, time.perf_counter() + 0.9 * seconds if _WALL_CLOCK else None)
    arr = _checked_arrays(buffers)
    n = len(buffers)
    allowance.spend(INPUT_UNITS_PER_BUFFER * n)
    lb = _lower_bound(arr)
    off = [-1] * n
    positive = list(range(n))
    if 0 in arr.size:
        for i in range(n):
            if arr.size[i] == 0:
                off[i] = arr.fixed[i] if arr.fixed[i] >= 0 else 0
        positive = [i for i in positive if arr.size[i] > 0]
    quick, shared = _quick(arr, positive, off, lb, allowance)
    if quick is not None:
        return quick
    gc.disable()  # plan() restores it
    pieces = _decompose(arr, positive, off)
    members = [_portfolio(arr, piece, lb, allowance, shared) for piece in pieces]
    results = [m.plan() for m in members]
    exact_cap = total if exact_budget_s is None else int(exact_budget_s * WORK_PER_SECOND)
    exact_cap = exact_cap if exact_work is None else exact_work
    settled = _RepairMemo()
    _repair_highest(arr, pieces, results, lb, allowance, settled, REPAIR_SHARE)
    exact = _ExactPhase(arr, pieces, results, allowance, exact_max_buffers)
    exact.run(lb, max(0, min(exact_cap, allowance.left)))
    allowance.spend(exact.work)
    _repair_highest(arr, pieces, results, lb, allowance, settled)
    for piece, (_, offsets, _) in zip(pieces, results, strict=True):
        for i, o in zip(piece.items, offsets, strict=True):
            off[i] = o
    strategies = tuple(r[2] for r in results)
    strategy = _strategy(strategies, bool(positive))
    ran = _baseline_ran(arr, positive, pieces, members)
    arena, off, strategy = _safety_net(arr, positive, off, (lb, ran), strategy, allowance)
    return Placement(
        offsets=_offsets_dict(arr, off),
        arena=arena,
        lower_bound=lb,
        strategy=strategy,
        components=len(pieces),
        exact_components=sum(1 for r in strategies if r.startswith("exact")),
        exact_nodes=exact.nodes,
        exact_work=exact.work,
        component_strategies=strategies,
        work=allowance.spent,
        budget=total,
    )


def _baseline_ran(arr: _Arrays, positive: list[int], pieces: list[_Piece], members: list[_Members]) -> bool:
    """Whether the portfolio's first member was the baseline itself (:func:`_baseline`: size order, first fit,
    over every buffer from offset 0): one piece of every positive buffer, nothing fixed, nothing stacked below."""
    return (
        len(pieces) == 1
        and not arr.has_fixed
        and pieces[0].base == 0
        and len(pieces[0].items) == len(positive)
        and members[0].first == "greedy-size-first-fit"
    )


def _strategy(strategies: tuple[str, ...], positive: bool) -> str:
    """The plan's strategy name from its pieces' ones."""
    if not strategies:
        return "stack" if positive else "empty"
    strategy = "portfolio+exact" if any(r.startswith("exact") for r in strategies) else "portfolio"
    return strategy + "+repair" if any(r.endswith("+repair") for r in strategies) else strategy


def _safety_net(
    arr: _Arrays, positive: list[int], off: list[int], bound: tuple[int, bool], strategy: str, allowance: _Budget
) -> tuple[int, list[int], str]:
    """(arena, offsets, strategy): the plan's, or the plain baseline's if that is lower.

    Greedy results per piece need not compose better than the plain baseline on the whole input, so never
    return worse than it (optional work: skipped when the budget cannot pay for it, and for huge inputs; a
    baseline reaching the arena found is left unfinished, as it cannot be chosen). ``bound``: (the lower bound,
    whether the baseline already ran as the portfolio's first member: see :func:`_baseline_ran`).
    """
    n = len(off)
    lb, ran = bound
    arena = max(map(add, off, arr.size), default=0)
    wanted = arena > lb and not ran
    charge = 2 * _pairs(arr, positive) + n if wanted else 0
    baseline = _baseline(arr, arena) if wanted and allowance.allows(charge) else None
    if baseline is None:
        return arena, off, strategy
    allowance.spend(charge)
    baseline_arena = max(map(add, baseline, arr.size), default=0)
    if baseline_arena < arena:
        return baseline_arena, baseline, "greedy-size-first-fit"
    return arena, off, strategy


class _ExactPhase:
    """The exact search over a plan's pieces: first at the lower bound, then bisecting the arena."""

    def __init__(
        self,
        arr: _Arrays,
        pieces: list[_Piece],
        results: list[tuple[int, list[int], str]],
        clock: _Budget,
        max_buffers: int,
    ) -> None:
        self.arr, self.pieces, self.results, self.clock, self.max_buffers = arr, pieces, results, clock, max_buffers
        self.frames: dict[int, _Frame] = {}
        self.nodes = 0
        self.work = 0

    def run(self, lb: int, budget: int) -> None:
        """Phase 1: the lower bound itself (most of the budget). Phase 2, if that fails: bisect the arena
        between the lower bound and the best height found, keeping every packing found on the way."""
        if self.improve(lb, budget * 3 // 4, "exact"):
            return
        low = lb
        while budget > self.work and not self.clock.expired():
            high = max((r[0] for r in self.results), default=0)
            if high - low <= max(1, high // 1000):
                break
            # above the lower end (which failed): 3/8 of a gap of 2 bytes is 0, and the same step would repeat
            mid = max(low + 1, low + (high - low) * BISECT_NUM // BISECT_DEN)
            if not self.improve(mid, (budget - self.work) // 3 + 1, "exact-refined"):
                low = mid

    def improve(self, capacity: int, allowance: int, label: str) -> bool:
        """Exact-search every piece above ``capacity`` (highest first) within ``allowance``; all succeeded?"""
        results, arr = self.results, self.arr
        spent = 0
        for k in sorted(range(len(self.pieces)), key=lambda k: (-results[k][0], k)):
            if results[k][0] <= capacity:
                break
            piece = self.pieces[k]
            if piece.has_fixed or len(piece.items) > self.max_buffers or spent >= allowance or self.clock.expired():
                return False
            if k not in self.frames:
                self.frames[k] = _Frame(arr, piece)
            outcome = _exact(self.frames[k], capacity, allowance - spent, deadline=self.clock.deadline)
            self.nodes += outcome.nodes
            self.work += outcome.work
            spent += outcome.work
            if outcome.offsets is None:
                return False
            height = max(o + arr.size[i] for o, i in zip(outcome.offsets, piece.items, strict=True))
            results[k] = (height, outcome.offsets, label)
        return True


#: The quick first try runs on inputs with at most this many overlapping pairs a buffer (its cost is the pairs),
#: or at most :data:`QUICK_PAIRS` pairs in all.
QUICK_PAIRS_PER_BUFFER = 8

#: See :data:`QUICK_PAIRS_PER_BUFFER`: a small dense input (a few hundred long-lived buffers) gets the quick try too.
QUICK_PAIRS = 400_000

#: The quick try's orders (first fit, over one set of neighbour lists), until one reaches the lower bound: between
#: them they pack every real trace of ``benchmarks/memplan_peer.py`` at the lower bound. Size first: where it
#: reaches the bound (most compile traces) the plan is the one it always was.
_QUICK_RUNS = ("size", "area", "conflict-size")


def _quick(
    arr: _Arrays, positive: list[int], off: list[int], lb: int, budget: _Budget
) -> tuple[Placement | None, _Orders | None]:
    """The size, area and conflict x size orders, first fit, on the whole input: (the first plan that reaches the
    lower bound, else None; the lists and orders it made, for the portfolio, or None).

    Most real traces (a compile's, a small model's) are packed at the lower bound by one of these greedies, so
    they skip the decomposition and the portfolio. Sparse or small inputs without fixed offsets only; every order
    is charged to ``budget`` (the first needs it to pay for two).
    """
    n = len(positive)
    if not n or arr.has_fixed:
        return None, None
    pairs = _pairs(arr, positive)
    cost = 2 * pairs + n
    if (pairs > QUICK_PAIRS_PER_BUFFER * n and pairs > QUICK_PAIRS) or not budget.allows(2 * cost):
        return None, None
    fused = len(arr.size) <= QUICK_NATIVE_BUFFERS and arr.native and _NATIVE is not None
    if fused:
        quick = _quick_native(arr, positive, off, (lb, cost), budget, _dense(pairs, n, QUICK_SCAN_RATIO))
        if quick is not None:
            return quick, None
    adj = _neighbours(arr, positive, pairs=pairs)
    orders = _Orders(arr, positive, _quick_keys(arr, adj.degree), adj)
    if fused:  # its orders missed the bound (or the budget stopped them): the lists for the portfolio
        return None, orders
    native = array("q", off) if type(adj) is _Dense or isinstance(adj, _CSR) else None
    for k, name in enumerate(_QUICK_RUNS):
        if not _quick_charge(budget, cost, k):
            return None, orders
        order = orders[name]
        trial: Sequence[int]
        if native is not None:  # the offsets stay an int64 array (what _place does, without its list round trip)
            trial = placed = array("q", native)
            height = _place_native(order, arr, adj, placed, 0, False, lb + 1)
        else:
            trial = listed = list(off)
            height = _place(order, arr, adj, listed, 0, False, lb + 1)
        if height <= lb:
            return _quick_plan(dict(zip(arr.ids, trial, strict=True)), lb, name, budget), None
    return None, orders


def _quick_charge(budget: _Budget, cost: int, k: int) -> bool:
    """Charge the quick try's order ``k`` (``cost``) before it runs: False, charging nothing, when the budget
    refuses it (the first order was allowed by the caller)."""
    if k and not budget.allows(cost):
        return False
    budget.spend(cost)
    return True


def _quick_plan(offsets: dict[str, int], lb: int, name: str, budget: _Budget) -> Placement:
    """The quick try's plan: the ``offsets`` (at the lower bound) found by order ``name``."""
    return _placement(
        offsets=offsets,
        arena=lb,
        lower_bound=lb,
        strategy="portfolio",
        components=1,
        component_strategies=(f"greedy-{name}-first-fit",),
        work=budget.spent,
        budget=budget.spent + budget.left,
    )


#: Inputs of at most this many buffers run the quick try in one native call (:func:`_quick_native`).
QUICK_NATIVE_BUFFERS = 4096

#: :func:`_quick_native` places without neighbour lists (see :class:`_Dense`) above this :func:`_dense` ratio: it
#: gathers lists in the same call, cheaper than :func:`_neighbours` does (the scan is faster on the corpus models
#: up to a tenth of the pairs, the lists on the ``minimalloc`` traces from about a fifteenth).
QUICK_SCAN_RATIO = 16


def _quick_native(
    arr: _Arrays, positive: list[int], off: list[int], bounds: tuple[int, int], budget: _Budget, dense: bool
) -> Placement | None:
    """:func:`_quick`'s orders by the native loops in one call (the same offsets: a test holds them together),
    charged as there, ``cost`` each (``bounds``: lower bound, cost): every order up to the winner (or all of
    them), as far as the budget allows; ``dense``: place without neighbour lists (the same offsets)."""
    lb, cost = bounds
    found = _NATIVE.quick(
        array("q", positive), arr.first64, arr.last64, arr.size64, arr.align64, array("q", off), lb, dense
    )
    for k in range(len(_QUICK_RUNS) if found is None else found[0] + 1):
        if not _quick_charge(budget, cost, k):
            return None
    return None if found is None else _quick_plan(_offsets_dict(arr, found[1]), lb, _QUICK_RUNS[found[0]], budget)


class _RepairMemo(set[tuple[int, int]]):
    """What the peak repair of one plan remembers between its calls: the (piece, height) pairs it gave up on
    without the budget ever saying no (see :func:`_repair_highest`), and in ``orders`` each repaired piece's
    :class:`_StartOrder` with the offsets it holds (the next repair of the piece starts from it while the piece's
    offsets are still those: it is built once a plan, not once a call), and in ``needs`` what the rounds a repair
    stopped short of (see :func:`_repair`) would cost at least, by (piece, height)."""

    def __init__(self) -> None:
        super().__init__()
        self.orders: dict[int, tuple[list[int], _StartOrder]] = {}
        self.needs: dict[tuple[int, int], int] = {}


def _repair_highest(
    arr: _Arrays,
    pieces: list[_Piece],
    results: list[tuple[int, list[int], str]],
    lb: int,
    budget: _Budget,
    settled: _RepairMemo,
    share: float = 1.0,
) -> None:
    """Repair the highest piece while that lowers it (then the next highest, ...), within ``share`` of the
    budget left. ``settled`` holds the (piece, height) pairs a repair gave up on without the budget ever saying
    no (it would give up again: the repair is deterministic); they are skipped, and the new ones added."""
    mine = _Budget(int(budget.left * share), budget.deadline)
    while results and mine.left > 0:
        k = max(range(len(results)), key=lambda k: (results[k][0], -k))
        if results[k][0] <= lb or (k, results[k][0]) in settled:
            break
        mine.refused = False
        better = _repair(arr, pieces[k], results[k], lb, mine, settled)
        if better[0] >= results[k][0]:
            if not mine.refused:
                settled.add((k, results[k][0]))
            break
        results[k] = better
    budget.spend(mine.spent)


# ----------------------------------------------------------------------------------------------------------
# Checking
# ----------------------------------------------------------------------------------------------------------


def check_placement(buffers: Sequence[Buffer], offsets: dict[str, int]) -> list[str]:
    """List every problem of ``offsets`` (missing, negative, misaligned, fixed moved, overlapping bytes)."""
    problems: list[str] = []
    placed: list[tuple[int, int, int, int, str]] = []  # (first, last, offset, end, id)
    for b in buffers:
        if b.id not in offsets:
            problems.append(f"buffer {b.id!r}: no offset")
            continue
        o = offsets[b.id]
        if o < 0:
            problems.append(f"buffer {b.id!r}: negative offset {o}")
        if o % b.alignment:
            problems.append(f"buffer {b.id!r}: offset {o} is not a multiple of alignment {b.alignment}")
        if b.offset is not None and o != b.offset:
            problems.append(f"buffer {b.id!r}: fixed offset {b.offset} moved to {o}")
        if b.size > 0:
            placed.append((b.first, b.last, o, o + b.size, b.id))
    placed.sort()
    expiry: list[tuple[int, int, int, str]] = []  # heap of (last, offset, end, id)
    active: list[tuple[int, int, str]] = []  # sorted by offset; pairwise disjoint
    for first, last, o, end, ident in placed:
        while expiry and expiry[0][0] < first:
            _, eo, ee, eid = heapq.heappop(expiry)
            del active[bisect_left(active, (eo, ee, eid))]
        k = bisect_left(active, (o, end, ident))
        clash = False
        j = k - 1
        while j >= 0 and active[j][1] > o:
            problems.append(
                f"buffers {active[j][2]!r} and {ident!r} overlap: bytes [{max(o, active[j][0])}, "
                f"{min(end, active[j][1])}) at step {first}"
            )
            clash = True
            j -= 1
        j = k
        while j < len(active) and active[j][0] < end:
            problems.append(
                f"buffers {active[j][2]!r} and {ident!r} overlap: bytes [{max(o, active[j][0])}, "
                f"{min(end, active[j][1])}) at step {first}"
            )
            clash = True
            j += 1
        if not clash:
            active.insert(k, (o, end, ident))
            heapq.heappush(expiry, (last, o, end, ident))
    return problems
