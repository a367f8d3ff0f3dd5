"""Offset planner core: assign arena offsets to buffers with known lifetimes (dynamic storage allocation).

Memory assignment needs, for every tensor buffer, an offset in one arena so that buffers that are live at the
same step never share a byte, with the arena as small as possible. This module is the graph-free algorithm
behind it: buffers in, offsets out. A later stage feeds it with a graph's tensors.

How :func:`plan` works (ideas from TFLite's greedy-by-size planner, XLA's heap simulator, MindSpore SOMAS,
Google's MiniMalloc and TelaMalloc):

1. The timeline is split into independent components: steps where nothing is live separate components, and
   buffers live over a whole component are stacked at its bottom (lossless: such a buffer conflicts with every
   other buffer of the component), after which the rest may split again at the steps where only the stacked
   buffers were live.
2. Every leaf component is packed by a portfolio of greedy orders (size, area, lifetime, start, section total,
   first-fit and best-fit), each placing a buffer at the lowest offset that fits among the overlapping buffers
   already placed (sort + sweep over those neighbours). The best result is kept.
3. Where a component's best greedy height is above the lower bound, a MiniMalloc-style exact search tries to
   reach the lower bound: buffers are placed in canonical order (non-decreasing offset, each at its lowest
   legal offset), pruned by section inference (floor + remaining size in every cross-section), a dominance
   rule (no placement above a gap some unplaced buffer fits into) and dynamic decomposition at cuts that
   become empty. The search is bounded by a node count, so results never depend on the machine's speed.

Fixed-offset buffers are honoured (placed first), offsets respect each buffer's alignment, and the same input
always gives the same output.
"""

from __future__ import annotations

import csv
import heapq
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "NODES_PER_SECOND",
    "Buffer",
    "Placement",
    "check_placement",
    "greedy_best_fit",
    "lower_bound",
    "plan",
    "read_csv",
]

#: Nominal speed used to turn ``exact_budget_s`` into a node budget (nodes of the exact search per second),
#: calibrated on a 2-core reference machine. Real time varies with the machine; results never do.
NODES_PER_SECOND = 20_000


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
    component_strategies: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ratio(self) -> float:
        """Arena divided by the lower bound (1.0 for an empty problem)."""
        return self.arena / self.lower_bound if self.lower_bound else 1.0


# ----------------------------------------------------------------------------------------------------------
# Input: CSV reader, validation, lower bound
# ----------------------------------------------------------------------------------------------------------

_HEADER = ("id", "lower", "upper", "size")


