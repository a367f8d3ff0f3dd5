"""The scale benchmark's work count: calls are counted per stage, and their growth is read as the tables say."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import run as bench


def _calls(n: int) -> int:
    total = 0
    for i in range(n):
        total += abs(i)  # one builtin call each
    return total


def _meter(count_calls: bool) -> Any:
    meter = bench._StageMeter(count_calls)
    try:
        meter.start("many")
        _calls(5000)
        meter.start("few")
        _calls(10)
        meter.stop()
    finally:
        gc.callbacks.remove(meter._gc)
    return meter


def test_each_stage_counts_its_own_calls(capsys: pytest.CaptureFixture[str]) -> None:
    stages = _meter(True).stages
    assert 5000 < stages["many"]["calls"] < 5100  # the abs calls, _calls itself, and the meter's own few
    assert 10 < stages["few"]["calls"] < 100
    assert "calls" not in _meter(False).stages["many"]  # timed runs are not profiled
    capsys.readouterr()


def test_the_work_table_reads_growth_per_node_beside_time_and_the_machine() -> None:
    work = {
        "sizes": [1000, 10000],
        "runs": [
            {"workload": "llm", "size": 1000, "nodes": 100, "calls": {"load": 5000, "passes": 2000, "write": 3}},
            {"workload": "llm", "size": 10000, "nodes": 1000, "calls": {"load": 40000, "passes": 22000, "write": 3}},
            {"workload": "cnn", "size": 1000, "nodes": 90, "error": "exit code 1: MemoryError"},
        ],
    }
    scale = {
        "runs": [
            {"workload": "llm", "size": 1000, "nodes": 100, "stages": {"load": {"cpu": 0.01}}},
            {"workload": "llm", "size": 10000, "nodes": 1000, "stages": {"load": {"cpu": 0.13}}},
        ],
        "reference": [{"size": 1000, "walk": 0.2}, {"size": 10000, "walk": 0.3}],
    }
    text = bench.render_work(work, scale)
    assert "| llm 1k | 100 | 50 | 20 | 0.0 | **70** |" in text  # calls per node by stage, then in total
    # load 40 / 50 a node, passes 22 / 20, write (under a call a node) none, in all 62 / 70; CPU 130 / 100 µs a
    # node; the walk 0.3 / 0.2
    assert "| llm 10k vs 1k | 0.80 | 1.10 | — | **0.89** | 1.30 | 1.50 |" in text
    assert "Failed: cnn 1k: exit code 1: MemoryError" in text
    alone = bench.render_work(work)  # no timed run to compare with
    assert "| llm 10k vs 1k | 0.80 | 1.10 | — | **0.89** | — | — |" in alone
