"""The engine benchmark's bytecode count: exact, repeatable, and read as the table says."""

from __future__ import annotations

import sys
from typing import Any

from sections.common import count_bytecodes
from sections.engine import render_engine


def _loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def test_bytecodes_are_counted_exactly_and_the_trace_is_restored() -> None:
    before = sys.gettrace()
    ten, again, twenty = (count_bytecodes(lambda n=n: _loop(n)) for n in (10, 10, 20))
    assert ten == again > 0
    assert twenty - ten == 10 * ((twenty - ten) // 10) > 0  # the same instructions for each extra iteration
    assert sys.gettrace() is before


def _row(case: str, pm_ratio: float, ops: tuple[int, int] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"case": case, "nodes": 10, "fired": 1, "concats": 2, "engine_s": 1e-3, "hand_pm_s": 1e-3}
    row |= {"hand_s": 1e-3, "pm_ratio": pm_ratio, "ratio": pm_ratio, "explained_ratio": 1.3, "api_ratio": 1.4}
    if ops is not None:  # a run from before the medians' ratio was kept has none
        row["pm_ratio_median"] = pm_ratio + 0.05
    row["identical"] = True
    if ops is not None:
        row |= {"ops_engine": ops[0], "ops_hand_pm": ops[1]}
    return row


def test_the_table_shows_the_bytecode_ratio_where_it_was_counted() -> None:
    text = render_engine({"rows": [_row("a", 1.1, (1500, 1000)), _row("b", 1.3, (1200, 1000))]})
    assert "| a | 10 | 1/2 |" in text and "| 1.500 | yes |" in text and "| 1.200 | yes |" in text
    assert "geometric mean 1.342 (min 1.200, max 1.500)" in text
    assert "at most 1.2 on every graph (aim 1.0): **not met**" in text
    assert "| **1.10** | 1.15 |" in text and "| **1.30** | 1.35 |" in text  # the figure, then the medians' ratio
    old = render_engine({"rows": [_row("a", 1.1, None)]})  # a run on record from before the count
    assert "| — | yes |" in old and "Bytecodes executed" not in old
    assert "| **1.10** | — |" in old