def read_csv(path: str | Path) -> list[Buffer]:
    """Read ``id,lower,upper,size`` rows (half-open [lower, upper)) into buffers live over [lower, upper-1]."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
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
                values.append(int(text_value))
            except ValueError:
                raise ValueError(
                    f"{name}: line {lineno}, column '{column}': expected an integer, got {text_value!r}"
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


class _Arrays:
    """Buffers as parallel lists indexed 0..n-1 (the form all algorithms below work on)."""

    def __init__(self, buffers: Sequence[Buffer]) -> None:
        self.ids = [b.id for b in buffers]
        self.first = [b.first for b in buffers]
        self.last = [b.last for b in buffers]
        self.size = [b.size for b in buffers]
        self.align = [b.alignment for b in buffers]
        self.fixed = [-1 if b.offset is None else b.offset for b in buffers]


def _overlaps(items: Sequence[int], first: Sequence[int], last: Sequence[int]) -> dict[int, list[int]]:
    """Adjacency lists of time-overlapping pairs among ``items`` (sweep; cost n log n + pairs)."""
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
    return adj


def _place(
    order: Sequence[int],
    size: Sequence[int],
    align: Sequence[int],
    adj: dict[int, list[int]],
    off: list[int],
    base: int,
    best_fit: bool,
) -> int:
    """Place ``order`` one by one among already placed neighbours (off >= 0); return the height reached.

    First fit puts each buffer at the lowest aligned offset >= ``base`` that is free over its lifetime; best
    fit puts it into the smallest free gap that holds it (the top, if no gap does).
    """
    height = base
    for b in order:
        s = size[b]
        a = align[b]
        obstacles = [(off[o], off[o] + size[o]) for o in adj[b] if off[o] >= 0]
        obstacles.sort()
        cand = base if a == 1 else _align_up(base, a)
        if not best_fit:
            for lo, hi in obstacles:
                if lo >= cand + s:
                    break
                if hi > cand:
                    cand = hi if a == 1 else _align_up(hi, a)
        else:
            best = -1
            best_gap = 0
            for lo, hi in obstacles:
                if lo >= cand + s:
                    gap = lo - cand
                    if best < 0 or gap < best_gap:
                        best, best_gap = cand, gap
                if hi > cand:
                    cand = hi if a == 1 else _align_up(hi, a)
            if best >= 0:
                cand = best
        off[b] = cand
        if cand + s > height:
            height = cand + s
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
    # sparse table for range maxima over the compressed steps
    table = [profile]
    width = 1
    while 2 * width <= len(profile):
        prev = table[-1]
        table.append([max(prev[k], prev[k + width]) for k in range(len(prev) - width)])
        width *= 2
    out: list[int] = []
    for i in items:
        lo = index[first[i]]
        hi = index[last[i] + 1]  # exclusive
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


def greedy_best_fit(buffers: Sequence[Buffer]) -> Placement:
    """The plain baseline: size-descending (ties: earlier first step), each at the lowest offset that fits."""
    _validate(buffers)
    arr = _Arrays(buffers)
    n = len(buffers)
    off = list(arr.fixed)
    movable = [i for i in range(n) if off[i] < 0 and arr.size[i] > 0]
    for i in range(n):
        if off[i] < 0 and arr.size[i] == 0:
            off[i] = 0
    adj = _overlaps([i for i in range(n) if arr.size[i] > 0], arr.first, arr.last)
    _place(_baseline_order(arr, movable), arr.size, arr.align, adj, off, 0, best_fit=False)
    arena = max((off[i] + arr.size[i] for i in range(n)), default=0)
    return Placement(
        offsets={arr.ids[i]: off[i] for i in range(n)},
        arena=arena,
        lower_bound=lower_bound(buffers),
        strategy="greedy-size-first-fit",
        components=1 if movable else 0,
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


def _decompose(arr: _Arrays, items: list[int], off: list[int]) -> list[_Piece]:
    """Split into independent leaf pieces, stacking whole-component buffers at each piece's bottom."""
    pieces: list[_Piece] = []
    stack: list[tuple[list[int], int]] = [(g, 0) for g in _time_components(items, arr.first, arr.last)]
    while stack:
        group, base = stack.pop()
        if any(arr.fixed[i] >= 0 for i in group):
            pieces.append(_Piece(group, base, True))
            continue
        lo = min(arr.first[i] for i in group)
        hi = max(arr.last[i] for i in group)
        spanning = [i for i in group if arr.first[i] <= lo and arr.last[i] >= hi]
        if len(spanning) == len(group) or not spanning:
            if len(spanning) == len(group):
                spanning.sort(key=lambda i: (-arr.align[i], -arr.size[i], i))
                for i in spanning:
                    off[i] = _align_up(base, arr.align[i])
                    base = off[i] + arr.size[i]
                continue
            pieces.append(_Piece(sorted(group), base, False))
            continue
        spanning.sort(key=lambda i: (-arr.align[i], -arr.size[i], i))
        for i in spanning:
            off[i] = _align_up(base, arr.align[i])
            base = off[i] + arr.size[i]
        taken = set(spanning)
        rest = [i for i in group if i not in taken]
        subgroups = _time_components(rest, arr.first, arr.last)
        stack.extend((g, base) for g in reversed(subgroups))
    pieces.sort(key=lambda p: p.items[0])
    return pieces


# ----------------------------------------------------------------------------------------------------------
# Greedy portfolio
# ----------------------------------------------------------------------------------------------------------

_Key = Callable[[int], tuple[int, ...]]


