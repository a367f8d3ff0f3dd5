"""The planner's optional native inner loops (compiler/memory/_native.c) against their pure-Python twins.

Both must give the same plans byte for byte; without the extension the pure-Python loops run and are correct.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Generator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rulepass.compiler.memory import planner
from rulepass.compiler.memory.planner import Buffer, check_placement, lower_bound, plan

native = pytest.mark.skipif(planner._NATIVE is None, reason="the native extension is not built here")


def _random_instance(rng: random.Random, n: int, fixed: bool) -> list[Buffer]:
    out = []
    horizon = rng.choice([10, 40, 200])
    for i in range(n):
        first = rng.randrange(horizon)
        last = first + rng.choice([0, 1, 2, 5, 20, horizon])
        size = rng.choice([0, 1, 3, 8, 16, 24, 40, 64, 100, 1000, 4096])
        alignment = rng.choice([1, 1, 1, 2, 8, 16])
        offset = 1_600_000 * (i + 1) if fixed and rng.randrange(12) == 0 else None
        out.append(Buffer(f"b{i}", first, last, size, alignment, offset))
    return out


def _instances(count: int) -> Iterator[list[Buffer]]:
    rng = random.Random(37)
    for k in range(count):
        yield _random_instance(rng, rng.randrange(1, 120), fixed=k % 3 == 0)


@pytest.fixture
def without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "_NATIVE", None)


@native
def test_native_loops_match_the_python_ones_on_random_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "_worth_native", lambda arr, items: arr.native)  # whatever the share
    monkeypatch.setattr(planner, "DENSE_SCAN_RATIO", 0)  # lists here; the dense scan is checked below
    for bufs in _instances(300):
        arr = planner._Arrays(bufs)
        assert arr.native
        items = [i for i in range(len(bufs)) if arr.size[i] > 0]
        fast = planner._neighbours(arr, items)
        slow = planner._overlaps(items, arr.first, arr.last)
        assert isinstance(fast, planner._CSR)
        assert all(sorted(fast.of(i)) == list(slow.of(i)) for i in items)
        assert fast.pairs() == slow.pairs() == 2 * planner._count_pairs(items, arr.first, arr.last)
        dense = planner._Dense(array("q", items), planner._degrees(items, arr.first, arr.last))
        assert all(dense.degree(i) == slow.degree(i) for i in items) and dense.pairs() == slow.pairs()
        movable = [i for i in items if arr.fixed[i] < 0]
        for best_fit in (False, True):
            for limit in (None, lower_bound(bufs)):
                order = sorted(movable, key=lambda i: (-arr.size[i] * (arr.last[i] - arr.first[i] + 1), i))
                static = [(5, 17), (40, 41)] if best_fit else None
                a, b, c = list(arr.fixed), list(arr.fixed), list(arr.fixed)
                ha = planner._place(order, arr, fast, a, 3, best_fit, limit, static)
                hb = planner._place_py(order, arr, slow, b, (3, -1 if limit is None else limit), best_fit, static)
                assert (ha, a) == (hb, b)
                if not static:
                    assert (planner._place(order, arr, dense, c, 3, best_fit, limit), c) == (hb, b)
        if len(movable) == len(items):
            for key in planner._sweep_keys(arr).values():
                order = sorted(items, key=key)
                for best_fit in (False, True):
                    a, b = [-1] * len(bufs), [-1] * len(bufs)
                    ha = planner._sweep(order, arr, a, 5, best_fit)
                    hb = planner._sweep_py(order, arr, b, 5, best_fit)
                    assert (ha, a) == (hb, b)
            _check_split_twins(bufs, arr, items)


def _check_split_twins(bufs: list[Buffer], arr: planner._Arrays, items: list[int]) -> None:
    """The lifetime split's native short-lived phase gives the Python one's offsets, valid ones, at every cut."""
    for threshold in (0, 1, 2, 6, 30):
        for best_fit in (False, True):
            a, b = [-1] * len(bufs), [-1] * len(bufs)
            ha = planner._split_sweep(arr, items, threshold, a, 5, best_fit)
            arr.native = False
            hb = planner._split_sweep(arr, items, threshold, b, 5, best_fit)
            arr.native = True
            assert (ha, a) == (hb, b)
            offsets = {arr.ids[i]: b[i] for i in items}
            assert check_placement([bufs[i] for i in items], offsets) == []
            assert ha == max((b[i] + arr.size[i] for i in items), default=5)


@native
def test_native_and_python_plans_are_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = list(_instances(120))
    monkeypatch.setattr(planner, "_worth_native", lambda arr, items: arr.native)  # whatever the share
    with_native = [plan(bufs, exact_work=100_000) for bufs in cases]
    monkeypatch.setattr(planner, "DENSE_SCAN_RATIO", 0)  # neighbour lists everywhere
    assert [plan(bufs, exact_work=100_000) for bufs in cases] == with_native
    monkeypatch.setattr(planner, "_NATIVE", None)
    assert [plan(bufs, exact_work=100_000) for bufs in cases] == with_native


@pytest.mark.usefixtures("without_native")
def test_python_fallback_is_used_and_valid_without_the_extension() -> None:
    for bufs in _instances(60):
        arr = planner._Arrays(bufs)
        assert not arr.native
        p = plan(bufs, exact_work=50_000)
        assert check_placement(bufs, p.offsets) == []
        assert p.arena >= p.lower_bound == lower_bound(bufs)


def test_values_beyond_int64_use_the_python_loops() -> None:
    bufs = [Buffer("a", 0, 3, 1 << 70), Buffer("b", 2, 5, 1 << 69), Buffer("c", 4, 6, 3)]
    assert not planner._Arrays(bufs).native
    p = plan(bufs)
    assert check_placement(bufs, p.offsets) == [] and p.arena == p.lower_bound


def test_order_keys_beyond_int64_keep_the_exact_search_in_python() -> None:
    """Widths x sizes (the A order key) can pass int64 while every offset fits: then the search runs in Python."""
    bufs = [Buffer(f"b{i}", i, (1 << 40) + i, (1 << 22) * (1 + i % 3)) for i in range(6)]
    bufs += [Buffer("late", (1 << 40) + 3, (1 << 40) + 9, 1 << 22)]
    arr = planner._Arrays(bufs)
    frame = planner._Frame(arr, planner._decompose(arr, list(range(len(bufs))), [-1] * len(bufs))[0])
    assert max(frame.area) >= 1 << 62 and not frame.fits_int64(lower_bound(bufs))
    p = plan(bufs)
    assert check_placement(bufs, p.offsets) == [] and p.arena == p.lower_bound


def _python_exact_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the exact search run in Python (the other native loops stay)."""
    monkeypatch.setattr(planner._Frame, "fits_int64", lambda self, capacity: False)


