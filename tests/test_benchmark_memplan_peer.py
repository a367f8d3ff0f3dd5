"""The peer benchmark (benchmarks/memplan_peer.py) and its real-like traces (benchmarks/memplan_traces.py)."""

from __future__ import annotations

from pathlib import Path

import memplan_peer as peer
import memplan_traces as traces
import pytest
from rulepass.compiler.memory.planner import Buffer, _count_pairs, read_csv


def test_training_traces_are_seeded_and_hold_long_lived_overlapping_buffers() -> None:
    bufs = traces.training(2_000)
    assert bufs == traces.training(2_000)
    assert 1_500 <= len(bufs) <= 2_500
    pairs = _count_pairs(range(len(bufs)), [b.first for b in bufs], [b.last for b in bufs])
    assert pairs > 50 * len(bufs)  # activations live from forward to backward: they all meet at the turn
    lean = traces.training(2_000, keep=0.0)  # nothing saved for backward: few overlaps
    assert _count_pairs(range(len(lean)), [b.first for b in lean], [b.last for b in lean]) < pairs // 4


def test_traces_round_trip_through_the_csv_reader(tmp_path: Path) -> None:
    bufs = traces.training(300)
    assert read_csv(traces.write_csv(bufs, tmp_path / "t.csv")) == bufs


def test_a_compile_hands_its_planner_input_to_the_capture() -> None:
    bufs = traces.compiled("split", 200)
    assert bufs and all(isinstance(b, Buffer) and b.size % 512 == 0 for b in bufs)


def test_each_side_is_checked_by_the_project_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    bufs = [Buffer("a", 0, 3, 64), Buffer("b", 2, 5, 32), Buffer("c", 4, 6, 64)]
    monkeypatch.setattr(peer, "run_peer", lambda name, buffers: {b.id: 0 for b in buffers})  # an invalid "peer"
    res = peer.instance_rows("tiny", bufs, ["overlapping"], limit=60, budget=0.0)
    mine, other = res["runs"]
    assert (mine["valid"], other["valid"]) == (True, False)
    assert mine["arena"] == res["lower_bound"] == 96
    assert res["verdict"] == "no peer" and res["best_peer"] is None  # an invalid placement never counts
    assert "| overlapping | 64 |" in peer.markdown([res], None)


def test_a_corpus_model_hands_its_compile_trace_to_the_capture() -> None:
    assert "branches_tiny" in traces.corpus_models()
    bufs = traces.corpus("branches_tiny")
    assert bufs and all(b.size > 0 and b.last >= b.first for b in bufs)


def test_budget_rows_time_the_planner_at_each_budget() -> None:
    bufs = traces.training(300)
    rows = peer.budget_rows([("t", lambda: bufs)], [0.0, 0.01])
    (row,) = rows
    assert row["valid"] and [r["budget"] for r in row["runs"]] == [0.0, 0.01]
    assert all(r["ratio"] >= 1.0 and r["cpu_s"] >= 0 and r["wall_s"] > 0 for r in row["runs"])
    assert f"| t | {len(bufs):,} |" in peer.budget_markdown(rows, [0.0, 0.01])


def _broken(n: int) -> list[Buffer]:
    raise RuntimeError("no trace")


def test_generated_traces_are_made_in_a_child_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "training_300.csv"
    assert peer._cached(path, traces.training, 300) == traces.training(300)
    assert path.exists()
    with pytest.raises(RuntimeError, match=r"making broken\.csv failed"):
        peer._cached(tmp_path / "broken.csv", _broken, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["training_300.csv"]