def _portfolio(arr: _Arrays, piece: _Piece, adj: dict[int, list[int]]) -> tuple[int, list[int], str]:
    """Run every greedy order on a piece; return (height, offsets of its items, strategy name) of the best."""
    size, first, last = arr.size, arr.first, arr.last
    fixed = [i for i in piece.items if arr.fixed[i] >= 0]
    movable = [i for i in piece.items if arr.fixed[i] < 0]
    total = dict(zip(piece.items, _live_max(piece.items, first, last, size), strict=True))

    def length(i: int) -> int:
        return last[i] - first[i] + 1

    orders: list[tuple[str, _Key]] = [
        ("size", lambda i: (-size[i], first[i], i)),
        ("area", lambda i: (-size[i] * length(i), -size[i], first[i], i)),
        ("lifetime", lambda i: (-length(i), -size[i], first[i], i)),
        ("start", lambda i: (first[i], -size[i], i)),
        ("total", lambda i: (-total[i], -size[i], first[i], i)),
        ("total-lifetime", lambda i: (-total[i], -length(i), -size[i], i)),
        ("end", lambda i: (-last[i], -size[i], i)),
    ]
    off = [-1] * len(size)
    best: tuple[int, list[int], str] | None = None
    for name, key in orders:
        order = sorted(movable, key=key)
        for best_fit in (False, True):
            for i in piece.items:
                off[i] = -1
            for i in fixed:
                off[i] = arr.fixed[i]
            height = _place(order, size, arr.align, adj, off, piece.base, best_fit)
            height = max([height, *(off[i] + size[i] for i in fixed)])
            if best is None or height < best[0]:
                label = f"greedy-{name}-{'best' if best_fit else 'first'}-fit"
                best = (height, [off[i] for i in piece.items], label)
    assert best is not None
    return best


# ----------------------------------------------------------------------------------------------------------
# Exact search (MiniMalloc-style branch and bound)
# ----------------------------------------------------------------------------------------------------------

_FOUND, _NOT_FOUND, _ABORTED = 0, 1, 2