def _packing_instance(rng: random.Random) -> list[Buffer]:
    """A small dense instance with tight section totals, where the exact search has work to do."""
    horizon = rng.randrange(4, 30)
    out = []
    for i in range(rng.randrange(6, 40)):
        first = rng.randrange(horizon)
        last = min(horizon, first + rng.randrange(1, 12))
        size = rng.choice([1, 2, 3, 4, 5, 7, 8, 12, 16]) * rng.choice([1, 1, 16])
        out.append(Buffer(f"b{i}", first, last, size, rng.choice([1, 1, 1, 2, 4])))
    return out


def _packing_pieces(seed: int, count: int) -> Iterator[tuple[int, planner._Arrays, planner._Piece, int]]:
    """The exact search's pieces of ``count`` packing instances: (instance number, arrays, piece, its lower bound)."""
    rng = random.Random(seed)
    for n in range(count):
        bufs = _packing_instance(rng)
        arr = planner._Arrays(bufs)
        items = [i for i in range(len(bufs)) if arr.size[i] > 0]
        for piece in planner._decompose(arr, items, [-1] * len(bufs)):
            lb = max(planner._peak((arr.first[i], arr.last[i], arr.size[i]) for i in piece.items), 1) + piece.base
            yield n, arr, piece, lb


@native
def test_native_exact_search_explores_like_the_python_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same outcome, nodes and work of every search, whether it finishes or a budget cuts it."""
    runs = 0
    for _, arr, piece, lb in _packing_pieces(5, 150):
        for capacity in (lb - 1, lb, lb + 3, lb + lb // 8):
            for budget, quantum in ((100_000, 500_000), (400, 60), (3_000, 500)):
                frame = planner._Frame(arr, piece)
                fast = planner._exact(frame, capacity, budget, quantum)
                assert planner._Search(frame, capacity, "TWA").native
                with monkeypatch.context() as m:
                    _python_exact_steps(m)
                    slow = planner._exact(planner._Frame(arr, piece), capacity, budget, quantum)
                assert fast == slow
                runs += fast.nodes > 1
    assert runs > 200  # the searches did branch


def _trace(frame: planner._Frame, capacity: int, heuristic: str, quantum: int) -> list[tuple[int, ...]]:
    """(nodes, work) at every pause of one search run ``quantum`` units at a time, then its outcome."""
    search = planner._Search(frame, capacity, heuristic)
    run = search.solve()
    trace: list[tuple[int, ...]] = []
    try:
        while len(trace) < 3_000:
            search.pause_at = search.work + quantum
            next(run)
            trace.append((search.nodes, search.work))
    except StopIteration as stop:
        found = stop.value == planner._FOUND
        trace.append((stop.value, search.nodes, search.work, *(search.solution if found else ())))
    finally:
        run.close()
    return trace


@native
def test_native_exact_search_pauses_like_the_python_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each search on its own, paused every unit or every few: same counts at every pause, same outcome; the
    instances include splits into independent partitions at emptied cuts."""
    subsolves: list[int] = []
    define = planner._Search._subsolve

    def counted(self: planner._Search, items: list[int], lo: int, hi: int) -> Generator[None, None, int]:
        subsolves.append(len(items))
        return define(self, items, lo, hi)

    splits = found = 0
    for n, arr, piece, lb in _packing_pieces(23, 80):
        heuristic = ("TWA", "TAW", "WAT", "ZTW", "A", "")[n % 6]
        for capacity, quantum in ((lb, 1), (lb + 2, 7), (lb - 1, 150), (lb + lb // 16, 1)):
            frame = planner._Frame(arr, piece)
            assert planner._Search(frame, capacity, heuristic).native
            fast = _trace(frame, capacity, heuristic, quantum)
            with monkeypatch.context() as m:
                _python_exact_steps(m)
                m.setattr(planner._Search, "_subsolve", counted)
                subsolves.clear()
                assert _trace(planner._Frame(arr, piece), capacity, heuristic, quantum) == fast
            splits += len(subsolves) > 1
            found += fast[-1][0] == planner._FOUND
    assert splits > 30 and found > 100


@native
def test_native_exact_search_checks_its_arrays_and_frees_when_closed() -> None:
    bufs = [Buffer("a", 0, 3, 8), Buffer("b", 2, 5, 8), Buffer("c", 4, 6, 8), Buffer("d", 0, 6, 4)]
    arr = planner._Arrays(bufs)
    frame = planner._Frame(arr, planner._decompose(arr, [0, 1, 2, 3], [-1] * 4)[0])
    search = planner._Search(frame, 20, "TWA")
    start = (*frame.static64(), array("q", search.mo), array("q", search.wit))
    with pytest.raises(ValueError, match="heuristic"):
        planner._NATIVE.exact_search(start, 20, "TQ")
    with pytest.raises(ValueError, match="inconsistent"):
        planner._NATIVE.exact_search((*start[:-1], array("q", [99] * len(search.wit))), 20, "TWA")
    with pytest.raises(TypeError):
        planner._NATIVE.exact_search(start[:-1], 20, "TWA")
    run = planner._NATIVE.exact_search(start, 20, "TWA")
    assert planner._NATIVE.exact_resume(run, 0)[0] == planner._PAUSED
    del run  # a paused search: the capsule frees it
    run = planner._NATIVE.exact_search(start, 20, "TWA")
    done = planner._NATIVE.exact_resume(run, 1 << 40)
    assert done[0] == planner._FOUND and planner._NATIVE.exact_resume(run, 1 << 40) == done
    assert frame.items == [0, 1, 2] and frame.base == 4  # d, live throughout, lies below the piece
    offsets = {bufs[i].id: o for i, o in zip(frame.items, done[3], strict=True)}
    assert check_placement(bufs, {**offsets, "d": 0}) == [] and max(done[3]) + 8 <= 20


@native
def test_native_exact_steps_give_the_same_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole plans, with budgets that cut the exact search anywhere, on random and test-data instances."""
    rng = random.Random(11)
    cases = [_packing_instance(rng) for _ in range(60)]
    data = sorted((Path(__file__).parent.parent / "data" / "memplan").glob("*.csv"))
    cases += [planner.read_csv(path) for path in data]
    budgets = (2_000, 30_000, 250_000)
    fast = [plan(bufs, exact_work=w) for bufs in cases for w in budgets]
    _python_exact_steps(monkeypatch)
    assert [plan(bufs, exact_work=w) for bufs in cases for w in budgets] == fast
    assert sum(p.exact_work > 0 for p in fast) > 40


@native
@pytest.mark.slow
def test_native_exact_steps_give_the_same_plans_at_the_default_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test-data instance with the exact search's whole default share (most of them finish it)."""
    cases = [planner.read_csv(p) for p in sorted((Path(__file__).parent.parent / "data" / "memplan").glob("*.csv"))]
    fast = [plan(bufs) for bufs in cases]
    _python_exact_steps(monkeypatch)
    assert [plan(bufs) for bufs in cases] == fast


def _long_instance(rng: random.Random, n: int) -> list[Buffer]:
    """Many buffers live at once (hundreds of gaps: deep sweep trees), mixed sizes and alignments."""
    out = []
    for i in range(n):
        first = rng.randrange(n // 4)
        last = first + rng.choice([0, 1, 3, 10, 60, n // 8])
        size = rng.choice([1, 3, 8, 64, 100, 512, 4096, 5000]) * rng.choice([1, 1, 7])
        out.append(Buffer(f"b{i}", first, last, size, rng.choice([1, 1, 1, 2, 8, 64])))
    return out


@native
def test_native_sweep_matches_the_python_one_with_many_gaps() -> None:
    rng = random.Random(11)
    for n in (400, 3000, 16000):  # up to ~400 gaps at once: best fit's blocks of 64 split and empty
        bufs = _long_instance(rng, n)
        arr = planner._Arrays(bufs)
        items = [i for i in range(n) if arr.size[i] > 0]
        for name in planner._SWEEP_COLUMNS if n < 10000 else ["start"]:
            order = planner._sweep_order(arr, items, name)
            assert list(order) == sorted(items, key=planner._sweep_keys(arr)[name])
            for best_fit in (False, True):
                a, b = [-1] * n, [-1] * n
                assert (planner._sweep(order, arr, a, 3, best_fit), a) == (
                    planner._sweep_py(order, arr, b, 3, best_fit),
                    b,
                )


@native
def test_native_groups_and_orders_match_the_python_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    for bufs in _instances(200):
        arr = planner._Arrays(bufs)
        items = [i for i in range(len(bufs)) if arr.size[i] > 0]
        rng.shuffle(items)  # any order in, ascending out
        with monkeypatch.context() as m:
            m.setattr(planner, "_worth_native", lambda arr, items: False)
            slow = planner._groups(arr, items)
            slow_orders = {name: list(planner._sweep_order(arr, items, name)) for name in planner._SWEEP_COLUMNS}
        with monkeypatch.context() as m:
            m.setattr(planner, "_worth_native", lambda arr, items: arr.native)
            assert planner._groups(arr, items) == slow
            assert {
                name: list(planner._sweep_order(arr, items, name)) for name in planner._SWEEP_COLUMNS
            } == slow_orders
        assert sorted(i for group, _ in slow for i in group) == sorted(items)


def test_pair_counts_are_remembered_for_equal_lists_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "PAIRS_MEMO_ITEMS", 2)
    bufs = [Buffer("a", 0, 3, 1), Buffer("b", 2, 5, 1), Buffer("c", 4, 6, 1), Buffer("d", 0, 6, 1)]
    arr = planner._Arrays(bufs)
    items = [0, 1, 2, 3]
    assert planner._pairs(arr, items) == 5
    items.pop()  # a changed list is counted again
    assert planner._pairs(arr, items) == 2
    assert planner._pairs(arr, [0, 1, 2, 3]) == 5 and planner._pairs(arr, [0, 1]) == 1


@native
def test_native_arrays_and_offsets_match_the_python_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    for bufs in [*_instances(60), [Buffer("a", 0, 3, 1 << 61), Buffer("b", -2, 5, 1 << 61, 4)]]:
        arr = planner._Arrays(bufs)
        assert arr.bounds == (
            min(arr.size),
            min(arr.align),
            min(b - a for a, b in zip(arr.first, arr.last, strict=True)),
        )
        assert arr.native == planner._fits_int64(arr)
        if arr.native:
            assert (arr.first64.tolist(), arr.last64.tolist(), arr.size64.tolist(), arr.align64.tolist()) == (
                arr.first, arr.last, arr.size, arr.align
            )  # fmt: skip
        off = [7 * i for i in range(len(bufs))]
        fast = planner._offsets_dict(arr, off)
        assert list(fast.items()) == list(zip(arr.ids, off, strict=True))
    with_huge = planner._Arrays([Buffer("a", 0, 3, 1 << 70)])
    assert with_huge.bounds is None and not with_huge.native


def _scan_window(
    arr: planner._Arrays, items: list[int], off: list[int], height: int, reach: int
) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """A repair window as the repair defined it by scanning the whole piece: (movers, partial, merged spans)."""
    first, last, size = arr.first, arr.last, arr.size
    by_start = sorted(items, key=lambda i: (first[i], i))
    starts = [first[i] for i in by_start]
    top_items: list[int] = []
    for i in by_start:
        if off[i] + size[i] >= height:
            if top_items and first[i] > max(last[j] for j in top_items):
                break
            top_items.append(i)
    a = starts.index(first[top_items[0]])
    z = len(starts) - 1 - starts[::-1].index(first[top_items[-1]])
    lo = starts[max(0, a - reach)]
    hi = max(max(last[i] for i in top_items), starts[min(len(starts) - 1, z + reach)])
    movers, partial, spans = [], [], []
    for i in by_start:
        if last[i] < lo or first[i] > hi:
            continue
        if first[i] >= lo and last[i] <= hi:
            movers.append(i)
        elif first[i] <= lo and last[i] >= hi:
            spans.append((off[i], off[i] + size[i]))
        else:
            partial.append(i)
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return movers, partial, merged


@pytest.mark.parametrize("native_loops", [False, True])
def test_repair_windows_match_a_scan_of_the_piece(monkeypatch: pytest.MonkeyPatch, native_loops: bool) -> None:
    """The start order's trees find the windows a scan finds, also after some buffers moved."""
    if native_loops and planner._NATIVE is None:
        pytest.skip("the native extension is not built here")
    if not native_loops:
        monkeypatch.setattr(planner, "_NATIVE", None)
    rng = random.Random(23)
    for _ in range(150):
        bufs = [b for b in _random_instance(rng, rng.randrange(1, 150), fixed=False) if b.size]
        if not bufs:
            continue
        arr = planner._Arrays(bufs)
        items = list(range(len(bufs)))
        off = [rng.randrange(0, 5000) for _ in items]
        order = planner._StartOrder(arr, items, off)
        for _ in range(6):
            height = max(off[i] + arr.size[i] for i in items)
            assert order.height() == height
            reach = rng.choice([0, 1, 2, 5, 32, 200])
            window = order.window(height, reach)
            assert (window.movers, window.partial, window.spans) == _scan_window(arr, items, off, height, reach)
            assert [order.by_start[p] for p in window.positions] == window.movers
            moved = rng.sample(window.positions, min(len(window.positions), 3))
            for p in moved:
                off[order.by_start[p]] = rng.randrange(0, 6000)
            order.moved(moved)


def test_max_tree_searches_match_a_scan() -> None:
    rng = random.Random(3)
    for _ in range(200):
        values = [rng.randrange(50) for _ in range(rng.randrange(1, 70))]
        tree = planner._MaxTree.build(list(values), -1)
        for _ in range(20):
            p, value = rng.randrange(len(values) + 2), rng.randrange(55)
            after = [q for q in range(p, len(values)) if values[q] >= value]
            assert tree.next_at_least(p, value) == (after[0] if after else -1)
            end = rng.randrange(len(values) + 2)
            assert tree.at_least(end, value) == [q for q in range(min(end, len(values))) if values[q] >= value]
            q = rng.randrange(len(values))
            values[q] = rng.randrange(50)
            tree.set(q, values[q])
            assert tree.top() == max(values)


@native
def test_native_place_merges_unsorted_static_ranges() -> None:
    rng = random.Random(8)
    for bufs in _instances(60):
        arr = planner._Arrays(bufs)
        items = [i for i in range(len(bufs)) if arr.size[i] > 0 and arr.fixed[i] < 0]
        static = sorted({(s, s + rng.randrange(1, 40)) for s in rng.sample(range(0, 400, 7), 8)}, key=lambda r: -r[0])
        fast = planner._CSR(*planner._NATIVE.overlaps(array("q", items), arr.first64, arr.last64, len(bufs)))
        slow = planner._overlaps(items, arr.first, arr.last)
        for best_fit in (False, True):
            a, b = [-1] * len(bufs), [-1] * len(bufs)
            ha = planner._place(items, arr, fast, a, 0, best_fit, None, static)
            hb = planner._place_py(items, arr, slow, b, (0, -1), best_fit, static)
            assert (ha, a) == (hb, b)


def test_sub_arrays_are_the_arrays_of_the_sub_input() -> None:
    """A repair window's arrays hold every field the planner's arrays hold, as if made from its buffers alone
    (a field added to _Arrays must be added to _sub_arrays too)."""
    rng = random.Random(4)
    for bufs in _instances(30):
        arr = planner._Arrays([replace(b, offset=None) for b in bufs])
        group = rng.sample(range(len(bufs)), rng.randrange(len(bufs) + 1))
        alone = planner._Arrays([replace(bufs[i], offset=None) for i in group])
        assert vars(planner._sub_arrays(arr, group)) == vars(alone)


@native
def test_orders_sorted_natively_are_the_keys_orders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every greedy order from the native radix sort over key columns equals ``sorted`` by its key, over neighbour
    lists and the dense scan alike, with fixed buffers left out of the sort but in the live totals; a key beyond
    int64 falls back to ``sorted``."""
    monkeypatch.setattr(planner, "NATIVE_SORT_ITEMS", 0)
    assert set(planner._ORDER_COLUMNS) == set(planner._order_keys(planner._Arrays([]), [], len))
    for bufs in _instances(200):
        arr = planner._Arrays(bufs)
        items = [i for i in range(len(bufs)) if arr.size[i] > 0]
        movable = [i for i in items if arr.fixed[i] < 0]
        for dense_ok in (False, True):
            adj = planner._neighbours(arr, items, dense_ok=dense_ok)
            keys = planner._order_keys(arr, items, adj.degree)
            orders = planner._Orders(arr, movable, keys, adj, items)
            assert orders.native == arr.native
            for name in planner._ORDER_COLUMNS:
                assert list(orders[name]) == sorted(movable, key=keys[name]), name
    bufs = [Buffer("a", 0, 1 << 40, 1 << 30), Buffer("b", 1, 3, 5), Buffer("c", 2, 9, 7)]
    arr = planner._Arrays(bufs)
    assert arr.native  # every offset fits: only the area key (size x lifetime) does not
    adj = planner._neighbours(arr, [0, 1, 2])
    orders = planner._Orders(arr, [0, 1, 2], planner._order_keys(arr, [0, 1, 2], adj.degree), adj)
    assert orders["area"] == [0, 2, 1]


def _quick_instance(rng: random.Random) -> list[Buffer]:
    """A small input without fixed offsets, with zero sizes, alignments and many ties (sizes, steps, areas)."""
    n = rng.randrange(2, 60)
    horizon = rng.choice([3, 8, 30])
    sizes = rng.choice([[0, 4, 8, 16], [1, 2, 3, 5, 8, 13], [0, 64, 96, 100, 160, 1000]])
    out = []
    for i in range(n):
        first = rng.randrange(horizon)
        last = first + rng.choice([0, 0, 1, 2, 4, horizon])
        out.append(Buffer(f"q{i}", first, last, rng.choice(sizes), rng.choice([1, 1, 1, 2, 4, 16])))
    return out


def _quick_outcome(
    monkeypatch: pytest.MonkeyPatch, bufs: list[Buffer], units: int, fused: bool, scan: int = 16
) -> tuple[object, ...]:
    """_quick's plan (or None), what it charged and the lists it hands the portfolio (their items and kind), by the
    fused native call or by the orders one by one."""
    with monkeypatch.context() as m:
        m.setattr(planner, "QUICK_NATIVE_BUFFERS", 1 << 30 if fused else -1)
        m.setattr(planner, "QUICK_SCAN_RATIO", scan)
        arr = planner._Arrays(bufs)
        off = [-1 if s else 0 for s in arr.size]
        positive = [i for i, s in enumerate(arr.size) if s]
        budget = planner._Budget(units)
        found, shared = planner._quick(arr, positive, off, planner._lower_bound(arr), budget)
    lists = None if shared is None else (list(shared.items), type(shared.adj).__name__)
    return (None if found is None else vars(found)), budget.spent, budget.left, budget.refused, lists


@native
def test_native_quick_try_matches_the_orders_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """_native.quick (one call: the size, area and conflict x size orders, first fit up to the lower bound) gives
    _quick's plans and charges as its orders run one by one (natively or in Python), by neighbour lists and by
    the scan, with budgets that cut the orders short; each order wins somewhere, and none elsewhere."""
    assert planner._QUICK_RUNS == ("size", "area", "conflict-size")  # the native entry's orders, in this order
    rng = random.Random(11)
    winners: dict[object, int] = {}
    for k in range(300):
        bufs = _quick_instance(rng)
        arr = planner._Arrays(bufs)
        positive = [i for i, s in enumerate(arr.size) if s]
        cost = 2 * planner._pairs(arr, positive) + len(positive)
        units = [10**9, 2 * cost, 2 * cost + 1, 3 * cost - 1, 3 * cost][k % 5]
        slow = _quick_outcome(monkeypatch, bufs, units, fused=False)
        for scan in (0, 16, 1 << 20):  # lists, the default, always the scan
            assert _quick_outcome(monkeypatch, bufs, units, fused=True, scan=scan) == slow
        if units == 10**9:
            with monkeypatch.context() as m:
                m.setattr(planner, "_NATIVE", None)
                python = _quick_outcome(monkeypatch, bufs, units, fused=False)
                assert python[:4] == slow[:4] and (python[4] is None) == (slow[4] is None)  # lists of their own kind
            plan_ = slow[0]
            key = None if plan_ is None else plan_["component_strategies"]  # type: ignore[index]
            winners[key] = winners.get(key, 0) + 1
    assert set(winners) == {None, *((f"greedy-{name}-first-fit",) for name in planner._QUICK_RUNS)}, winners


@native
def test_native_quick_try_keys_beyond_int64(monkeypatch: pytest.MonkeyPatch) -> None:
    """Areas (size x lifetime) and conflicts x sizes past int64 sort exactly, as Python's integers do."""
    rng = random.Random(3)
    for _ in range(40):
        bufs = [Buffer(f"h{i}", rng.randrange(4), 0, 0) for i in range(rng.randrange(2, 12))]
        bufs = [
            replace(b, last=b.first + rng.randrange(300), size=(1 << 58) + rng.randrange(3) if i < 2 else 1 + i % 3)
            for i, b in enumerate(bufs)
        ]
        assert planner._Arrays(bufs).native
        slow = _quick_outcome(monkeypatch, bufs, 10**9, fused=False)
        assert _quick_outcome(monkeypatch, bufs, 10**9, fused=True) == slow


@native
def test_native_quick_try_checks_its_arrays() -> None:
    q = planner._NATIVE.quick
    ok, last, size, align, off = (array("q", values) for values in ([0, 1], [1, 1], [4, 4], [1, 1], [-1, -1]))
    assert q(ok, ok, last, size, align, off, 8, False) == q(ok, ok, last, size, align, off, 8, True) == (0, [0, 4])
    assert q(ok, ok, last, size, align, off, 7, False) is q(ok, ok, last, size, align, off, 7, True) is None
    assert off.tolist() == [-1, -1]  # read only
    with pytest.raises(ValueError, match="different lengths"):
        q(ok, ok, array("q", [0]), ok, ok, ok, 8, False)
    with pytest.raises(IndexError, match="out of range"):
        q(array("q", [2]), ok, ok, ok, ok, ok, 8, False)


@native
def test_the_buffers_fields_are_read_in_one_native_pass() -> None:
    for bufs in _instances(20):
        got = planner._NATIVE.fields(bufs, planner._FIELDS)
        assert got == tuple([getattr(b, name) for b in bufs] for name in planner._FIELDS)
    with pytest.raises(AttributeError, match="no attribute 'id'"):
        planner._NATIVE.fields([Buffer("a", 0, 1, 4), object()], planner._FIELDS)
