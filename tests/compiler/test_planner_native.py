"""The planner's optional native inner loops (compiler/memory/_native.c) against their pure-Python twins.

Both must give the same plans byte for byte; without the extension the pure-Python loops run and are correct.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator
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


def _python_exact_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the exact search use its pure-Python steps (the other native loops stay)."""
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


@native
def test_native_exact_steps_explore_like_the_python_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same outcome, nodes and work of every search, whether it finishes or a budget cuts it."""
    rng = random.Random(5)
    runs = 0
    for _ in range(150):
        bufs = _packing_instance(rng)
        arr = planner._Arrays(bufs)
        items = [i for i in range(len(bufs)) if arr.size[i] > 0]
        for piece in planner._decompose(arr, items, [-1] * len(bufs)):
            lb = max(planner._peak((arr.first[i], arr.last[i], arr.size[i]) for i in piece.items), 1) + piece.base
            for capacity in (lb - 1, lb, lb + 3, lb + lb // 8):
                for budget, quantum in ((100_000, 500_000), (400, 60), (3_000, 500)):
                    frame = planner._Frame(arr, piece)
                    fast = planner._exact(frame, capacity, budget, quantum)
                    assert planner._Search(frame, capacity, "TWA").native is not None
                    with monkeypatch.context() as m:
                        _python_exact_steps(m)
                        slow = planner._exact(planner._Frame(arr, piece), capacity, budget, quantum)
                    assert fast == slow
                    runs += fast.nodes > 1
    assert runs > 200  # the searches did branch


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