class _Exact:
    """Decide whether a fixed-free piece packs within ``capacity``; keep the offsets if it does."""

    def __init__(self, arr: _Arrays, piece: _Piece, capacity: int) -> None:
        self.items = piece.items
        self.capacity = capacity
        n = len(arr.size)
        self.size = arr.size
        self.align = arr.align
        self.width = [arr.last[i] - arr.first[i] + 1 for i in range(n)]
        self.off = [-1] * n
        self.solution = [-1] * n
        self.mo = [-1] * n  # lowest legal offset of each unplaced item
        for i in piece.items:
            self.mo[i] = _align_up(piece.base, arr.align[i])
        adj = _overlaps(piece.items, arr.first, arr.last)
        self.adj: list[list[int]] = [[] for _ in range(n)]
        for i, lst in adj.items():
            self.adj[i] = lst
        self._sections(arr, piece.items)
        self.floor = [piece.base] * len(self.members)
        self.wit = [m[0] for m in self.members]  # an unplaced member of lowest ``mo`` (all equal at start)
        self.watch: list[set[int]] = [set() for _ in range(n)]  # sections each item is the witness of
        for k, w in enumerate(self.wit):
            self.watch[w].add(k)
        self.nodes = 0
        self.limit = 0

    def _sections(self, arr: _Arrays, items: Sequence[int]) -> None:
        """Maximal cross-sections (cliques) of the interval graph and each item's section range."""
        events: list[tuple[int, int, int]] = []
        for i in items:
            events.append((arr.first[i], 1, i))
            events.append((arr.last[i] + 1, 0, i))
        events.sort()
        n = len(arr.size)
        self.lo = [0] * n
        self.hi = [0] * n
        members: list[list[int]] = []
        live: dict[int, None] = {}
        grew = False
        for _, kind, i in events:
            if kind == 1:
                live[i] = None
                self.lo[i] = len(members)
                grew = True
            else:
                if grew:
                    members.append(list(live))
                    grew = False
                del live[i]
                self.hi[i] = len(members)
        self.members = members
        self.total = [sum(arr.size[i] for i in m) for m in members]
        self.cuts = [0] * max(len(members) - 1, 0)
        for i in items:
            for s in range(self.lo[i], self.hi[i] - 1):
                self.cuts[s] += 1

    def _preorder(self, items: Sequence[int], heuristic: str) -> list[tuple[int, int]]:
        """(rank, item) pairs in the static order of a MiniMalloc heuristic ('WAT', 'TAW', 'TWA')."""
        total = self.total
        size, width = self.size, self.width
        keys: dict[int, tuple[int, ...]] = {}
        for i in items:
            t = max(total[self.lo[i] : self.hi[i]])
            w = width[i]
            a = w * size[i]
            by = {"W": -w, "A": -a, "T": -t}
            keys[i] = (by[heuristic[0]], by[heuristic[1]], by[heuristic[2]], i)
        ordered = sorted(items, key=keys.__getitem__)
        return list(enumerate(ordered))

    def run(self, heuristic: str, limit: int) -> int:
        """Search with one heuristic until found, exhausted or ``limit`` nodes; return the status."""
        self.limit = self.nodes + limit
        lo = 0
        hi = len(self.members)
        if any(f + t > self.capacity for f, t in zip(self.floor, self.total, strict=True)):
            return _NOT_FOUND
        self.heuristic = heuristic
        return self._subsolve(list(self.items), lo, hi)

    def _subsolve(self, items: list[int], lo: int, hi: int) -> int:
        """Solve one independent partition (items live only in sections lo..hi-1)."""
        return self._search(self._preorder(items, self.heuristic), lo, hi, 0, 0)

    def _search(self, order: list[tuple[int, int]], lo: int, hi: int, last_off: int, last_rank: int) -> int:
        """Depth-first search over canonical placements of the unplaced items of ``order``."""
        if self.nodes >= self.limit:
            return _ABORTED
        self.nodes += 1
        off = self.off
        mo = self.mo
        size = self.size
        cand = [(mo[i], r, i) for r, i in order if off[i] < 0]
        if not cand:
            for _, i in order:
                self.solution[i] = off[i]
            return _FOUND
        cand.sort()
        min_height = min(o + size[i] for o, _, i in cand)
        rest = [(r, i) for _, r, i in cand]
        capacity = self.capacity
        total = self.total
        floor = self.floor
        align = self.align
        members = self.members
        wit = self.wit
        watch = self.watch
        adj = self.adj
        sec_lo, sec_hi = self.lo, self.hi
        for o, r, b in cand:
            if o < last_off or (o == last_off and r < last_rank):
                continue
            if o >= min_height:
                break
            s = size[b]
            blo, bhi = sec_lo[b], sec_hi[b]
            # cheap inference first: every section stacks its remaining items above max(o, its floor)
            if o + max(total[blo:bhi]) > capacity:
                continue
            rest_max = max(total[lo:blo], default=0)
            if bhi < hi:
                rest_max = max(rest_max, max(total[bhi:hi]))
            if o + rest_max > capacity:
                continue
            h = o + s
            off[b] = o
            # raise the lowest legal offset of unplaced neighbours
            changed: list[tuple[int, int]] = []
            for x in adj[b]:
                if off[x] < 0 and mo[x] < h:
                    changed.append((x, mo[x]))
                    a = align[x]
                    mo[x] = h if a == 1 else _align_up(h, a)
            # sections of b: floor becomes h, remaining total drops
            old_floor = floor[blo:bhi]
            floor[blo:bhi] = [h] * (bhi - blo)
            for k in range(blo, bhi):
                total[k] -= s
            # unallocated floor: a section's floor is at least the lowest offset any unplaced item there can
            # take. Each section watches one unplaced member of lowest ``mo``; offsets only grow while
            # descending, so only sections whose watched member moved (or was placed) can change.
            ok = True
            trail: list[tuple[int, int, int, int]] = []
            for x in [b] + [x for x, _ in changed]:
                watched = watch[x]
                if not watched:
                    continue
                for k in list(watched):
                    best = -1
                    m = 0
                    for y in members[k]:
                        if off[y] < 0 and (best < 0 or mo[y] < m):
                            best, m = y, mo[y]
                    trail.append((k, floor[k], x, best))
                    watched.discard(k)
                    wit[k] = best
                    if best >= 0:
                        watch[best].add(k)
                        if m > floor[k]:
                            floor[k] = m
                            if m + total[k] > capacity:
                                ok = False
                                break
                if not ok:
                    break
            status = _NOT_FOUND
            if ok:
                status = self._decompose(rest, lo, hi, o, r, b)
            for k, v, w, nw in reversed(trail):
                floor[k] = v
                wit[k] = w
                if nw >= 0:
                    watch[nw].discard(k)
                watch[w].add(k)
            for k in range(blo, bhi):
                total[k] += s
            floor[blo:bhi] = old_floor
            for x, v in reversed(changed):
                mo[x] = v
            off[b] = -1
            if status != _NOT_FOUND:
                return status
        return _NOT_FOUND

    def _decompose(self, order: list[tuple[int, int]], lo: int, hi: int, o: int, r: int, b: int) -> int:
        """After placing ``b``: split at cuts it emptied and solve the parts independently, else go deeper."""
        self.solution[b] = o
        cuts = self.cuts
        points = [lo]
        for k in range(self.lo[b], self.hi[b] - 1):
            cuts[k] -= 1
            if cuts[k] == 0:
                points.append(k + 1)
        status = _FOUND
        if len(points) == 1:
            status = self._search(order, lo, hi, o, r)
        else:
            points.append(hi)
            off = self.off
            unplaced = [i for _, i in order if off[i] < 0]
            for a, z in zip(points, points[1:], strict=False):
                part = [i for i in unplaced if self.lo[i] < z and a < self.hi[i]]
                if not part:
                    continue
                status = self._subsolve(part, a, z)
                if status != _FOUND:
                    break
        for k in range(self.lo[b], self.hi[b] - 1):
            cuts[k] += 1
        return status


def _exact(arr: _Arrays, piece: _Piece, capacity: int, budget: int) -> tuple[list[int] | None, int]:
    """Search a packing of ``piece`` within ``capacity`` using at most ``budget`` nodes; (offsets, nodes)."""
    search = _Exact(arr, piece, capacity)
    heuristics = ("WAT", "TAW", "TWA")
    limit = len(piece.items)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 4 * len(piece.items) + 1000))
    try:
        while search.nodes < budget:
            limit *= 2
            for h in heuristics:
                step = min(limit, budget - search.nodes)
                if step <= 0:
                    break
                status = search.run(h, step)
                if status == _FOUND:
                    return [search.solution[i] for i in piece.items], search.nodes
                if status == _NOT_FOUND:
                    return None, search.nodes
    finally:
        sys.setrecursionlimit(old_limit)
    return None, search.nodes


# ----------------------------------------------------------------------------------------------------------
# The planner
# ----------------------------------------------------------------------------------------------------------


def plan(
    buffers: Sequence[Buffer],
    *,
    exact_budget_s: float = 5.0,
    exact_nodes: int | None = None,
    exact_max_buffers: int = 2000,
) -> Placement:
    """Assign offsets aiming at the lower bound: decomposition, greedy portfolio, then bounded exact search.

    ``exact_budget_s`` is a nominal budget for the exact search, turned into a node count with
    :data:`NODES_PER_SECOND` (so results never depend on the machine); ``exact_nodes`` sets the node count
    directly. Components with more than ``exact_max_buffers`` buffers get the greedy portfolio only.
    """
    _validate(buffers)
    budget = exact_nodes if exact_nodes is not None else int(exact_budget_s * NODES_PER_SECOND)
    arr = _Arrays(buffers)
    n = len(buffers)
    lb = lower_bound(buffers)
    off = [-1] * n
    for i in range(n):
        if arr.size[i] == 0:
            off[i] = arr.fixed[i] if arr.fixed[i] >= 0 else 0
    positive = [i for i in range(n) if arr.size[i] > 0]
    pieces = _decompose(arr, positive, off)
    results: list[tuple[int, list[int], str]] = []
    for piece in pieces:
        adj = _overlaps(piece.items, arr.first, arr.last)
        results.append(_portfolio(arr, piece, adj))
    stacked_top = max((off[i] + arr.size[i] for i in positive if off[i] >= 0), default=0)
    exact_components = 0
    nodes_used = 0
    attempted: set[int] = set()
    while True:
        worst = max(range(len(pieces)), key=lambda k: (results[k][0], -k), default=-1)
        if worst < 0 or results[worst][0] <= max(lb, stacked_top) or worst in attempted:
            break
        attempted.add(worst)
        piece = pieces[worst]
        if piece.has_fixed or len(piece.items) > exact_max_buffers or nodes_used >= budget:
            break
        found, used = _exact(arr, piece, max(lb, stacked_top), budget - nodes_used)
        nodes_used += used
        if found is None:
            break
        exact_components += 1
        results[worst] = (max(o + arr.size[i] for o, i in zip(found, piece.items, strict=True)), found, "exact")
    for piece, (_, offsets, _) in zip(pieces, results, strict=True):
        for i, o in zip(piece.items, offsets, strict=True):
            off[i] = o
    arena = max((off[i] + arr.size[i] for i in range(n)), default=0)
    strategies = tuple(r[2] for r in results)
    if not strategies:
        strategy = "stack" if positive else "empty"
    elif "exact" in strategies:
        strategy = "portfolio+exact"
    else:
        strategy = "portfolio"
    return Placement(
        offsets={arr.ids[i]: off[i] for i in range(n)},
        arena=arena,
        lower_bound=lb,
        strategy=strategy,
        components=len(pieces),
        exact_components=exact_components,
        exact_nodes=nodes_used,
        component_strategies=strategies,
    )


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
